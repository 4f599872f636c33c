//! Least privilege for the control-plane pods: who their processes run as, what they may do,
//! and how much memory they may take.
//!
//! Every control-plane container runs as the unprivileged [`NONROOT`] user (the "nonroot" of
//! distroless images; the images have no default user, the pod decides), with no capabilities,
//! no privilege escalation, the runtime's default seccomp profile (a field since Kubernetes
//! 1.19; the seeds run 1.20) and a read-only root: they write only into their volumes. The
//! pod's `fsGroup` makes the mounted Secrets (mode 0640, see `common::secret_volume`) readable
//! by that group; the kubelet applies it to Secret, ConfigMap and emptyDir volumes, not to
//! hostPath ones (etcd's data volume is one: `etcd::data_dir_script` hands it over). The one
//! exception is etcd's `data-dir` init container, which runs as root with only the
//! capabilities [`DATA_DIR_CAPABILITIES`] to change the owner of that volume.

use k8s_openapi::api::core::v1::{Capabilities, PodSecurityContext, SeccompProfile, SecurityContext};

/// The uid and gid of every control-plane process (distroless "nonroot").
pub const NONROOT: i64 = 65532;

/// What etcd's `data-dir` init container needs, and nothing else: `CHOWN` to hand the volume
/// to [`NONROOT`], `FOWNER` to set the data directory's mode once it is no longer root's, and
/// `DAC_READ_SEARCH` to walk directories of mode 0700 that belong to [`NONROOT`] (a restarted
/// pod finds them so). No `DAC_OVERRIDE`: the script writes no file.
pub const DATA_DIR_CAPABILITIES: &[&str] = &["CHOWN", "DAC_READ_SEARCH", "FOWNER"];

fn runtime_default() -> SeccompProfile {
    SeccompProfile { type_: "RuntimeDefault".to_string(), ..Default::default() }
}

/// The pod-level context: [`NONROOT`] as user, group and `fsGroup`, the runtime's seccomp
/// profile.
pub fn pod() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(NONROOT),
        run_as_group: Some(NONROOT),
        fs_group: Some(NONROOT),
        seccomp_profile: Some(runtime_default()),
        ..Default::default()
    }
}

/// The context of every unprivileged container: non-root, no capabilities, no privilege
/// escalation, a read-only root, the runtime's seccomp profile (also set on the container, so
/// each container's context says everything on its own).
pub fn container() -> SecurityContext {
    SecurityContext {
        run_as_non_root: Some(true),
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities { drop: Some(vec!["ALL".to_string()]), add: None }),
        read_only_root_filesystem: Some(true),
        seccomp_profile: Some(runtime_default()),
        ..Default::default()
    }
}

/// The context of a container that must run as root: uid 0, all capabilities dropped but
/// `capabilities`, otherwise as [`container`].
pub fn root_with(capabilities: &[&str]) -> SecurityContext {
    SecurityContext {
        run_as_non_root: Some(false),
        run_as_user: Some(0),
        run_as_group: Some(0),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_string()]),
            add: Some(capabilities.iter().map(|c| c.to_string()).collect()),
        }),
        ..container()
    }
}

/// Memory limits (MiB), chosen from the resident sizes of an idle shoot (docs/performance.md,
/// "Memory of one shoot": etcd 44, kube-apiserver 348, kube-controller-manager 91,
/// kube-scheduler 44 MiB) with room for busy shoots (the conformance suite, many objects and
/// watches): about 6 to 20 times the idle size. A limit reserves nothing on the seed (the
/// requests do); it bounds what one shoot's component can take from the others. etcd's
/// database file is mapped into memory, but clean pages of it are reclaimed under the limit
/// rather than killing the process. No CPU limits: throttling a control plane's bursts only
/// slows it.
pub mod limits {
    pub const ETCD_MIB: u64 = 1024;
    /// The restore runs `etcdctl snapshot restore` over the whole database: as much as etcd.
    pub const ETCD_RESTORE_MIB: u64 = 1024;
    /// `chown` and `chmod` of a few files.
    pub const ETCD_DATA_DIR_MIB: u64 = 64;
    /// The backup sidecar streams full snapshots to the store and buffers deltas between periods.
    pub const ETCD_BACKUP_MIB: u64 = 256;
    pub const KUBE_APISERVER_MIB: u64 = 2048;
    pub const KUBE_CONTROLLER_MANAGER_MIB: u64 = 512;
    pub const KUBE_SCHEDULER_MIB: u64 = 256;
}

#[cfg(test)]
mod tests;
