//! The default StorageClass's provisioner: a PersistentVolumeClaim of the class `local-path`
//! gets a PersistentVolume backed by a new directory on the host (`<state>/volumes/<pv>`), bound
//! to the node; when the claim is deleted, the volume (reclaim policy `Delete`) is removed with
//! its directory. Data survives the pod: the directory lives as long as the claim.
//!
//! The decisions and the controller are the `hostpath-provisioner` crate's (shared with
//! provider-local's provisioner in shoots); this module only says what the local cluster's
//! provisioner is: its name, class, node and directory, on a cluster of one node.

use crate::error::{Error, Result};
use crate::settings::{NODE_NAME, PROVISIONER, STORAGE_CLASS};
use hostpath_provisioner::{Config, Topology};
use kube::Client;
use std::path::PathBuf;

/// The local cluster's provisioner, serving `volumes_dir` on its one node.
pub fn config(volumes_dir: PathBuf) -> Config {
    Config {
        provisioner: PROVISIONER.into(),
        storage_class: STORAGE_CLASS.into(),
        volumes_dir,
        node_name: NODE_NAME.into(),
        topology: Topology::SingleNode,
    }
}

/// Runs the provisioner until the process ends.
pub async fn run(client: Client, volumes_dir: PathBuf) -> Result<()> {
    hostpath_provisioner::run(client, config(volumes_dir)).await.map_err(Error::Storage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_the_default_storage_class_on_the_one_node() {
        let c = config(PathBuf::from("/state/volumes"));
        assert_eq!(c.provisioner, "local-cluster.gardener.cloud/host-path");
        assert_eq!(c.storage_class, "local-path");
        assert_eq!(c.node_name, "local-node");
        assert_eq!(c.volumes_dir, PathBuf::from("/state/volumes"));
        assert_eq!(c.topology, Topology::SingleNode);
        // The StorageClass `up` applies names this provisioner.
        let class = crate::manifests::all()
            .into_iter()
            .find(|o| o["kind"] == "StorageClass")
            .expect("the manifests hold the StorageClass");
        assert_eq!(class["metadata"]["name"], c.storage_class.as_str());
        assert_eq!(class["provisioner"], c.provisioner.as_str());
    }
}
