//! Readiness of workloads as the kubelet and controllers report it (pure).

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};

/// A Deployment is rolled out when the controller saw the latest generation and every desired
/// replica is updated and available.
pub fn deployment_rolled_out(d: &Deployment) -> Result<(), String> {
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = d.status.clone().unwrap_or_default();
    if status.observed_generation.unwrap_or(0) < d.metadata.generation.unwrap_or(0) {
        return Err("the Deployment controller has not seen the latest generation".into());
    }
    let (updated, available, total) =
        (status.updated_replicas.unwrap_or(0), status.available_replicas.unwrap_or(0), status.replicas.unwrap_or(0));
    if updated < want || available < want || total > want {
        return Err(format!("{updated}/{want} updated, {available}/{want} available, {total} total"));
    }
    Ok(())
}

/// A StatefulSet is ready when every desired replica is ready and on the current revision.
pub fn statefulset_ready(s: &StatefulSet) -> Result<(), String> {
    let want = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = s.status.clone().unwrap_or_default();
    if status.observed_generation.unwrap_or(0) < s.metadata.generation.unwrap_or(0) {
        return Err("the StatefulSet controller has not seen the latest generation".into());
    }
    let ready = status.ready_replicas.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    if ready < want || (want > 0 && updated < want) || status.replicas > want {
        return Err(format!("{ready}/{want} ready, {updated}/{want} updated, {} total", status.replicas));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(generation: i64, replicas: i32, status: serde_json::Value) -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "d", "generation": generation},
            "spec": {"replicas": replicas, "selector": {}, "template": {}},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn deployment_rollout_rules() {
        let ok =
            serde_json::json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1});
        assert_eq!(deployment_rolled_out(&deployment(2, 1, ok.clone())), Ok(()));
        assert!(deployment_rolled_out(&deployment(3, 1, ok)).is_err(), "stale generation");
        let surging =
            serde_json::json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1});
        assert!(deployment_rolled_out(&deployment(2, 1, surging)).is_err(), "old pod still there");
        let zero = serde_json::json!({"observedGeneration": 2});
        assert_eq!(deployment_rolled_out(&deployment(2, 0, zero)), Ok(()), "scaled to zero is rolled out");
    }

    #[test]
    fn statefulset_rules() {
        let sts = |ready: i32, replicas: i32| -> StatefulSet {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "s", "generation": 1},
                "spec": {"replicas": 1, "selector": {}, "template": {}, "serviceName": "x"},
                "status": {"observedGeneration": 1, "replicas": replicas, "readyReplicas": ready, "updatedReplicas": ready},
            }))
            .unwrap()
        };
        assert_eq!(statefulset_ready(&sts(1, 1)), Ok(()));
        assert!(statefulset_ready(&sts(0, 1)).is_err());
    }
}
