//! The shoot side of machines: a machine that is deleted takes its Node with it, as Gardener's
//! machine controller does, so the shoot never keeps Nodes of machines that are gone. The
//! shoot is reached with the admin kubeconfig gardenlet keeps in the shoot's seed namespace;
//! while the shoot's API server is away (hibernation, deletion) there is nothing to clean.

use super::pods::LABEL_POOL;
use extension_sdk::k8s_openapi::api::core::v1::{Node, Secret};
use extension_sdk::kube::api::{DeleteParams, ListParams};
use extension_sdk::kube::config::{KubeConfigOptions, Kubeconfig};
use extension_sdk::kube::{Api, Client, Config, ResourceExt};
use std::collections::BTreeSet;

/// The Secret with the shoot's admin kubeconfig, in the shoot's seed namespace.
const KUBECONFIG_SECRET: &str = "kubeconfig-admin";

/// A client for the shoot's API, when its kubeconfig is there.
pub async fn shoot_client(seed: &Client, technical_id: &str) -> Option<Client> {
    let secrets: Api<Secret> = Api::namespaced(seed.clone(), technical_id);
    let secret = secrets.get_opt(KUBECONFIG_SECRET).await.ok()??;
    let bytes = secret.data?.get("kubeconfig")?.0.clone();
    let kubeconfig = Kubeconfig::from_yaml(&String::from_utf8(bytes).ok()?).ok()?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.ok()?;
    Client::try_from(config).ok()
}

/// The Nodes of machine pools that are not among `machines`: left by deleted machines.
pub fn orphans(nodes: &[Node], machines: &BTreeSet<String>) -> Vec<String> {
    nodes
        .iter()
        .filter(|n| n.labels().contains_key(LABEL_POOL))
        .map(|n| n.name_any())
        .filter(|name| !machines.contains(name))
        .collect()
}

/// Deletes the Nodes of pool machines that no longer exist; returns their names. Unreachable
/// shoots are skipped (logged at debug level): the next reconcile tries again.
pub async fn delete_orphans(seed: &Client, technical_id: &str, machines: &BTreeSet<String>) -> Vec<String> {
    let Some(shoot) = shoot_client(seed, technical_id).await else { return Vec::new() };
    let api: Api<Node> = Api::all(shoot);
    let nodes = match api.list(&ListParams::default().labels(LABEL_POOL)).await {
        Ok(list) => list.items,
        Err(e) => {
            tracing::debug!(error = %e, "shoot API not reachable; Nodes not cleaned up");
            return Vec::new();
        }
    };
    let mut deleted = Vec::new();
    for name in orphans(&nodes, machines) {
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!(node = name, "deleted the Node of a machine that is gone");
                deleted.push(name);
            }
            Err(e) => tracing::warn!(node = name, error = %e, "could not delete the Node of a machine that is gone"),
        }
    }
    deleted
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::kube::api::ObjectMeta;

    fn node(name: &str, pool: Option<&str>) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: pool.map(|p| [(LABEL_POOL.to_string(), p.to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn only_pool_nodes_without_a_machine_are_orphans() {
        let nodes = [node("a-1", Some("a")), node("a-2", Some("a")), node("manual", None)];
        let machines = BTreeSet::from(["a-2".to_string()]);
        assert_eq!(orphans(&nodes, &machines), vec!["a-1"]);
    }
}
