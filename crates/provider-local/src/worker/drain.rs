//! Draining a machine's Node in the shoot, as `kubectl drain` and the machine controller do:
//! cordon it, then evict every pod that has to leave through the Eviction API, so that
//! PodDisruptionBudgets decide how fast workloads move. DaemonSet pods and mirror (static) pods
//! stay, as `kubectl drain --ignore-daemonsets` leaves them; pods that have finished are left to
//! the Node's removal. Pods with local storage (emptyDir) are evicted too: the machine and its
//! disks go away anyway (`--delete-emptydir-data`). When the drain timeout has passed, the pods
//! still there are deleted without asking their budget, and the machine goes.

use extension_sdk::k8s_openapi::api::core::v1::{Node, Pod};
use extension_sdk::kube::api::{DeleteParams, EvictParams, ListParams, Patch, PatchParams};
use extension_sdk::kube::{Api, Client, ResourceExt};

/// The annotation on a machine Pod (in the seed) with the time its drain began (RFC 3339).
pub const ANNOTATION_DRAIN_STARTED: &str = "machine.provider-local.gardener.cloud/drain-started";
/// `seconds` since the epoch as RFC 3339, as [`ANNOTATION_DRAIN_STARTED`] and the Worker's status
/// write times.
pub fn rfc3339(seconds: i64) -> String {
    extension_sdk::k8s_openapi::jiff::Timestamp::from_second(seconds)
        .unwrap_or(extension_sdk::k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

/// The seconds since the epoch of an RFC 3339 time ([`rfc3339`]'s inverse); `None` when it is not
/// one.
pub fn seconds(rfc3339: &str) -> Option<i64> {
    rfc3339.parse::<extension_sdk::k8s_openapi::jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// The annotation of a mirror pod (the API's copy of a static pod).
const MIRROR: &str = "kubernetes.io/config.mirror";

/// Whether a drain has to move `pod` off its node.
pub fn must_leave(pod: &Pod) -> bool {
    let daemon = pod.owner_references().iter().any(|o| o.kind == "DaemonSet" && o.controller == Some(true));
    let mirror = pod.annotations().contains_key(MIRROR);
    let finished = matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"));
    !daemon && !mirror && !finished
}

/// Where a drain stands after one round of evictions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Pods (`namespace/name`) still on the node that have to leave, terminating ones included.
    pub remaining: Vec<String>,
    /// Pods whose eviction was refused, with the API server's reason (a PodDisruptionBudget).
    pub blocked: Vec<String>,
}

fn key(pod: &Pod) -> String {
    format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any())
}

/// Cordons `node` and asks for the eviction of every pod that has to leave it and is not
/// terminating yet. A Node that does not exist (a machine that never registered) has nothing to
/// drain.
pub async fn evict(shoot: &Client, node: &str) -> Result<Progress, extension_sdk::kube::Error> {
    let nodes: Api<Node> = Api::all(shoot.clone());
    let Some(found) = nodes.get_opt(node).await? else { return Ok(Progress::default()) };
    if !found.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false) {
        let cordon = serde_json::json!({"spec": {"unschedulable": true}});
        nodes.patch(node, &PatchParams::default(), &Patch::Merge(&cordon)).await?;
        tracing::info!(node, "cordoned");
    }
    let pods: Api<Pod> = Api::all(shoot.clone());
    let on_node = pods.list(&ListParams::default().fields(&format!("spec.nodeName={node}"))).await?;
    let mut progress = Progress::default();
    for pod in on_node.items.iter().filter(|p| must_leave(p)) {
        progress.remaining.push(key(pod));
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let api: Api<Pod> = Api::namespaced(shoot.clone(), &pod.namespace().unwrap_or_default());
        match api.evict(&pod.name_any(), &EvictParams::default()).await {
            Ok(_) => tracing::info!(node, pod = key(pod), "evicted"),
            Err(extension_sdk::kube::Error::Api(e)) if e.code == 404 => {}
            // 429: a PodDisruptionBudget allows no disruption now; 500: more than one budget.
            Err(extension_sdk::kube::Error::Api(e)) if e.code == 429 || e.code == 500 => {
                progress.blocked.push(format!("{}: {}", key(pod), e.message));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(progress)
}

/// After the drain timeout: deletes the pods (`namespace/name`) still on the node, whatever
/// their budgets say.
pub async fn force(shoot: &Client, node: &str, pods: &[String]) -> Result<(), extension_sdk::kube::Error> {
    for pod in pods {
        let Some((namespace, name)) = pod.split_once('/') else { continue };
        let api: Api<Pod> = Api::namespaced(shoot.clone(), namespace);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => tracing::warn!(node, pod, "drain timed out: deleted the pod"),
            Err(extension_sdk::kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::k8s_openapi::api::core::v1::PodStatus;
    use extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use extension_sdk::kube::api::ObjectMeta;

    fn pod(owner: Option<&str>, annotations: &[(&str, &str)], phase: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                owner_references: owner.map(|kind| {
                    vec![OwnerReference { kind: kind.into(), controller: Some(true), ..Default::default() }]
                }),
                annotations: Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..Default::default()
            },
            status: Some(PodStatus { phase: Some(phase.into()), ..Default::default() }),
            ..Default::default()
        }
    }

    #[test]
    fn drain_times_read_back_as_written() {
        assert_eq!(rfc3339(1_800_000_000), "2027-01-15T08:00:00Z");
        assert_eq!(seconds(&rfc3339(1_800_000_000)), Some(1_800_000_000));
        assert_eq!(seconds("yesterday"), None);
    }

    #[test]
    fn a_drain_moves_workloads_and_leaves_daemons_mirrors_and_finished_pods() {
        assert!(must_leave(&pod(Some("ReplicaSet"), &[], "Running")));
        assert!(must_leave(&pod(None, &[], "Pending")), "a bare pod leaves too, as the machine controller drains");
        assert!(!must_leave(&pod(Some("DaemonSet"), &[], "Running")));
        assert!(!must_leave(&pod(None, &[(MIRROR, "x")], "Running")));
        assert!(!must_leave(&pod(Some("Job"), &[], "Succeeded")));
    }
}
