//! The shoot side of machines, as Gardener's machine controller sees it: a machine counts as
//! ready once its Node is Ready in the shoot, and a machine that is deleted takes its Node with
//! it, so the shoot never keeps Nodes of machines that are gone. A registered Node gets its pool's
//! labels, annotations and taints, and the zone label of its machine (a pool's machines are spread
//! over its zones in turn), as the machine controller applies a machine class's node template; a
//! change of those is applied to the Nodes in place, without replacing machines. The shoot is
//! reached with the
//! admin kubeconfig gardenlet keeps in the shoot's seed namespace ([`crate::shoot`]); without
//! that Secret (a Worker outside a gardenlet-managed shoot) the shoot side is skipped.

use super::pods::LABEL_POOL;
use crate::shoot::shoot_client;
use extension_sdk::api::extensions::worker::WorkerPool;
use extension_sdk::k8s_openapi::api::core::v1::{Node, Pod, Taint};
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

/// The annotation on a Node listing what the Worker last gave it from its pool (label and
/// annotation keys, taints as `key:effect`), so that what the pool no longer has is taken away
/// again and what others put on the Node is left alone (machine-controller-manager keeps the
/// same record).
pub const LAST_APPLIED: &str = "worker.provider-local.gardener.cloud/last-applied";

/// What the pool gave a Node.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Applied {
    labels: BTreeSet<String>,
    annotations: BTreeSet<String>,
    taints: BTreeSet<String>,
}

fn taint_id(t: &Taint) -> String {
    format!("{}:{}", t.key, t.effect)
}

/// The merge patch that brings `node` to what its pool wants now: labels (with the zone),
/// annotations and taints set, and those the pool gave it before but no longer has removed;
/// `None` when the Node is as it should be. A change of these never replaces machines: it is
/// applied to the Nodes in place.
pub fn metadata_patch(node: &Node, pool: &WorkerPool) -> Option<serde_json::Value> {
    let name = node.name_any();
    let mut labels = pool.labels.clone();
    if let Some(zone) = zone_of(pool, &name) {
        labels.insert(LABEL_ZONE.to_string(), zone.to_string());
    }
    let before: Applied =
        node.annotations().get(LAST_APPLIED).and_then(|a| serde_json::from_str(a).ok()).unwrap_or_default();
    let now = Applied {
        labels: labels.keys().cloned().collect(),
        annotations: pool.annotations.keys().cloned().collect(),
        taints: pool.taints.iter().map(taint_id).collect(),
    };
    let changes = |want: &BTreeMap<String, String>, have: &BTreeMap<String, String>, gone: &BTreeSet<String>| {
        let mut out = serde_json::Map::new();
        for (k, v) in want.iter().filter(|(k, v)| have.get(*k) != Some(*v)) {
            out.insert(k.clone(), serde_json::Value::String(v.clone()));
        }
        for k in gone.iter().filter(|k| have.contains_key(*k) && !want.contains_key(*k)) {
            out.insert(k.clone(), serde_json::Value::Null);
        }
        out
    };
    let label_changes = changes(&labels, node.labels(), &before.labels);
    let mut annotation_changes = changes(&pool.annotations, node.annotations(), &before.annotations);
    if before != now {
        let record = serde_json::to_string(&now).unwrap_or_default();
        annotation_changes.insert(LAST_APPLIED.to_string(), serde_json::Value::String(record));
    }
    let have: Vec<Taint> = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
    // The Node's own taints (the kubelet's, an operator's) stay; the pool's replace theirs.
    let kept = have.iter().filter(|h| {
        let id = taint_id(h);
        !now.taints.contains(&id) && !before.taints.contains(&id)
    });
    let pool_taints = pool.taints.iter().map(|t| Taint { time_added: None, ..t.clone() });
    let want_taints: Vec<Taint> = kept.cloned().chain(pool_taints).collect();
    let same = |a: &Taint, b: &Taint| a.key == b.key && a.effect == b.effect && a.value == b.value;
    let taints_differ = want_taints.len() != have.len() || !want_taints.iter().all(|w| have.iter().any(|h| same(w, h)));

    if label_changes.is_empty() && annotation_changes.is_empty() && !taints_differ {
        return None;
    }
    let mut patch = serde_json::json!({"metadata": {}});
    if !label_changes.is_empty() {
        patch["metadata"]["labels"] = serde_json::Value::Object(label_changes);
    }
    if !annotation_changes.is_empty() {
        patch["metadata"]["annotations"] = serde_json::Value::Object(annotation_changes);
    }
    if taints_differ {
        // A merge patch replaces the whole list.
        patch["spec"] = serde_json::json!({"taints": want_taints});
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

/// The shoot's side of a Worker's machines at one moment: its pool Nodes and kube-proxy pods.
pub struct ShootView {
    pub client: Client,
    /// Whether the shoot's API server answered; when it did not, no machine counts as serving
    /// and no drain begins.
    pub reachable: bool,
    nodes: Vec<Node>,
    proxies: Vec<Pod>,
}

/// The label of kube-proxy's pods (gardenlet's DaemonSet in the shoot's `kube-system`).
const PROXY_SELECTOR: &str = "k8s-app=kube-proxy";

/// Looks at the shoot; `None` when the shoot has no kubeconfig to reach it (a Worker outside a
/// gardenlet-managed shoot).
pub async fn observe(seed: &Client, technical_id: &str) -> Option<ShootView> {
    let client = match shoot_client(seed, technical_id).await {
        Ok(shoot) => shoot?,
        Err(e) => {
            tracing::info!(error = %e, "no client for the shoot's API server; skipping its Nodes");
            return None;
        }
    };
    let nodes: Api<Node> = Api::all(client.clone());
    let (reachable, nodes) = match nodes.list(&ListParams::default().labels(LABEL_POOL)).await {
        Ok(list) => (true, list.items),
        Err(e) => {
            tracing::info!(error = %e, "the shoot's API server is not reachable; waiting for it");
            (false, Vec::new())
        }
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let proxies = match pods.list(&ListParams::default().labels(PROXY_SELECTOR)).await {
        Ok(list) => list.items,
        Err(_) => Vec::new(),
    };
    Some(ShootView { client, reachable, nodes, proxies })
}

impl ShootView {
    /// Whether `machine` carries workloads: its Node is Ready and, when the shoot runs kube-proxy,
    /// the node's kube-proxy pod is Ready (before that, Services do not work on the node).
    pub fn serves(&self, machine: &str) -> bool {
        serves(&self.nodes, &self.proxies, machine)
    }
}

/// [`ShootView::serves`] on plain lists.
pub fn serves(nodes: &[Node], proxies: &[Pod], machine: &str) -> bool {
    let node_ready = nodes.iter().any(|n| n.name_any() == machine && ready(n));
    let on_node = |p: &&Pod| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(machine);
    let proxy_ready = proxies.is_empty() || proxies.iter().filter(on_node).any(pod_ready);
    node_ready && proxy_ready
}

fn pod_ready(p: &Pod) -> bool {
    p.status.iter().flat_map(|s| s.conditions.iter().flatten()).any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Deletes the Nodes of pool machines that no longer exist, gives the others their pool's
/// metadata, and returns how many of `machines` have no Ready Node yet. An unreachable API
/// server counts every machine as not ready: the Worker waits for it.
pub async fn sync(view: &ShootView, machines: &BTreeSet<String>, pools: &[WorkerPool]) -> usize {
    if !view.reachable {
        return machines.len();
    }
    let api: Api<Node> = Api::all(view.client.clone());
    let nodes = &view.nodes;
    for name in orphans(nodes, machines) {
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
    not_ready(nodes, machines)
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

    /// `node` with `patch` (a merge patch as [`metadata_patch`] writes it) applied.
    fn patched(mut n: Node, patch: &serde_json::Value) -> Node {
        let merge = |map: &mut Option<BTreeMap<String, String>>, changes: &serde_json::Value| {
            let map = map.get_or_insert_with(BTreeMap::new);
            for (k, v) in changes.as_object().into_iter().flatten() {
                match v.as_str() {
                    Some(v) => map.insert(k.clone(), v.to_string()),
                    None => map.remove(k),
                };
            }
        };
        merge(&mut n.metadata.labels, &patch["metadata"]["labels"]);
        merge(&mut n.metadata.annotations, &patch["metadata"]["annotations"]);
        if let Some(t) = patch.pointer("/spec/taints") {
            n.spec.get_or_insert_with(Default::default).taints = Some(serde_json::from_value(t.clone()).unwrap());
        }
        n
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
        assert_eq!(patch["metadata"]["annotations"]["note"], "x");
        let taints: Vec<Taint> = serde_json::from_value(patch["spec"]["taints"].clone()).unwrap();
        let keys: Vec<_> = taints.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["node.kubernetes.io/not-ready", "dedicated"], "the kubelet's own taint is kept");
        let n = patched(n, &patch);
        assert_eq!(metadata_patch(&n, &p), None, "applied: nothing more to write");
    }

    #[test]
    fn a_changed_pool_changes_its_nodes_in_place_and_leaves_the_rest_alone() {
        let before = pool(&["z1"]);
        let mut n = node("a-abc123-0", Some("a"));
        n.metadata.labels.get_or_insert_with(BTreeMap::new).insert("operator".into(), "set".into());
        let n = patched(n.clone(), &metadata_patch(&n, &before).unwrap());

        let mut after = before.clone();
        after.labels = [("team".to_string(), "red".to_string())].into();
        after.annotations.clear();
        after.taints.clear();
        let n = patched(n.clone(), &metadata_patch(&n, &after).unwrap());
        assert_eq!(n.labels().get("team").map(String::as_str), Some("red"));
        assert_eq!(n.labels().get("operator").map(String::as_str), Some("set"), "not the pool's: kept");
        assert_eq!(n.labels().get(LABEL_POOL).map(String::as_str), Some("a"), "the kubelet's: kept");
        assert!(!n.annotations().contains_key("note"), "removed from the pool, removed from the Node");
        assert!(n.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default().is_empty(), "taint removed");
        assert_eq!(metadata_patch(&n, &after), None);
    }

    fn proxy(node: &str, ready: bool) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("kube-proxy-{node}")},
            "spec": {"nodeName": node, "containers": []},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_machine_serves_once_its_node_is_ready_and_runs_kube_proxy() {
        let nodes = [ready_node("a-1"), ready_node("a-2"), node("a-3", Some("a"))];
        let proxies = [proxy("a-1", true), proxy("a-2", false), proxy("a-3", true)];
        assert!(serves(&nodes, &proxies, "a-1"));
        assert!(!serves(&nodes, &proxies, "a-2"), "its kube-proxy is not Ready");
        assert!(!serves(&nodes, &proxies, "a-3"), "its Node is not Ready");
        assert!(!serves(&nodes, &proxies, "a-4"), "no Node");
        assert!(!serves(&nodes, &proxies[..1], "a-2"), "kube-proxy runs elsewhere but not here yet");
        assert!(serves(&nodes, &[], "a-2"), "a shoot without kube-proxy: the Node decides");
    }

    #[test]
    fn only_pool_nodes_without_a_machine_are_orphans() {
        let nodes = [node("a-1", Some("a")), node("a-2", Some("a")), node("manual", None)];
        let machines = BTreeSet::from(["a-2".to_string()]);
        assert_eq!(orphans(&nodes, &machines), vec!["a-1"]);
    }
}
