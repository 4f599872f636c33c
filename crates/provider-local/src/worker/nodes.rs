//! The shoot side of machines, as Gardener's machine controller sees it: a machine counts as
//! ready once its Node is Ready in the shoot, and a machine that is deleted takes its Node with
//! it, so the shoot never keeps Nodes of machines that are gone. A registered Node gets its pool's
//! labels, annotations and taints, and the zone label of its machine (a pool's machines are spread
//! over its zones in turn), as the machine controller applies a machine class's node template; a
//! change of those replaces the machines (they are part of the class hash), so only what is missing
//! on a Node is written. The shoot is reached with the
//! admin kubeconfig gardenlet keeps in the shoot's seed namespace ([`crate::shoot`]); without
//! that Secret (a Worker outside a gardenlet-managed shoot) the shoot side is skipped.

use super::pods::LABEL_POOL;
use crate::shoot::shoot_client;
use extension_sdk::api::extensions::worker::WorkerPool;
use extension_sdk::k8s_openapi::api::core::v1::{Node, Taint};
use extension_sdk::kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use extension_sdk::kube::{Api, Client, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};

/// The well-known zone label of a Node.
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";

/// The zone of a pool's machine: the pool's zones in turn, by the machine's index (the last part
/// of its name, `<pool>-<hash>-<index>`); none when the pool names no zone.
pub fn zone_of<'a>(pool: &'a WorkerPool, machine: &str) -> Option<&'a str> {
    let index: usize = machine.rsplit('-').next()?.parse().ok()?;
    pool.zones.get(index % pool.zones.len().max(1)).map(String::as_str)
}

/// The merge patch that gives `node` what its pool wants and it lacks: labels (with the zone),
/// annotations, taints (added, matched by key and effect); `None` when it has everything.
pub fn metadata_patch(node: &Node, pool: &WorkerPool) -> Option<serde_json::Value> {
    let name = node.name_any();
    let mut labels = pool.labels.clone();
    if let Some(zone) = zone_of(pool, &name) {
        labels.insert(LABEL_ZONE.to_string(), zone.to_string());
    }
    let missing = |want: &BTreeMap<String, String>, have: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        want.iter().filter(|(k, v)| have.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    let labels = missing(&labels, node.labels());
    let annotations = missing(&pool.annotations, node.annotations());
    let have: Vec<Taint> = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
    let new_taints: Vec<Taint> = pool
        .taints
        .iter()
        .filter(|t| !have.iter().any(|h| h.key == t.key && h.effect == t.effect && h.value == t.value))
        .map(|t| Taint { key: t.key.clone(), value: t.value.clone(), effect: t.effect.clone(), time_added: None })
        .collect();
    if labels.is_empty() && annotations.is_empty() && new_taints.is_empty() {
        return None;
    }
    let mut patch = serde_json::json!({"metadata": {}});
    if !labels.is_empty() {
        patch["metadata"]["labels"] = serde_json::json!(labels);
    }
    if !annotations.is_empty() {
        patch["metadata"]["annotations"] = serde_json::json!(annotations);
    }
    if !new_taints.is_empty() {
        // A merge patch replaces the list: keep the Node's own taints (the kubelet's, say) that
        // the pool does not replace.
        let kept = have.into_iter().filter(|h| !pool.taints.iter().any(|t| t.key == h.key && t.effect == h.effect));
        let taints: Vec<Taint> = kept.chain(new_taints).collect();
        patch["spec"] = serde_json::json!({"taints": taints});
    }
    Some(patch)
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
pub async fn sync(
    seed: &Client,
    technical_id: &str,
    machines: &BTreeSet<String>,
    pools: &[WorkerPool],
) -> Option<usize> {
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
    for node in nodes.iter().filter(|n| machines.contains(&n.name_any())) {
        let Some(pool) = node.labels().get(LABEL_POOL).and_then(|p| pools.iter().find(|w| &w.name == p)) else {
            continue;
        };
        if let Some(patch) = metadata_patch(node, pool) {
            let name = node.name_any();
            match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => tracing::info!(node = name, "gave the Node its pool's labels, annotations and taints"),
                Err(e) => tracing::warn!(node = name, error = %e, "could not label the Node; retrying"),
            }
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

    fn pool(zones: &[&str]) -> WorkerPool {
        WorkerPool {
            name: "a".into(),
            zones: zones.iter().map(|z| z.to_string()).collect(),
            labels: [("team".to_string(), "blue".to_string())].into(),
            annotations: [("note".to_string(), "x".to_string())].into(),
            taints: vec![
                serde_json::from_value(serde_json::json!({"key": "dedicated", "value": "db", "effect": "NoSchedule"}))
                    .unwrap(),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn machines_are_spread_over_the_pool_zones_in_turn() {
        let p = pool(&["z1", "z2"]);
        assert_eq!(zone_of(&p, "a-abc123-0"), Some("z1"));
        assert_eq!(zone_of(&p, "a-abc123-1"), Some("z2"));
        assert_eq!(zone_of(&p, "a-abc123-2"), Some("z1"));
        assert_eq!(zone_of(&pool(&[]), "a-abc123-0"), None);
    }

    #[test]
    fn a_node_gets_what_its_pool_wants_once() {
        let p = pool(&["z1"]);
        let mut n = node("a-abc123-0", Some("a"));
        n.spec = Some(extension_sdk::k8s_openapi::api::core::v1::NodeSpec {
            taints: Some(vec![Taint {
                key: "node.kubernetes.io/not-ready".into(),
                effect: "NoSchedule".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        let patch = metadata_patch(&n, &p).unwrap();
        assert_eq!(patch["metadata"]["labels"], serde_json::json!({"team": "blue", LABEL_ZONE: "z1"}));
        assert_eq!(patch["metadata"]["annotations"], serde_json::json!({"note": "x"}));
        let taints: Vec<Taint> = serde_json::from_value(patch["spec"]["taints"].clone()).unwrap();
        let keys: Vec<_> = taints.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["node.kubernetes.io/not-ready", "dedicated"], "the kubelet's own taint is kept");
        // Applied: nothing more to write.
        let mut labels = n.labels().clone();
        labels.extend([("team".to_string(), "blue".to_string()), (LABEL_ZONE.to_string(), "z1".to_string())]);
        n.metadata.labels = Some(labels);
        n.metadata.annotations = Some([("note".to_string(), "x".to_string())].into());
        n.spec.as_mut().unwrap().taints = Some(taints);
        assert_eq!(metadata_patch(&n, &p), None);
    }

    #[test]
    fn only_pool_nodes_without_a_machine_are_orphans() {
        let nodes = [node("a-1", Some("a")), node("a-2", Some("a")), node("manual", None)];
        let machines = BTreeSet::from(["a-2".to_string()]);
        assert_eq!(orphans(&nodes, &machines), vec!["a-1"]);
    }
}
