//! The volume provisioner of shoots: `gardener-extension-provider-local volume-provisioner`, run
//! by the ControlPlane's DaemonSet on every node of a shoot ([`crate::controlplane`]). Each pod
//! provisions the claims of the StorageClass [`STORAGE_CLASS`] that the scheduler placed on its
//! node, as host-path directories under [`VOLUMES_DIR`] on that node, and deletes its node's
//! released volumes with their directories. The provisioner itself is the `hostpath-provisioner`
//! crate (the same code as the local cluster's storage add-on); this module names it.

use hostpath_provisioner::{Config, Topology};
use std::path::PathBuf;

/// The provisioner name, in the StorageClass and on the volumes it makes.
pub const PROVISIONER: &str = "local.provider.extensions.gardener.cloud/host-path";
/// The shoot's default StorageClass.
pub const STORAGE_CLASS: &str = "default";
/// Where the volumes live on a node (a machine's own file system), and where the provisioner's
/// pod mounts that directory (the same path, so the volumes' paths are right on both sides).
pub const VOLUMES_DIR: &str = "/var/lib/provider-local/volumes";

/// The provisioner of one node.
pub fn config(node_name: String, volumes_dir: PathBuf) -> Config {
    Config {
        provisioner: PROVISIONER.into(),
        storage_class: STORAGE_CLASS.into(),
        volumes_dir,
        node_name,
        topology: Topology::PerNode,
    }
}

/// Runs the provisioner of `node_name` until the process ends.
pub async fn run(
    client: extension_sdk::kube::Client,
    node_name: String,
    volumes_dir: PathBuf,
) -> Result<(), hostpath_provisioner::Error> {
    hostpath_provisioner::run(client, config(node_name, volumes_dir)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pod_serves_its_own_node() {
        let c = config("machine-0".into(), PathBuf::from(VOLUMES_DIR));
        assert_eq!(c.topology, Topology::PerNode);
        assert_eq!(c.node_name, "machine-0");
        assert_eq!(c.provisioner, PROVISIONER);
        assert_eq!(c.storage_class, STORAGE_CLASS);
    }
}
