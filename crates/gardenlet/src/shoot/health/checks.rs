//! The shoot's health conditions, from real checks: the API server answers `/readyz`; the
//! control-plane workloads are rolled out; every expected node is registered and Ready; the
//! system resources gardenlet applied to the shoot are present and kube-proxy runs ready on
//! every node. A hibernated shoot reports
//! its conditions as healthy with reason `Hibernated`: being asleep is not a failure.

use crate::components::common::labels;
use crate::components::{
    cluster_dns, etcd, etcd_backup, konnectivity, kube_apiserver, kube_controller_manager, kube_proxy, kube_scheduler,
};
use crate::shoot::health::care::cache::Workloads;
use crate::shoot::operation::readiness as checks;
use crate::shoot::status::conditions::Check;
use api::common::ConditionStatus;
use api::helpers::constants::conditions::{
    API_SERVER_AVAILABLE, CONTROL_PLANE_HEALTHY, EVERY_NODE_READY, SYSTEM_COMPONENTS_HEALTHY,
};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Api;
use kube::api::ListParams;

fn check(type_: &'static str, ok: bool, reason_ok: &str, reason_bad: &str, message: String) -> Check {
    let (status, reason) = if ok { (ConditionStatus::True, reason_ok) } else { (ConditionStatus::False, reason_bad) };
    Check { type_, status, reason: reason.to_string(), message }
}

/// Pure: nodes against the expected count.
pub fn nodes_check(nodes: &[Node], expected: i32) -> Check {
    let ready = nodes
        .iter()
        .filter(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .count();
    let registered = nodes.len();
    let expected = usize::try_from(expected.max(0)).unwrap_or(0);
    check(
        EVERY_NODE_READY,
        registered >= expected && ready == registered,
        "EveryNodeReady",
        if registered < expected { "MissingNodes" } else { "NodesNotReady" },
        format!("{ready} of {registered} registered nodes are ready; the worker pools expect at least {expected}."),
    )
}

/// The hibernated form of every condition.
pub fn hibernated() -> Vec<Check> {
    [API_SERVER_AVAILABLE, CONTROL_PLANE_HEALTHY, EVERY_NODE_READY, SYSTEM_COMPONENTS_HEALTHY]
        .into_iter()
        .map(|type_| Check {
            type_,
            status: ConditionStatus::True,
            reason: "Hibernated".into(),
            message: "The shoot is hibernated; its control plane and nodes are scaled down on purpose.".into(),
        })
        .collect()
}

/// What the checks look at: the shoot's seed namespace and its API server.
pub struct Inputs<'a> {
    pub seed: &'a kube::Client,
    /// The shoot's namespace in the seed (its technical ID).
    pub namespace: &'a str,
    pub hibernated: bool,
    /// Nodes the worker pools expect at least (the sum of their minimums).
    pub expected_nodes: i32,
    /// Whether the shoot runs kube-proxy (`spec.kubernetes.kubeProxy.enabled`): when not, its
    /// DaemonSet is neither expected nor checked.
    pub kube_proxy_enabled: bool,
    /// Whether the shoot has the tunnel (it has workers): its agents are checked.
    pub tunnel: bool,
    /// A client for the shoot's API server, or why there is none.
    pub shoot: Result<kube::Client, String>,
    /// The seed's control-plane workloads from a watch (the care controller's); `None` reads
    /// them from the seed.
    pub workloads: Option<&'a Workloads>,
}

impl std::fmt::Debug for Inputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inputs").field("namespace", &self.namespace).field("hibernated", &self.hibernated).finish()
    }
}

async fn control_plane(seed: &kube::Client, namespace: &str, cached: Option<&Workloads>) -> Check {
    let deployments: Api<Deployment> = Api::namespaced(seed.clone(), namespace);
    let mut problems = Vec::new();
    for name in [kube_apiserver::NAME, kube_controller_manager::NAME, kube_scheduler::NAME] {
        let found = match cached {
            Some(c) => Ok(c.deployment(namespace, name).map(|d| d.as_ref().clone())),
            None => deployments.get_opt(name).await,
        };
        match found {
            Ok(Some(d)) => {
                if let Err(e) = checks::deployment_rolled_out(&d) {
                    problems.push(format!("{name}: {e}"));
                }
            }
            Ok(None) => problems.push(format!("{name}: missing")),
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
    let found = match cached {
        Some(c) => Ok(c.statefulset(namespace, etcd::NAME).map(|s| s.as_ref().clone())),
        None => Api::<StatefulSet>::namespaced(seed.clone(), namespace).get_opt(etcd::NAME).await,
    };
    match found {
        Ok(Some(s)) => {
            if let Err(e) = checks::statefulset_ready(&s) {
                problems.push(format!("{}: {e}", etcd::NAME));
            }
        }
        Ok(None) => problems.push(format!("{}: missing", etcd::NAME)),
        Err(e) => problems.push(format!("{}: {e}", etcd::NAME)),
    }
    let pods = match cached {
        Some(c) => c.etcd_pods(namespace).iter().map(|p| p.as_ref().clone()).collect(),
        None => etcd_pods(seed, namespace).await,
    };
    let mut message =
        if problems.is_empty() { "All control plane components are healthy.".to_string() } else { problems.join("; ") };
    if let Some(note) = restore_note(&pods) {
        message.push(' ');
        message.push_str(&note);
    }
    check(CONTROL_PLANE_HEALTHY, problems.is_empty(), "ControlPlaneRunning", "ControlPlaneUnhealthy", message)
}

/// The shoot's etcd pods in its seed namespace (none when they cannot be listed: the finding is
/// then the StatefulSet's).
pub async fn etcd_pods(seed: &kube::Client, namespace: &str) -> Vec<Pod> {
    let selector = format!("{}={},{}={}", labels::APP, etcd::APP, labels::ROLE, etcd::ROLE);
    let (api, params) = (Api::<Pod>::namespaced(seed.clone(), namespace), ListParams::default().labels(&selector));
    api.list(&params).await.map(|l| l.items).unwrap_or_default()
}

/// What the running etcd pods say about a restore from backups: the `restore` init container's
/// termination message when it restored (not when it found data or had no backup), with when.
pub fn restore_note(pods: &[Pod]) -> Option<String> {
    let notes: Vec<String> = pods
        .iter()
        .filter_map(|pod| {
            let statuses = pod.status.as_ref()?.init_container_statuses.as_ref()?;
            let restore = statuses.iter().find(|c| c.name == etcd_backup::RESTORE_CONTAINER)?;
            let done = restore.state.as_ref()?.terminated.as_ref()?;
            let message = done.message.as_deref().filter(|m| m.starts_with("restored from"))?;
            let at = done.finished_at.as_ref().map(|t| format!(" at {}", t.0)).unwrap_or_default();
            Some(format!(
                "{} was restored from its backups{at}: {}.",
                pod.metadata.name.as_deref().unwrap_or("etcd"),
                message.trim()
            ))
        })
        .collect();
    (!notes.is_empty()).then(|| notes.join(" "))
}

/// Computes every condition (never fails: an unreachable API is itself the finding).
pub async fn conditions_of(inputs: &Inputs<'_>) -> Vec<Check> {
    if inputs.hibernated {
        return hibernated();
    }
    let mut out = vec![control_plane(inputs.seed, inputs.namespace, inputs.workloads).await];
    let shoot = match &inputs.shoot {
        Ok(c) => c.clone(),
        Err(e) => {
            let message = format!("No client for the shoot's API server: {e}");
            out.push(check(API_SERVER_AVAILABLE, false, "", "HealthzRequestFailed", message.clone()));
            out.push(check(EVERY_NODE_READY, false, "", "APIServerUnreachable", message.clone()));
            out.push(check(SYSTEM_COMPONENTS_HEALTHY, false, "", "APIServerUnreachable", message));
            return out;
        }
    };
    let readyz = match http::Request::get("/readyz").body(Vec::new()) {
        Ok(request) => shoot.request_text(request).await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    out.push(match readyz {
        Ok(body) if body.trim() == "ok" => check(
            API_SERVER_AVAILABLE,
            true,
            "HealthzRequestSucceeded",
            "",
            "API server /readyz endpoint responded with success status code.".into(),
        ),
        Ok(body) => {
            check(API_SERVER_AVAILABLE, false, "", "HealthzRequestFailed", format!("/readyz answered {body:?}"))
        }
        Err(e) => check(API_SERVER_AVAILABLE, false, "", "HealthzRequestFailed", format!("/readyz failed: {e}")),
    });
    let expected = inputs.expected_nodes;
    let mut node_count = 0;
    out.push(match Api::<Node>::all(shoot.clone()).list(&ListParams::default()).await {
        Ok(nodes) => {
            node_count = nodes.items.len();
            nodes_check(&nodes.items, expected)
        }
        Err(e) => check(EVERY_NODE_READY, false, "", "NodeListFailed", format!("listing nodes: {e}")),
    });
    let info = Api::<ConfigMap>::namespaced(shoot.clone(), "kube-public").get_opt("cluster-info").await;
    let rbac = Api::<ClusterRoleBinding>::all(shoot.clone()).get_opt("kubeadm:kubelet-bootstrap").await;
    let proxy = match inputs.kube_proxy_enabled {
        true => Some(
            Api::<DaemonSet>::namespaced(shoot.clone(), kube_proxy::NAMESPACE)
                .get_opt(kube_proxy::NAME)
                .await
                .map_err(|e| e.to_string()),
        ),
        false => None,
    };
    let dns = Api::<Deployment>::namespaced(shoot.clone(), cluster_dns::NAMESPACE).get_opt(cluster_dns::NAME).await;
    let agents = match inputs.tunnel {
        true => Some(
            Api::<Deployment>::namespaced(shoot, konnectivity::NAMESPACE)
                .get_opt(konnectivity::AGENT)
                .await
                .map_err(|e| e.to_string()),
        ),
        false => None,
    };
    out.push(match (info, rbac) {
        (Ok(Some(_)), Ok(Some(_))) => {
            system_components_check(proxy, dns.map_err(|e| e.to_string()), agents, node_count)
        }
        (info, rbac) => check(
            SYSTEM_COMPONENTS_HEALTHY,
            false,
            "",
            "SystemResourcesMissing",
            format!(
                "cluster-info present: {:?}; bootstrap RBAC present: {:?}",
                info.map(|i| i.is_some()),
                rbac.map(|r| r.is_some())
            ),
        ),
    });
    out
}

/// Pure: the system components from kube-proxy's DaemonSet, cluster DNS's Deployment and the
/// tunnel agents' Deployment (the bootstrap resources being present). Without nodes nothing can
/// run: they need only exist (`EveryNodeReady` reports the missing nodes). `kube_proxy_ds` is
/// `None` when the shoot turned kube-proxy off, `agents` when the shoot has no tunnel (no
/// workers): nothing is expected of them.
pub fn system_components_check(
    kube_proxy_ds: Option<Result<Option<DaemonSet>, String>>,
    cluster_dns_deployment: Result<Option<Deployment>, String>,
    agents: Option<Result<Option<Deployment>, String>>,
    nodes: usize,
) -> Check {
    let mut problems = Vec::new();
    let proxy_enabled = kube_proxy_ds.is_some();
    match kube_proxy_ds {
        None => {}
        Some(Ok(Some(ds))) => {
            if let Err(e) = kube_proxy::rolled_out(&ds) {
                problems.push(format!("DaemonSet kube-system/kube-proxy: {e}"));
            }
        }
        Some(Ok(None)) => problems.push("DaemonSet kube-system/kube-proxy is missing".to_string()),
        Some(Err(e)) => problems.push(format!("reading DaemonSet kube-system/kube-proxy: {e}")),
    }
    match cluster_dns_deployment {
        Ok(Some(d)) => {
            if nodes > 0
                && let Err(e) = checks::deployment_rolled_out(&d)
            {
                problems.push(format!("Deployment kube-system/cluster-dns: {e}"));
            }
        }
        Ok(None) => problems.push("Deployment kube-system/cluster-dns is missing".to_string()),
        Err(e) => problems.push(format!("reading Deployment kube-system/cluster-dns: {e}")),
    }
    let tunnel = agents.is_some();
    match agents {
        None => {}
        Some(Ok(Some(d))) => {
            if nodes > 0
                && let Err(e) = checks::deployment_rolled_out(&d)
            {
                problems.push(format!("Deployment kube-system/konnectivity-agent (the tunnel): {e}"));
            }
        }
        Some(Ok(None)) => problems.push("Deployment kube-system/konnectivity-agent is missing".to_string()),
        Some(Err(e)) => problems.push(format!("reading Deployment kube-system/konnectivity-agent: {e}")),
    }
    if problems.is_empty() {
        let proxy = if proxy_enabled { "kube-proxy runs on every node" } else { "kube-proxy is turned off" };
        check(
            SYSTEM_COMPONENTS_HEALTHY,
            true,
            "SystemComponentsRunning",
            "",
            format!(
                "{proxy}, cluster DNS{} is rolled out; the bootstrap RBAC and cluster-info are in place.",
                if tunnel { " and the tunnel's agents" } else { "" }
            ),
        )
    } else {
        check(SYSTEM_COMPONENTS_HEALTHY, false, "", "SystemComponentsUnhealthy", problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_components_follow_kube_proxy() {
        let ds = |ready: i32| -> DaemonSet {
            serde_json::from_value(serde_json::json!({"metadata": {"name": "kube-proxy", "generation": 1}, "status": {"desiredNumberScheduled": 1, "numberReady": ready, "updatedNumberScheduled": 1, "currentNumberScheduled": 1, "numberMisscheduled": 0, "observedGeneration": 1}})).unwrap()
        };
        let dns = |ready: i32| -> Deployment {
            serde_json::from_value(serde_json::json!({"metadata": {"name": "cluster-dns", "generation": 1}, "spec": {"replicas": 1, "selector": {}, "template": {}}, "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": ready, "availableReplicas": ready}})).unwrap()
        };
        assert_eq!(
            system_components_check(Some(Ok(Some(ds(1)))), Ok(Some(dns(1))), None, 1).status,
            ConditionStatus::True
        );
        let not_ready = system_components_check(Some(Ok(Some(ds(0)))), Ok(Some(dns(1))), None, 1);
        assert_eq!(
            (not_ready.status, not_ready.reason.as_str()),
            (ConditionStatus::False, "SystemComponentsUnhealthy")
        );
        assert!(not_ready.message.contains("0 of 1 pods ready"), "{}", not_ready.message);
        let dns_down = system_components_check(Some(Ok(Some(ds(1)))), Ok(Some(dns(0))), None, 1);
        assert!(dns_down.message.contains("cluster-dns"), "{}", dns_down.message);
        assert_eq!(
            system_components_check(Some(Ok(Some(ds(1)))), Ok(Some(dns(0))), None, 0).status,
            ConditionStatus::True,
            "without nodes nothing can run"
        );
        let missing = system_components_check(Some(Ok(None)), Ok(None), None, 1);
        assert!(
            missing.message.contains("kube-proxy is missing") && missing.message.contains("cluster-dns is missing")
        );
        let agents = |ready: i32| -> Deployment {
            let mut d = dns(ready);
            d.metadata.name = Some("konnectivity-agent".into());
            d
        };
        let tunnel_down =
            system_components_check(Some(Ok(Some(ds(1)))), Ok(Some(dns(1))), Some(Ok(Some(agents(0)))), 1);
        assert_eq!(tunnel_down.status, ConditionStatus::False);
        assert!(tunnel_down.message.contains("konnectivity-agent (the tunnel)"), "{}", tunnel_down.message);
        let tunnel_up = system_components_check(Some(Ok(Some(ds(1)))), Ok(Some(dns(1))), Some(Ok(Some(agents(1)))), 1);
        assert!(tunnel_up.message.contains("the tunnel's agents"), "{}", tunnel_up.message);
        let no_agents = system_components_check(Some(Ok(Some(ds(1)))), Ok(Some(dns(1))), Some(Ok(None)), 1);
        assert!(no_agents.message.contains("konnectivity-agent is missing"), "{}", no_agents.message);
        let off = system_components_check(None, Ok(Some(dns(1))), None, 1);
        assert_eq!(off.status, ConditionStatus::True, "a shoot without kube-proxy expects none: {}", off.message);
        assert!(off.message.contains("kube-proxy is turned off"), "{}", off.message);
    }

    fn node(ready: &str) -> Node {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "n"}, "status": {"conditions": [{"type": "Ready", "status": ready}]}})).unwrap()
    }

    #[test]
    fn node_readiness() {
        assert_eq!(nodes_check(&[node("True")], 1).status, ConditionStatus::True);
        let missing = nodes_check(&[], 1);
        assert_eq!((missing.status, missing.reason.as_str()), (ConditionStatus::False, "MissingNodes"));
        let not_ready = nodes_check(&[node("True"), node("False")], 1);
        assert_eq!((not_ready.status, not_ready.reason.as_str()), (ConditionStatus::False, "NodesNotReady"));
        assert_eq!(nodes_check(&[], 0).status, ConditionStatus::True, "no pools, no nodes expected");
    }

    #[test]
    fn a_restore_from_backups_is_reported_and_other_outcomes_are_not() {
        let pod = |message: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "etcd-main-0"},
                "status": {"initContainerStatuses": [
                    {"name": "data-dir", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
                     "state": {"terminated": {"exitCode": 0}}},
                    {"name": "restore", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
                     "state": {"terminated": {"exitCode": 0, "message": message, "finishedAt": "2026-11-28T10:00:00Z"}}},
                ]},
            }))
            .unwrap()
        };
        let restored = "restored from Full-00000000-00000100-1795000000.db and 3 delta snapshots up to revision 180";
        let note = restore_note(&[pod(restored)]).unwrap();
        assert!(
            note.starts_with("etcd-main-0 was restored from its backups at 2026-11-28T10:00:00Z: restored from Full-"),
            "{note}"
        );
        assert_eq!(restore_note(&[pod("the data directory holds an etcd member; nothing restored")]), None);
        assert_eq!(restore_note(&[pod("no data directory and no backup; etcd starts empty")]), None);
        assert_eq!(restore_note(&[]), None);
    }

    #[test]
    fn hibernation_is_healthy() {
        assert!(hibernated().iter().all(|c| c.status == ConditionStatus::True && c.reason == "Hibernated"));
        assert_eq!(hibernated().len(), 4);
    }
}
