//! A snapshot of the host state that the local cluster touches: sysctls, iptables rules of
//! every table (IPv4 and IPv6), nftables tables, network links and addresses, network
//! namespaces, mounts, cgroup directories, directories outside the state directory, and
//! processes of the cluster's binaries. `up` records it before its first change; `down`
//! restores from it; the teardown test compares a snapshot taken after `down` with one taken
//! before `up` ([`differences`], pure).

use crate::process;
use crate::settings::{OUTSIDE_DIRS, SYSCTLS};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub const IPTABLES: &[&str] = &["iptables", "ip6tables"];
pub const TABLES: &[&str] = &["filter", "nat", "mangle", "raw"];

/// Names of binaries whose processes belong to a local cluster.
pub const OUR_BINARIES: &[&str] = &[
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    "containerd",
    "containerd-shim-runc-v2",
    "local-cluster",
];

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// sysctl name → value (`None`: not present on this kernel).
    pub sysctls: BTreeMap<String, Option<String>>,
    /// "iptables/nat" → the rules as `-S` prints them (chain definitions and rules).
    pub iptables: BTreeMap<String, Vec<String>>,
    pub nft_tables: BTreeSet<String>,
    pub links: BTreeSet<String>,
    pub addresses: BTreeSet<String>,
    pub netns: BTreeSet<String>,
    pub mounts: BTreeSet<String>,
    /// `kubepods` cgroup directories.
    pub cgroups: BTreeSet<String>,
    /// Directory → existed.
    pub dirs: BTreeMap<String, bool>,
    /// Processes of [`OUR_BINARIES`], as "name pid".
    pub processes: BTreeSet<String>,
}

impl Snapshot {
    pub fn capture() -> Self {
        Self {
            sysctls: SYSCTLS.iter().map(|s| (s.to_string(), read_sysctl(s))).collect(),
            iptables: capture_iptables(),
            nft_tables: nft_tables(),
            links: process::run("ip", &["-o", "link", "show"])
                .map(|out| out.lines().filter_map(link_name).collect())
                .unwrap_or_default(),
            addresses: process::run("ip", &["-o", "addr", "show"])
                .map(|out| out.lines().filter_map(address).collect())
                .unwrap_or_default(),
            netns: std::fs::read_dir("/run/netns")
                .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
                .unwrap_or_default(),
            mounts: mount_points().into_iter().collect(),
            cgroups: kubepods_cgroups(),
            dirs: OUTSIDE_DIRS.iter().map(|d| (d.to_string(), std::path::Path::new(d).exists())).collect(),
            processes: our_processes(),
        }
    }
}

pub fn read_sysctl(name: &str) -> Option<String> {
    std::fs::read_to_string(sysctl_path(name)).ok().map(|v| v.trim().to_string())
}

pub fn sysctl_path(name: &str) -> String {
    format!("/proc/sys/{}", name.replace('.', "/"))
}

/// `nft list tables`, one "table <family> <name>" per entry.
pub fn nft_tables() -> BTreeSet<String> {
    process::run("nft", &["list", "tables"])
        .map(|out| out.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect())
        .unwrap_or_default()
}

/// Every iptables and ip6tables table as `-S` prints it, keyed "iptables/nat".
pub fn capture_iptables() -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for bin in IPTABLES {
        for table in TABLES {
            if let Ok(rules) = process::run(bin, &["-w", "-t", table, "-S"]) {
                out.insert(format!("{bin}/{table}"), rules.lines().map(str::to_string).collect());
            }
        }
    }
    out
}

/// "2: eth0@if3: <...>" → "eth0".
fn link_name(line: &str) -> Option<String> {
    let name = line.split(':').nth(1)?.trim();
    Some(name.split('@').next().unwrap_or(name).to_string())
}

/// "2: eth0    inet 10.0.0.2/24 brd ..." → "eth0 10.0.0.2/24".
fn address(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    let _index = words.next()?;
    let dev = words.next()?;
    let _family = words.next()?;
    Some(format!("{dev} {}", words.next()?))
}

/// Mount points from `/proc/self/mountinfo`, unescaped.
pub fn mount_points() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines().filter_map(|l| l.split(' ').nth(4)).map(unescape_mount).collect()
}

fn unescape_mount(raw: &str) -> String {
    raw.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
}

/// `kubepods` directories in every cgroup v1 hierarchy (and the unified one).
pub fn kubepods_cgroups() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") {
        for h in hierarchies.flatten() {
            let dir = h.path().join("kubepods");
            if dir.is_dir() {
                out.insert(dir.display().to_string());
            }
        }
    }
    out
}

/// Processes whose executable is one of [`OUR_BINARIES`], except the calling process.
pub fn our_processes() -> BTreeSet<String> {
    let me = std::process::id().to_string();
    let mut out = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return out };
    for e in entries.flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == me {
            continue;
        }
        let Ok(exe) = std::fs::read_link(e.path().join("exe")) else { continue };
        let name = exe.file_name().map(|n| n.to_string_lossy().trim_end_matches(" (deleted)").to_string());
        if let Some(name) = name.filter(|n| OUR_BINARIES.contains(&n.as_str())) {
            out.insert(format!("{name} {pid}"));
        }
    }
    out
}

/// What differs between two snapshots, one line per difference ("iptables/nat: added -N KUBE-SERVICES").
pub fn differences(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (name, value) in &before.sysctls {
        let now = after.sysctls.get(name).cloned().flatten();
        if *value != now {
            out.push(format!("sysctl {name}: {value:?} before, {now:?} after"));
        }
    }
    let tables: BTreeSet<&String> = before.iptables.keys().chain(after.iptables.keys()).collect();
    for table in tables {
        let b: BTreeSet<&String> = before.iptables.get(table).map(|r| r.iter().collect()).unwrap_or_default();
        let a: BTreeSet<&String> = after.iptables.get(table).map(|r| r.iter().collect()).unwrap_or_default();
        out.extend(a.difference(&b).map(|r| format!("{table}: added {r}")));
        out.extend(b.difference(&a).map(|r| format!("{table}: removed {r}")));
    }
    set_diff(&mut out, "nft table", &before.nft_tables, &after.nft_tables);
    set_diff(&mut out, "link", &before.links, &after.links);
    set_diff(&mut out, "address", &before.addresses, &after.addresses);
    set_diff(&mut out, "netns", &before.netns, &after.netns);
    set_diff(&mut out, "mount", &before.mounts, &after.mounts);
    set_diff(&mut out, "cgroup", &before.cgroups, &after.cgroups);
    set_diff(&mut out, "process", &before.processes, &after.processes);
    for (dir, existed) in &before.dirs {
        let exists = after.dirs.get(dir).copied().unwrap_or(false);
        if *existed != exists {
            out.push(format!("directory {dir}: existed {existed} before, {exists} after"));
        }
    }
    out
}

fn set_diff(out: &mut Vec<String>, what: &str, before: &BTreeSet<String>, after: &BTreeSet<String>) {
    out.extend(after.difference(before).map(|x| format!("{what} added: {x}")));
    out.extend(before.difference(after).map(|x| format!("{what} removed: {x}")));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_links_and_addresses() {
        assert_eq!(link_name("5: veth1@if4: <BROADCAST> mtu 1500").as_deref(), Some("veth1"));
        assert_eq!(
            address("2: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0").as_deref(),
            Some("eth0 192.0.2.2/24")
        );
        assert_eq!(unescape_mount("/a\\040b"), "/a b");
    }

    #[test]
    fn differences_name_every_change_and_nothing_else() {
        let mut before = Snapshot::default();
        before.sysctls.insert("kernel.panic".into(), Some("0".into()));
        before.iptables.insert("iptables/filter".into(), vec!["-P FORWARD ACCEPT".into()]);
        before.dirs.insert("/var/log/pods".into(), false);
        assert!(differences(&before, &before.clone()).is_empty());

        let mut after = before.clone();
        after.sysctls.insert("kernel.panic".into(), Some("10".into()));
        after.iptables.get_mut("iptables/filter").expect("table").push("-N KUBE-FORWARD".into());
        after.links.insert("kbr0".into());
        after.dirs.insert("/var/log/pods".into(), true);
        let diff = differences(&before, &after);
        assert_eq!(diff.len(), 4, "{diff:?}");
        assert!(diff.iter().any(|d| d.contains("KUBE-FORWARD")));
        assert!(diff.iter().any(|d| d == "link added: kbr0"));
    }
}
