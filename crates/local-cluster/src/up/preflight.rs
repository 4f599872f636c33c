//! What `up` needs from the host (binaries, host tools, the pause image, kernel features),
//! checked before anything changes.

use super::Options;
use crate::error::{Error, Result};
use crate::process;
use std::path::Path;

const SETUP: &str = "run `make local-up`, which provisions it (hack/setup-local.sh)";

/// Everything `up` needs from the host, checked before anything changes.
pub fn check(options: &Options) -> Result<()> {
    for name in ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"] {
        let path = options.assets.join(name);
        if !path.is_file() {
            return Err(Error::MissingBinary { binary: name.into(), path, fix: SETUP.into() });
        }
    }
    for path in [
        "/usr/bin/containerd",
        "/usr/bin/ctr",
        "/usr/sbin/runc",
        "/usr/lib/cni/bridge",
        "/usr/lib/cni/host-local",
        "/usr/lib/cni/portmap",
    ] {
        if !Path::new(path).is_file() {
            return Err(Error::MissingBinary {
                binary: path.rsplit('/').next().unwrap_or(path).into(),
                path: path.into(),
                fix: SETUP.into(),
            });
        }
    }
    if !options.registry.is_file() {
        return Err(Error::MissingBinary {
            binary: "docker-registry".into(),
            path: options.registry.clone(),
            fix: "run `hack/setup-local.sh`, which unpacks it".into(),
        });
    }
    for tool in ["iptables", "ip6tables", "ip", "nft", "tar"] {
        if process::run("sh", &["-c", &format!("command -v {tool}")]).is_err() {
            return Err(Error::MissingBinary { binary: tool.into(), path: tool.into(), fix: SETUP.into() });
        }
    }
    if !options.images.join("registry.k8s.io_pause_3.6.tar").is_file() {
        return Err(Error::MissingBinary {
            binary: "the pause image".into(),
            path: options.images.join("registry.k8s.io_pause_3.6.tar"),
            fix: "run `make images`".into(),
        });
    }
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !filesystems.contains("overlay") {
        return Err(Error::MissingKernelFeature {
            feature: "overlayfs",
            detail: "containerd's snapshotter needs it; load it with `modprobe overlay`".into(),
        });
    }
    if !Path::new("/proc/sys/net/bridge/bridge-nf-call-iptables").exists() {
        return Err(Error::MissingKernelFeature {
            feature: "br_netfilter",
            detail: "Services between pods on one bridge need it; load it with `modprobe br_netfilter`".into(),
        });
    }
    if !Path::new("/sys/fs/cgroup/memory").is_dir() && !Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        return Err(Error::MissingKernelFeature {
            feature: "the memory cgroup",
            detail: "the kubelet needs a mounted memory cgroup controller".into(),
        });
    }
    Ok(())
}
