//! The shoot side of machines, as Gardener's machine controller sees it: a machine counts as
//! ready once its Node is Ready in the shoot, and a machine that is deleted takes its Node with
//! it, so the shoot never keeps Nodes of machines that are gone. The shoot is reached with the
//! admin kubeconfig gardenlet keeps in the shoot's seed namespace ([`crate::shoot`]); without
//! that Secret (a Worker outside a gardenlet-managed shoot) the shoot side is skipped.

use super::pods::LABEL_POOL;
use crate::shoot::shoot_client;
use extension_sdk::k8s_openapi::api::core::v1::Node;
use extension_sdk::kube::api::{DeleteParams, ListParams};
use extension_sdk::kube::{Api, Client, ResourceExt};
use std::collections::BTreeSet;

/// The Nodes of machine pools that are not among `machines`: left by deleted machines.
pub fn orphans(nodes: &[Node], machines: &BTreeSet<String>) -> Vec<String> {
    nodes
        .iter()
        .filter(|n| n.labels().contains_key(LABEL_POOL))
        .map(|n| n.name_any())
        .filter(|name| !machines.contains(name))
        .collect()
}

/// Machines whose Node is not Ready (or not registered) yet.
pub fn not_ready(nodes: &[Node], machines: &BTreeSet<String>) -> usize {
    machines.iter().filter(|m| !nodes.iter().any(|n| n.name_any() == **m && ready(n))).count()
}

fn ready(n: &Node) -> bool {
    n.status.iter().flat_map(|s| s.conditions.iter().flatten()).any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Deletes the Nodes of pool machines that no longer exist and returns how many of `machines`
/// have no Ready Node yet; `None` when the shoot has no kubeconfig to reach it. An unreachable
/// API server counts every machine as not ready: the Worker waits for it.
pub async fn sync(seed: &Client, technical_id: &str, machines: &BTreeSet<String>) -> Option<usize> {
    let shoot = match shoot_client(seed, technical_id).await {
        Ok(shoot) => shoot?,
        Err(e) => {
            tracing::info!(error = %e, "no client for the shoot's API server; skipping its Nodes");
            return None;
        }
    };
    let api: Api<Node> = Api::all(shoot);
    let nodes = match api.list(&ListParams::default().labels(LABEL_POOL)).await {
        Ok(list) => list.items,
        Err(e) => {
            tracing::info!(error = %e, "the shoot's API server is not reachable; waiting for it");
            return Some(machines.len());
        }
    };
    for name in orphans(&nodes, machines) {
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => tracing::info!(node = name, "deleted the Node of a machine that is gone"),
            Err(e) => tracing::warn!(node = name, error = %e, "could not delete the Node of a machine that is gone"),
        }
    }
    Some(not_ready(&nodes, machines))
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::kube::api::ObjectMeta;

    fn ready_node(name: &str) -> Node {
        let mut n = node(name, Some("a"));
        n.status = Some(extension_sdk::k8s_openapi::api::core::v1::NodeStatus {
            conditions: Some(vec![extension_sdk::k8s_openapi::api::core::v1::NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        n
    }

    #[test]
    fn a_machine_is_ready_when_its_node_is() {
        let nodes = [ready_node("a-1"), node("a-2", Some("a"))];
        let machines = BTreeSet::from(["a-1".to_string(), "a-2".to_string(), "a-3".to_string()]);
        assert_eq!(not_ready(&nodes, &machines), 2, "a-2 is not Ready, a-3 has not registered");
        assert_eq!(not_ready(&nodes, &BTreeSet::from(["a-1".to_string()])), 0);
    }

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
