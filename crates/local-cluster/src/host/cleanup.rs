//! What the kubelet and containerd leave behind when they are stopped: mounts (pod volumes,
//! the kubelet's bind mount of its root, container root file systems, network namespaces),
//! `kubepods` cgroup directories, container shims, and directories outside the state
//! directory.

use super::snapshot::{self, Snapshot};
use crate::process;
use std::path::Path;
use std::time::Duration;

/// Unmounts every mount point under one of `roots`, deepest first (lazily, so a busy mount
/// does not stop the teardown).
pub fn unmount_under(roots: &[&Path]) -> Vec<String> {
    let mut points: Vec<String> =
        snapshot::mount_points().into_iter().filter(|m| roots.iter().any(|r| Path::new(m).starts_with(r))).collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
    points.dedup();
    let mut failures = Vec::new();
    for point in points {
        // A point can be mounted several times over; unmount until it is gone.
        for _ in 0..8 {
            if !snapshot::mount_points().contains(&point) {
                break;
            }
            if let Err(e) = rustix::mount::unmount(point.as_str(), rustix::mount::UnmountFlags::DETACH) {
                failures.push(format!("unmounting {point}: {e}"));
                break;
            }
        }
    }
    failures
}

/// Removes `kubepods` cgroup directories that did not exist before, depth first.
pub fn remove_cgroups(before: &Snapshot) -> Vec<String> {
    let mut failures = Vec::new();
    for dir in snapshot::kubepods_cgroups().difference(&before.cgroups) {
        let mut dirs = Vec::new();
        collect_dirs(Path::new(dir), &mut dirs);
        dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
        for d in dirs {
            if let Err(e) = std::fs::remove_dir(&d) {
                failures.push(format!("removing cgroup {d}: {e}"));
            }
        }
    }
    failures
}

fn collect_dirs(dir: &Path, out: &mut Vec<String>) {
    out.push(dir.display().to_string());
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                collect_dirs(&e.path(), out);
            }
        }
    }
}

/// Stops processes whose command line names `marker` (container shims of our containerd,
/// which run in their own sessions), by PID.
pub fn stop_processes_naming(marker: &str) -> usize {
    let mut stopped = 0;
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(pid) = name.parse::<i32>() else { continue };
        if pid == std::process::id() as i32 {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            process::terminate(pid, Duration::from_secs(5));
            stopped += 1;
        }
    }
    stopped
}

/// Removes the directories outside the state directory that did not exist before.
pub fn remove_outside_dirs(before: &Snapshot) -> Vec<String> {
    let mut failures = Vec::new();
    for (dir, existed) in &before.dirs {
        if !existed
            && Path::new(dir).exists()
            && let Err(e) = std::fs::remove_dir_all(dir)
        {
            failures.push(format!("removing {dir}: {e}"));
        }
    }
    failures
}
