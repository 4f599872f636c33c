//! The node's network on the host: the bridge with the node address, the sysctls forwarding
//! needs, the egress guard, and the removal of every iptables rule and chain that the cluster
//! (we, the kubelet, kube-proxy, the CNI plugins) added.

use super::snapshot::{self, IPTABLES, Snapshot, TABLES};
use crate::error::{Error, Result};
use crate::process::run;
use crate::settings::{BRIDGE, CNI_BRIDGE, NODE_IP, NODE_PREFIX};
use std::collections::BTreeSet;

/// The chain that refuses every forwarded packet that would leave through an interface that
/// is not the cluster's own.
pub const GUARD_CHAIN: &str = "LOCAL-CLUSTER-EGRESS";
/// Prefixes of chains the cluster's parts create.
const OUR_CHAIN_PREFIXES: &[&str] = &["KUBE-", "CNI-", "LOCAL-CLUSTER-"];

/// Creates the bridge holding the node address (idempotent).
pub fn ensure_bridge() -> Result<()> {
    if run("ip", &["link", "show", BRIDGE]).is_err() {
        run("ip", &["link", "add", BRIDGE, "type", "bridge"])?;
    }
    let cidr = format!("{NODE_IP}/{NODE_PREFIX}");
    let addrs = run("ip", &["-o", "addr", "show", "dev", BRIDGE])?;
    if !addrs.contains(&format!("inet {cidr}")) {
        run("ip", &["addr", "add", &cidr, "dev", BRIDGE])?;
    }
    run("ip", &["link", "set", BRIDGE, "up"])?;
    Ok(())
}

/// Sets a sysctl (the old value was recorded in the host snapshot).
pub fn set_sysctl(name: &str, value: &str) -> Result<()> {
    let path = snapshot::sysctl_path(name);
    std::fs::write(&path, value).map_err(Error::io("setting sysctl", path))
}

/// Installs the egress guard: a chain that lets forwarded packets out only to the pod bridge
/// and the node bridge and refuses (at once, with an ICMP error) everything else; jumped to
/// from the first rule of FORWARD. Called before any pod starts and again once kube-proxy and
/// the kubelet have put their own jumps in front of it.
pub fn ensure_egress_guard() -> Result<()> {
    let ipt = |args: &[&str]| run("iptables", &[&["-w"], args].concat());
    if ipt(&["-n", "-L", GUARD_CHAIN]).is_err() {
        ipt(&["-N", GUARD_CHAIN])?;
    }
    ipt(&["-F", GUARD_CHAIN])?;
    ipt(&["-A", GUARD_CHAIN, "-o", CNI_BRIDGE, "-j", "RETURN"])?;
    ipt(&["-A", GUARD_CHAIN, "-o", BRIDGE, "-j", "RETURN"])?;
    ipt(&["-A", GUARD_CHAIN, "-j", "REJECT", "--reject-with", "icmp-net-prohibited"])?;
    // Exactly one jump, in first position.
    let jump = ["FORWARD", "-m", "comment", "--comment", "local-cluster egress guard", "-j", GUARD_CHAIN];
    let first = run("iptables", &["-w", "-S", "FORWARD", "1"]).unwrap_or_default();
    if first.contains(GUARD_CHAIN) {
        return Ok(());
    }
    while ipt(&[&["-D"], &jump[..]].concat()).is_ok() {}
    ipt(&[&["-I"], &jump[..1], &["1"], &jump[1..]].concat())?;
    Ok(())
}

/// Whether the guard's jump is FORWARD's first rule.
pub fn egress_guard_first() -> bool {
    run("iptables", &["-w", "-S", "FORWARD", "1"]).map(|r| r.contains(GUARD_CHAIN)).unwrap_or(false)
}

/// The commands that remove what was added since `before` to one table: rules in built-in
/// chains that jump to or belong to our chains are deleted, then our chains that did not exist
/// before are flushed and deleted. Pure: takes `-S` outputs, returns argument lists.
pub fn iptables_cleanup(before: &[String], now: &[String]) -> Vec<Vec<String>> {
    let before: BTreeSet<&str> = before.iter().map(String::as_str).collect();
    let ours = |chain: &str| OUR_CHAIN_PREFIXES.iter().any(|p| chain.starts_with(p));
    let mut deletes = Vec::new();
    let mut chains = Vec::new();
    for rule in now.iter().filter(|r| !before.contains(r.as_str())) {
        let words: Vec<&str> = rule.split_whitespace().collect();
        match words.as_slice() {
            ["-N", chain] if ours(chain) => chains.push(chain.to_string()),
            ["-A", chain, rest @ ..] if !ours(chain) => {
                let target = rest.windows(2).find(|w| w[0] == "-j" || w[0] == "-g").map(|w| w[1]);
                if target.is_some_and(ours) {
                    let mut args = vec!["-D".to_string(), chain.to_string()];
                    args.extend(shell_words(&rest.join(" ")));
                    deletes.push(args);
                }
            }
            _ => {}
        }
    }
    let mut out = deletes;
    out.extend(chains.iter().map(|c| vec!["-F".to_string(), c.clone()]));
    out.extend(chains.iter().map(|c| vec!["-X".to_string(), c.clone()]));
    out
}

/// Splits `-S` output words, honouring the double quotes it puts around comments.
fn shell_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' if quoted => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Removes the cluster's iptables rules and chains from every table (IPv4 and IPv6) and the
/// nftables tables that appeared since `before`; returns what failed (best effort: teardown
/// goes on).
pub fn remove_iptables(before: &Snapshot) -> Vec<String> {
    let mut failures = Vec::new();
    let now = snapshot::capture_iptables();
    for bin in IPTABLES {
        for table in TABLES {
            let key = format!("{bin}/{table}");
            let Some(rules) = now.get(&key) else { continue };
            let old = before.iptables.get(&key).cloned().unwrap_or_default();
            for args in iptables_cleanup(&old, rules) {
                let mut full = vec!["-w", "-t", table];
                full.extend(args.iter().map(String::as_str));
                if let Err(e) = run(bin, &full) {
                    failures.push(e.to_string());
                }
            }
        }
    }
    // Tables that iptables-nft created for kube-proxy's and the kubelet's canary chains.
    for table in snapshot::nft_tables().difference(&before.nft_tables) {
        let words: Vec<&str> = table.split_whitespace().collect();
        if let ["table", family, name] = words.as_slice()
            && let Err(e) = run("nft", &["delete", "table", family, name])
        {
            failures.push(e.to_string());
        }
    }
    failures
}

/// Deletes the pod bridge's remaining veths, the pod bridge and the node bridge.
pub fn remove_links() -> Vec<String> {
    let mut failures = Vec::new();
    if let Ok(out) = run("ip", &["-o", "link", "show", "master", CNI_BRIDGE]) {
        for line in out.lines() {
            if let Some(name) = line.split(':').nth(1).map(|n| n.trim().split('@').next().unwrap_or("").to_string()) {
                let _ = run("ip", &["link", "del", &name]);
            }
        }
    }
    for link in [CNI_BRIDGE, BRIDGE] {
        if run("ip", &["link", "show", link]).is_ok()
            && let Err(e) = run("ip", &["link", "del", link])
        {
            failures.push(e.to_string());
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn cleanup_removes_only_what_was_added_and_is_ours() {
        let before = v(&["-P FORWARD ACCEPT", "-A FORWARD -o eth9 -j ACCEPT"]);
        let now = v(&[
            "-P FORWARD ACCEPT",
            "-N KUBE-FORWARD",
            "-N OTHER",
            "-A FORWARD -o eth9 -j ACCEPT",
            "-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD",
            "-A FORWARD -j OTHER",
            "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP",
        ]);
        let cmds = iptables_cleanup(&before, &now);
        assert_eq!(
            cmds,
            vec![
                v(&[
                    "-D",
                    "FORWARD",
                    "-m",
                    "comment",
                    "--comment",
                    "kubernetes forwarding rules",
                    "-j",
                    "KUBE-FORWARD"
                ]),
                v(&["-F", "KUBE-FORWARD"]),
                v(&["-X", "KUBE-FORWARD"]),
            ]
        );
        assert!(iptables_cleanup(&now, &now).is_empty());
    }
}
