//! A host-path volume provisioner for one node, in the manner of Rancher's
//! local-path-provisioner: a PersistentVolumeClaim of the provisioner's StorageClass gets a
//! PersistentVolume backed by a new directory `<volumes dir>/pvc-<claim uid>` on the node,
//! pinned to that node; when the claim is deleted, the released volume (reclaim policy
//! `Delete`) is removed together with its directory. Data lives as long as the claim.
//!
//! One process serves one node. It has two users, which is why this crate exists (one copy of
//! the code instead of two):
//!
//! * the local cluster's add-ons (`local-cluster addons`, a host process next to the one
//!   kubelet): [`Topology::SingleNode`];
//! * provider-local's volume provisioner, a DaemonSet in every shoot with workers, one pod per
//!   node: [`Topology::PerNode`], each pod handling only the claims the scheduler placed on its
//!   node (`volume.kubernetes.io/selected-node`, set for `WaitForFirstConsumer` classes) and
//!   deleting only its node's volumes.
//!
//! The decisions are pure functions in [`decide`] (unit-tested); [`run`] is the controller that
//! reads, decides and writes. It uses only `list`/`watch` of claims and volumes and
//! `create`/`delete` of volumes, and emits no Events.

mod controller;
pub mod decide;
mod error;

pub use controller::run;
pub use decide::{
    PathRefusal, check_volume_path, desired_volume, is_ours_to_delete, is_ours_to_provision, is_released, volume_dir,
    volume_node,
};
pub use error::Error;

use std::path::PathBuf;

/// The annotation the PV controller (Kubernetes 1.20) sets on a claim to ask a provisioner for
/// a volume; its value is the provisioner's name.
pub const STORAGE_PROVISIONER_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// The annotation the scheduler sets on a claim of a `WaitForFirstConsumer` class: the node the
/// claim's first pod goes to.
pub const SELECTED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";
/// Marks the volumes a provisioner made (and may delete); the value is its name.
pub const PROVISIONED_BY_ANNOTATION: &str = "pv.kubernetes.io/provisioned-by";
/// The node label a volume's node affinity names (the kubelet sets it to the node's hostname,
/// which is the node's name on the local cluster and on provider-local's machines).
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Which claims and volumes a provisioner process is responsible for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// The cluster has this one node: every claim of the class is provisioned here, with or
    /// without a selected node (a class with `Immediate` binding has none), and every released
    /// volume of the provisioner is deleted here.
    SingleNode,
    /// One process per node: a claim is provisioned only when the scheduler selected this node
    /// for it, and only volumes pinned to this node are deleted here (their directories are
    /// here). Claims without a selected node are left alone: no process could tell which node
    /// should hold them.
    PerNode,
}

/// What a provisioner process is: its name, class, directory and node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The provisioner name the StorageClass names (`provisioner:`), e.g.
    /// `local-cluster.gardener.cloud/host-path`.
    pub provisioner: String,
    /// The StorageClass whose claims are served.
    pub storage_class: String,
    /// The directory holding one subdirectory per volume; the PersistentVolumes name paths in
    /// it, so the process must see it at the path the kubelet uses.
    pub volumes_dir: PathBuf,
    /// The node this process serves; volumes are pinned to it.
    pub node_name: String,
    pub topology: Topology,
}
