//! `local-cluster down`: removes the local cluster and every trace of it on the host. It works
//! on whatever is there (a running cluster, a half-finished `up`, nothing at all), goes on past
//! failures, and reports them at the end.
//!
//! Order: the node's workloads (kubelet and kube-proxy stop, every container is killed and
//! removed through containerd, stray shims are stopped), containerd, the image registry (writer
//! and reader), the control plane and etcd; then mounts, links, iptables and nftables, sysctls,
//! cgroups, outside directories, and last the state directory.

use crate::error::Result;
use crate::host::snapshot::Snapshot;
use crate::host::{cleanup, network};
use crate::layout::Layout;
use crate::process;
use std::path::Path;
use std::time::{Duration, Instant};

const GRACE: Duration = Duration::from_secs(10);

/// Returns the problems met (empty when everything was removed).
pub fn run(layout: &Layout) -> Result<Vec<String>> {
    let started = Instant::now();
    if !layout.root().exists() {
        eprintln!("local-cluster: nothing to remove ({} does not exist)", layout.root().display());
        return Ok(Vec::new());
    }
    let _lock = process::lock(&layout.lock(), "down")?;
    let before: Option<Snapshot> =
        std::fs::read_to_string(layout.host_snapshot()).ok().and_then(|t| serde_json::from_str(&t).ok());
    let mut problems = Vec::new();

    for name in ["addons", "kube-proxy", "kubelet"] {
        process::stop(layout, name, GRACE);
    }
    tracing::debug!(elapsed = ?started.elapsed(), "node agents stopped");
    remove_containers(layout);
    tracing::debug!(elapsed = ?started.elapsed(), "containers removed");
    process::stop(layout, "containerd", GRACE);
    // Shims outlive containerd; they name its socket on their command line.
    cleanup::stop_processes_naming(&layout.containerd_socket().display().to_string());
    for name in ["registry-writer", "registry", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"] {
        process::stop(layout, name, GRACE);
    }

    tracing::debug!(elapsed = ?started.elapsed(), "processes stopped");
    let kubelet_default = Path::new("/var/lib/kubelet");
    let run_containerd = Path::new("/run/containerd");
    problems.extend(cleanup::unmount_under(&[layout.root(), kubelet_default, run_containerd]));
    problems.extend(network::remove_links());
    match &before {
        Some(before) => {
            problems.extend(network::remove_iptables(before));
            for (name, value) in &before.sysctls {
                if let Some(value) = value
                    && crate::host::snapshot::read_sysctl(name).as_deref() != Some(value.as_str())
                    && let Err(e) = network::set_sysctl(name, value)
                {
                    problems.push(crate::report(&e));
                }
            }
            problems.extend(cleanup::remove_cgroups(before));
            problems.extend(cleanup::remove_outside_dirs(before));
        }
        None => {
            // No record of the host (the first `up` failed before taking it): remove our own
            // chains; nothing to restore.
            problems.extend(network::remove_iptables(&Snapshot::default()));
        }
    }
    if let Err(e) = remove_state(layout.root()) {
        problems.push(format!("removing {}: {e}", layout.root().display()));
    }
    eprintln!("local-cluster: down in {:.1} s", started.elapsed().as_secs_f64());
    Ok(problems)
}

/// Kills and removes every container of our containerd (the kubelet no longer runs, so nothing
/// restarts them).
fn remove_containers(layout: &Layout) {
    let sock = layout.containerd_socket();
    if process::running(layout, "containerd").is_none() || !sock.exists() {
        return;
    }
    let sock = sock.display().to_string();
    let ctr =
        |args: &[&str]| process::run("ctr", &[&["--address", sock.as_str(), "--namespace", "k8s.io"], args].concat());
    let tasks = ctr(&["tasks", "ls", "-q"]).unwrap_or_default();
    for id in tasks.lines().filter(|l| !l.is_empty()) {
        let _ = ctr(&["tasks", "kill", "--signal", "SIGKILL", id]);
    }
    // containerd's CRI removes a task as soon as it exits; wait for that, then delete what is left.
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline && !ctr(&["tasks", "ls", "-q"]).unwrap_or_default().trim().is_empty() {
        std::thread::sleep(Duration::from_millis(100));
    }
    for id in ctr(&["tasks", "ls", "-q"]).unwrap_or_default().lines().filter(|l| !l.is_empty()) {
        let _ = ctr(&["tasks", "delete", "--force", id]);
    }
    let containers = ctr(&["containers", "ls", "-q"]).unwrap_or_default();
    for id in containers.lines().filter(|l| !l.is_empty()) {
        let _ = ctr(&["containers", "delete", id]);
    }
}

/// Removes the state directory; the lock file inside goes with it (its lock is still held).
fn remove_state(root: &Path) -> std::io::Result<()> {
    std::fs::remove_dir_all(root)
}
