//! Where a highly available control plane's replicas may run and how many may be down at once
//! (`spec.controlPlane.highAvailability`, as Gardener's high-availability webhook and etcd-druid
//! set them): no two replicas of a component on one node, for `zone` no two in one zone, and a
//! PodDisruptionBudget of one for each component. Without a failure tolerance, neither.

use api::core::shoot::settings::FailureToleranceType;
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

pub const HOSTNAME_KEY: &str = "kubernetes.io/hostname";
pub const ZONE_KEY: &str = "topology.kubernetes.io/zone";

/// etcd's members in a highly available control plane (a quorum survives the loss of one).
pub const HA_ETCD_MEMBERS: i32 = 3;

/// Replicas of kube-apiserver, kube-controller-manager and kube-scheduler in a highly
/// available control plane (the controllers elect a leader; a second replica takes over).
pub const HA_REPLICAS: i32 = 2;

/// The spread of a component's pods (`selector`): `DoNotSchedule`, so a replica that cannot
/// be placed apart stays Pending rather than sharing a failure domain with another.
pub fn spread(
    tolerance: Option<FailureToleranceType>,
    selector: &LabelSelector,
) -> Option<Vec<TopologySpreadConstraint>> {
    let constraint = |key: &str| TopologySpreadConstraint {
        max_skew: 1,
        topology_key: key.to_string(),
        when_unsatisfiable: "DoNotSchedule".to_string(),
        label_selector: Some(selector.clone()),
        ..Default::default()
    };
    match tolerance? {
        FailureToleranceType::Node => Some(vec![constraint(HOSTNAME_KEY)]),
        FailureToleranceType::Zone => Some(vec![constraint(HOSTNAME_KEY), constraint(ZONE_KEY)]),
    }
}

/// The component's PodDisruptionBudget (`policy/v1beta1`, which the seeds' 1.20 serves; the
/// component's own `metadata`): one pod at a time may be evicted. `None` without a failure
/// tolerance.
pub fn disruption_budget(
    tolerance: Option<FailureToleranceType>,
    metadata: ObjectMeta,
    selector: &LabelSelector,
) -> Option<serde_json::Value> {
    tolerance?;
    Some(serde_json::json!({
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata,
        "spec": {"maxUnavailable": 1, "selector": selector},
    }))
}
