//! kube-apiserver after etcd was restored from backups. A restore after an abrupt loss brings
//! etcd back at a lower revision than the API server last saw, and kube-apiserver's watch cache
//! waits for revisions it has seen: lists from the cache and watches stay behind, so the
//! controllers and kubelets of the shoot would not see new writes until etcd passes the old
//! revision. The care controller therefore restarts (deletes, for their Deployment to replace)
//! the kube-apiserver pods that started before the restore finished, once per restore.
//! [`restored_at`] and [`started_before`] decide; [`restart`] does it.

use crate::components::etcd_backup;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Preconditions};
use std::sync::Arc;

/// Pure: when the latest restore from backups (or a final snapshot) of these etcd pods finished:
/// their `restore` init container ended with a message that starts "restored from".
pub fn restored_at(etcd_pods: &[Arc<Pod>]) -> Option<Time> {
    etcd_pods
        .iter()
        .filter_map(|pod| {
            let statuses = pod.status.as_ref()?.init_container_statuses.as_ref()?;
            let restore = statuses.iter().find(|c| c.name == etcd_backup::RESTORE_CONTAINER)?;
            let done = restore.state.as_ref()?.terminated.as_ref()?;
            done.message.as_deref().filter(|m| m.starts_with("restored from"))?;
            done.finished_at.clone()
        })
        .max_by_key(|t| t.0)
}

/// Pure: the pods (name, UID) created before `at` and not already being deleted.
pub fn started_before(pods: &[Pod], at: &Time) -> Vec<(String, String)> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.metadata.creation_timestamp.as_ref().is_some_and(|c| c.0 < at.0))
        .filter_map(|p| Some((p.metadata.name.clone()?, p.metadata.uid.clone()?)))
        .collect()
}

/// Deletes the kube-apiserver pods of `namespace` that started before `at` (each only if it is
/// still the pod that was listed); returns their names.
pub async fn restart(seed: &kube::Client, namespace: &str, at: &Time) -> Result<Vec<String>, kube::Error> {
    let pods: Api<Pod> = Api::namespaced(seed.clone(), namespace);
    let selector = crate::components::kube_apiserver::pod_selector();
    let listed = pods.list(&ListParams::default().labels(&selector)).await?.items;
    let mut restarted = Vec::new();
    for (name, uid) in started_before(&listed, at) {
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: Some(uid), resource_version: None }),
            ..Default::default()
        };
        match pods.delete(&name, &params).await {
            Ok(_) => restarted.push(name),
            // Gone or replaced meanwhile: nothing to restart.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(restarted)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report

    use super::*;

    fn time(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn etcd(message: &str, finished: &str) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "etcd-main-0"},
                "status": {"initContainerStatuses": [
                    {"name": "data-dir", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                     "state": {"terminated": {"exitCode": 0, "finishedAt": "2026-11-28T09:00:00Z"}}},
                    {"name": etcd_backup::RESTORE_CONTAINER, "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                     "state": {"terminated": {"exitCode": 0, "message": message, "finishedAt": finished}}}
                ]}
            }))
            .unwrap(),
        )
    }

    fn apiserver(name: &str, created: &str, deleting: bool) -> Pod {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "uid": format!("uid-{name}"), "creationTimestamp": created}
        }))
        .unwrap();
        if deleting {
            pod.metadata.deletion_timestamp = Some(time("2026-11-28T10:05:00Z"));
        }
        pod
    }

    #[test]
    fn only_a_restore_counts_and_the_latest_one_wins() {
        let restored = "restored from Full-00000000-00000812-1764324000 and 2 delta snapshots up to revision 830";
        assert_eq!(restored_at(&[]), None);
        assert_eq!(
            restored_at(&[etcd("the data directory holds an etcd member; nothing restored", "2026-11-28T10:00:00Z")]),
            None
        );
        assert_eq!(
            restored_at(&[etcd("no data directory and no backup; etcd starts empty", "2026-11-28T10:00:00Z")]),
            None
        );
        let pods = [etcd(restored, "2026-11-28T10:00:00Z"), etcd(restored, "2026-11-28T11:00:00Z")];
        assert_eq!(restored_at(&pods), Some(time("2026-11-28T11:00:00Z")));
    }

    #[test]
    fn api_servers_that_started_before_the_restore_are_restarted_once() {
        let at = time("2026-11-28T10:00:00Z");
        let pods = [
            apiserver("old", "2026-11-28T09:00:00Z", false),
            apiserver("going", "2026-11-28T09:00:00Z", true),
            apiserver("new", "2026-11-28T10:00:30Z", false),
        ];
        assert_eq!(started_before(&pods, &at), vec![("old".to_string(), "uid-old".to_string())]);
        // Their replacements start after the restore: nothing more to do.
        assert!(started_before(&pods[1..], &at).is_empty());
    }
}
