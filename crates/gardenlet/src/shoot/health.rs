//! The shoot's health conditions, from real checks: the API server answers `/readyz`; the
//! control-plane workloads are rolled out; every expected node is registered and Ready; the
//! system resources gardenlet applied to the shoot are present. A hibernated shoot reports
//! its conditions as healthy with reason `Hibernated`: being asleep is not a failure.

use super::checks;
use super::context::OperationContext;
use crate::components::{etcd, kube_apiserver, kube_controller_manager, kube_scheduler};
use api::common::ConditionStatus;
use api::helpers::constants::conditions::{
    API_SERVER_AVAILABLE, CONTROL_PLANE_HEALTHY, EVERY_NODE_READY, SYSTEM_COMPONENTS_HEALTHY,
};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Api;
use kube::api::ListParams;

/// One computed condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub type_: &'static str,
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
}

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

async fn control_plane(ctx: &OperationContext) -> Check {
    let deployments: Api<Deployment> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    let mut problems = Vec::new();
    for name in [kube_apiserver::NAME, kube_controller_manager::NAME, kube_scheduler::NAME] {
        match deployments.get_opt(name).await {
            Ok(Some(d)) => {
                if let Err(e) = checks::deployment_rolled_out(&d) {
                    problems.push(format!("{name}: {e}"));
                }
            }
            Ok(None) => problems.push(format!("{name}: missing")),
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
    let sts: Api<StatefulSet> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    match sts.get_opt(etcd::NAME).await {
        Ok(Some(s)) => {
            if let Err(e) = checks::statefulset_ready(&s) {
                problems.push(format!("{}: {e}", etcd::NAME));
            }
        }
        Ok(None) => problems.push(format!("{}: missing", etcd::NAME)),
        Err(e) => problems.push(format!("{}: {e}", etcd::NAME)),
    }
    let message =
        if problems.is_empty() { "All control plane components are healthy.".to_string() } else { problems.join("; ") };
    check(CONTROL_PLANE_HEALTHY, problems.is_empty(), "ControlPlaneRunning", "ControlPlaneUnhealthy", message)
}

/// Computes every condition (never fails: an unreachable API is itself the finding).
pub async fn conditions(ctx: &OperationContext) -> Vec<Check> {
    if ctx.values.hibernated {
        return hibernated();
    }
    let mut out = vec![control_plane(ctx).await];
    let shoot = match super::reconcile::shoot_client(ctx).await {
        Ok(c) => c,
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
    let expected: i32 = ctx.shoot.spec.provider.workers.iter().map(|w| w.minimum).sum();
    out.push(match Api::<Node>::all(shoot.clone()).list(&ListParams::default()).await {
        Ok(nodes) => nodes_check(&nodes.items, expected),
        Err(e) => check(EVERY_NODE_READY, false, "", "NodeListFailed", format!("listing nodes: {e}")),
    });
    let info = Api::<ConfigMap>::namespaced(shoot.clone(), "kube-public").get_opt("cluster-info").await;
    let rbac = Api::<ClusterRoleBinding>::all(shoot).get_opt("kubeadm:kubelet-bootstrap").await;
    out.push(match (info, rbac) {
        (Ok(Some(_)), Ok(Some(_))) => check(
            SYSTEM_COMPONENTS_HEALTHY,
            true,
            "SystemComponentsRunning",
            "",
            "The bootstrap RBAC and cluster-info are in place.".into(),
        ),
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn hibernation_is_healthy() {
        assert!(hibernated().iter().all(|c| c.status == ConditionStatus::True && c.reason == "Hibernated"));
        assert_eq!(hibernated().len(), 4);
    }
}
