//! PID 1 of a machine: prepares the container to host a kubelet (mount propagation, cgroup
//! paths, machine ID), starts the image's enabled units, runs the user data, starts what the
//! user data enabled, reaps orphans, and on SIGTERM stops everything and removes the cgroups
//! the machine's kubelet created, so nothing of the machine outlives its pod.

use crate::systemctl;
use crate::units::{self, Layout, start_order};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::signal::unix::{SignalKind, signal};

/// What the machine boots from.
#[derive(Clone, Debug)]
pub struct Options {
    pub layout: Layout,
    /// The provisioning script (the Worker's user data), run with bash.
    pub user_data: PathBuf,
    /// The kubelet's `--cgroup-root`, removed from every hierarchy on shutdown.
    pub cgroup_root: Option<String>,
}

pub fn run(options: &Options) -> i32 {
    prepare();
    if let Some(root) = &options.cgroup_root {
        create_cgroups(Path::new("/sys/fs/cgroup"), root);
    }
    let mut started = BTreeSet::new();
    start_enabled(&options.layout, &mut started);
    if options.user_data.exists() {
        eprintln!("machine-init: running the user data {}", options.user_data.display());
        match std::process::Command::new("/bin/bash").arg(&options.user_data).status() {
            Ok(s) if s.success() => eprintln!("machine-init: user data done"),
            Ok(s) => eprintln!("machine-init: the user data failed: {s}"),
            Err(e) => eprintln!("machine-init: cannot run the user data: {e}"),
        }
    } else {
        eprintln!("machine-init: no user data at {}", options.user_data.display());
    }
    start_enabled(&options.layout, &mut started);
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("machine-init: cannot start a runtime: {e}");
            return 1;
        }
    };
    if let Err(e) = rt.block_on(reap_until_stopped()) {
        eprintln!("machine-init: {e}");
    }
    shutdown(options);
    0
}

/// Starts every enabled unit not started before at boot, in `After=` order (as systemd
/// reaching its default target: a oneshot unit that finished is not run again).
fn start_enabled(layout: &Layout, started: &mut BTreeSet<String>) {
    let mut deps = BTreeMap::new();
    for name in layout.enabled() {
        if started.contains(&name) || layout.running(&name).is_some() {
            continue;
        }
        match layout.load(&name) {
            Ok(s) => {
                deps.insert(name, s.after);
            }
            Err(e) => eprintln!("machine-init: not starting {name}: {e}"),
        }
    }
    for name in start_order(&deps) {
        started.insert(name.clone());
        match systemctl::start(layout, &name) {
            Ok(0) => {}
            Ok(code) => eprintln!("machine-init: {name} failed with exit code {code}"),
            Err(e) => eprintln!("machine-init: cannot start {name}: {e}"),
        }
    }
}

async fn reap_until_stopped() -> Result<(), units::Error> {
    let mut term = signal(SignalKind::terminate()).map_err(units::io("installing a SIGTERM handler"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(units::io("installing a SIGINT handler"))?;
    let mut child = signal(SignalKind::child()).map_err(units::io("installing a SIGCHLD handler"))?;
    reap();
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = child.recv() => reap(),
        }
    }
    eprintln!("machine-init: stopping the machine");
    Ok(())
}

/// Collects every ended child (orphans are ours as PID 1).
fn reap() {
    while let Ok(Some(_)) = rustix::process::waitpid(None, rustix::process::WaitOptions::NOHANG) {}
}

fn shutdown(options: &Options) {
    let layout = &options.layout;
    let running = layout.all_running();
    let deps: BTreeMap<String, Vec<String>> =
        running.keys().map(|n| (n.clone(), layout.load(n).map(|s| s.after).unwrap_or_default())).collect();
    for name in start_order(&deps).iter().rev() {
        systemctl::stop(layout, name);
        reap();
    }
    kill_all_others();
    if let Some(root) = &options.cgroup_root {
        remove_cgroups(Path::new("/sys/fs/cgroup"), root);
    }
    eprintln!("machine-init: stopped");
}

/// SIGKILLs every process in the machine's PID namespace but PID 1, and waits (10 s at most)
/// until they are gone.
fn kill_all_others() {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let others: Vec<i32> = std::fs::read_dir("/proc")
            .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
            .unwrap_or_default();
        let others: Vec<i32> = others.into_iter().filter(|p| *p != 1 && units::alive(*p)).collect();
        if others.is_empty() || Instant::now() > deadline {
            return;
        }
        for pid in others {
            if let Some(p) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
        reap();
    }
}

/// Creates `root` in every cgroup hierarchy under `base` (the kubelet insists that its
/// `--cgroup-root` exists).
pub fn create_cgroups(base: &Path, root: &str) {
    let root = root.trim_start_matches('/');
    let Ok(hierarchies) = std::fs::read_dir(base) else { return };
    for h in hierarchies.flatten() {
        let path = h.path();
        // Skip the symlinks (cpu -> cpu,cpuacct) and non-directories.
        if !h.file_type().is_ok_and(|t| t.is_dir()) || root.is_empty() {
            continue;
        }
        if let Err(e) = std::fs::create_dir_all(path.join(root)) {
            eprintln!("machine-init: cannot create the cgroup {}: {e}", path.join(root).display());
        }
    }
}

/// Removes `root` (relative to each hierarchy under `base`) and everything below it, deepest
/// first; a few attempts, as killed processes leave their cgroups with a delay.
pub fn remove_cgroups(base: &Path, root: &str) {
    let root = root.trim_start_matches('/');
    if root.is_empty() {
        return;
    }
    let Ok(hierarchies) = std::fs::read_dir(base) else { return };
    let dirs: Vec<PathBuf> = hierarchies.flatten().map(|h| h.path().join(root)).filter(|d| d.is_dir()).collect();
    for attempt in 0..20 {
        let mut left = 0;
        for d in &dirs {
            left += remove_tree(d);
        }
        if left == 0 {
            return;
        }
        if attempt == 19 {
            eprintln!("machine-init: {left} cgroup directories under {root} could not be removed");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// rmdir of a cgroup tree, children first; returns how many directories are left.
fn remove_tree(dir: &Path) -> usize {
    if !dir.is_dir() {
        return 0;
    }
    let mut left = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                left += remove_tree(&e.path());
            }
        }
    }
    if std::fs::remove_dir(dir).is_err() { left + 1 } else { left }
}

/// Makes the container a place a kubelet can run: shared mount propagation, cgroup paths that
/// resolve as `/proc/self/cgroup` names them, and a machine ID of its own.
fn prepare() {
    use rustix::mount::{MountPropagationFlags, mount_change};
    if let Err(e) = mount_change("/", MountPropagationFlags::SHARED | MountPropagationFlags::REC) {
        eprintln!("machine-init: cannot make / shared: {e}");
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for (mount_point, root) in cgroup_fixups(&mountinfo) {
        let target = format!("{mount_point}{root}");
        if let Err(e) = std::fs::create_dir_all(&target)
            .map_err(|e| e.to_string())
            .and_then(|_| rustix::mount::mount_bind(mount_point.as_str(), target.as_str()).map_err(|e| e.to_string()))
        {
            eprintln!("machine-init: cannot bind {mount_point} to {target}: {e}");
        }
    }
    let id_path = Path::new("/etc/machine-id");
    if std::fs::read_to_string(id_path).map(|s| s.trim().is_empty()).unwrap_or(true) {
        let id = std::fs::read_to_string("/proc/sys/kernel/random/uuid").unwrap_or_default().trim().replace('-', "");
        if let Err(e) = std::fs::write(id_path, format!("{id}\n")) {
            eprintln!("machine-init: cannot write /etc/machine-id: {e}");
        }
    }
}

/// The cgroup hierarchies mounted from a non-root directory (a container's own cgroup), as
/// `(mount point, root)`. Binding each mount point onto `mount point + root` makes the paths
/// in `/proc/self/cgroup` resolve inside the container, as kind's node entrypoint does.
pub fn cgroup_fixups(mountinfo: &str) -> Vec<(String, String)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            if right.split_whitespace().next()? != "cgroup" {
                return None;
            }
            let fields: Vec<&str> = left.split_whitespace().collect();
            let (root, mount_point) = (*fields.get(3)?, *fields.get(4)?);
            (root != "/" && mount_point.starts_with("/sys/fs/cgroup/")).then(|| (mount_point.into(), root.into()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report
    use super::*;

    #[test]
    fn container_cgroup_mounts_are_found() {
        let mountinfo = "\
100 90 0:30 / /sys/fs/cgroup rw - tmpfs tmpfs rw
101 100 0:31 /kubepods/besteffort/pod1/abc /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
102 100 0:32 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
103 90 0:33 /x /etc/hosts rw - ext4 /dev/vda rw
";
        assert_eq!(
            cgroup_fixups(mountinfo),
            vec![("/sys/fs/cgroup/cpu,cpuacct".to_string(), "/kubepods/besteffort/pod1/abc".to_string())]
        );
    }

    #[test]
    fn cgroup_trees_are_removed_deepest_first() {
        let base = std::env::temp_dir().join(format!("machine-init-cgroups-{}", std::process::id()));
        std::fs::create_dir_all(base.join("cpu/machine/kubepods/pod1")).unwrap();
        std::fs::create_dir_all(base.join("memory/machine/kubepods")).unwrap();
        std::fs::create_dir_all(base.join("memory/other")).unwrap();
        std::fs::create_dir_all(base.join("pids")).unwrap();
        create_cgroups(&base, "/machine");
        assert!(base.join("pids/machine").is_dir());
        remove_cgroups(&base, "/machine");
        assert!(!base.join("pids/machine").exists());
        assert!(!base.join("cpu/machine").exists());
        assert!(!base.join("memory/machine").exists());
        assert!(base.join("memory/other").exists());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
