//! Phase one of a service-account key rotation, inside the shoot: the token Secrets the
//! shoot's kube-controller-manager issued (type `kubernetes.io/service-account-token`, the only
//! tokens pods get on Kubernetes 1.20) are signed with the old key and stop working when the
//! rotation completes. Gardener creates new ones in phase one; so does gardenlet: it deletes
//! every token Secret created before the rotation began, the tokens controller of
//! kube-controller-manager (now signing with the new key) issues a new one for each
//! ServiceAccount, and the system components gardenlet runs in the shoot (kube-proxy, cluster
//! DNS) are restarted so their pods mount the new tokens. Pods of the shoot's owner that mount
//! a token must be restarted by the owner before completing (docs/operations.md).
//!
//! [`stale`] and [`restart_patch`] are pure; [`renew`] is the flow task's I/O.

use crate::components::{cluster_dns, kube_proxy};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

/// The type of the token Secrets kube-controller-manager's tokens controller issues.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// The pod-template annotation that restarts a system component for a rotation.
pub const RESTARTED_FOR: &str = "credentials.gardener.cloud/service-account-key-rotation";
/// The field manager of that annotation, apart from gardenlet's own apply so that the next
/// apply of the component leaves it alone (and the pods are not restarted again).
const FIELD_MANAGER: &str = "gardenlet-service-account-key-rotation";

/// Pure: whether `secret` is a token Secret issued before the rotation began at `since` (in the
/// same second counts as before: kube-controller-manager took longer to restart).
pub fn stale(secret: &Secret, since: &Time) -> bool {
    secret.type_.as_deref() == Some(TOKEN_SECRET_TYPE)
        && secret.metadata.creation_timestamp.as_ref().is_some_and(|created| created.0 <= whole_second(since))
}

/// `time` to the whole second, as the API server stores it (the status read on a retry has no
/// fraction, the operation that began the rotation has one).
fn whole_second(time: &Time) -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::from_second(time.0.as_second()).unwrap_or(time.0)
}

/// Pure: the server-side apply patch that restarts a workload's pods for the rotation begun at
/// `since` (the same value on a retry: no second restart).
pub fn restart_patch(api_version: &str, kind: &str, name: &str, since: &Time) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"template": {"metadata": {"annotations": {RESTARTED_FOR: whole_second(since).to_string()}}}},
    })
}

/// Why renewing the tokens failed.
#[derive(Debug, thiserror::Error)]
pub enum RenewError {
    #[error("listing the shoot's token Secrets")]
    List(#[source] kube::Error),
    #[error("deleting token Secret {namespace}/{name}")]
    Delete {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("restarting {kind} {namespace}/{name}")]
    Restart {
        kind: &'static str,
        namespace: &'static str,
        name: &'static str,
        #[source]
        source: kube::Error,
    },
}

/// Deletes the shoot's token Secrets issued before `since` and restarts the system components.
/// Returns how many Secrets were deleted.
pub async fn renew(shoot: &kube::Client, since: &Time) -> Result<usize, RenewError> {
    let all: Api<Secret> = Api::all(shoot.clone());
    let params = ListParams::default().fields(&format!("type={TOKEN_SECRET_TYPE}"));
    let mut deleted = 0;
    for secret in all.list(&params).await.map_err(RenewError::List)?.items.iter().filter(|s| stale(s, since)) {
        let namespace = secret.namespace().unwrap_or_default();
        let api: Api<Secret> = Api::namespaced(shoot.clone(), &namespace);
        match api.delete(&secret.name_any(), &DeleteParams::default()).await {
            Ok(_) => deleted += 1,
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(source) => return Err(RenewError::Delete { namespace, name: secret.name_any(), source }),
        }
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let patch = restart_patch("apps/v1", "DaemonSet", kube_proxy::NAME, since);
    Api::<DaemonSet>::namespaced(shoot.clone(), kube_proxy::NAMESPACE)
        .patch(kube_proxy::NAME, &params, &Patch::Apply(&patch))
        .await
        .map_err(|source| RenewError::Restart {
            kind: "DaemonSet",
            namespace: kube_proxy::NAMESPACE,
            name: kube_proxy::NAME,
            source,
        })?;
    let patch = restart_patch("apps/v1", "Deployment", cluster_dns::NAME, since);
    Api::<Deployment>::namespaced(shoot.clone(), cluster_dns::NAMESPACE)
        .patch(cluster_dns::NAME, &params, &Patch::Apply(&patch))
        .await
        .map_err(|source| RenewError::Restart {
            kind: "Deployment",
            namespace: cluster_dns::NAMESPACE,
            name: cluster_dns::NAME,
            source,
        })?;
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;

    fn time(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn secret(type_: &str, created: &str) -> Secret {
        serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "default", "creationTimestamp": created},
            "type": type_,
        }))
        .unwrap()
    }

    #[test]
    fn only_token_secrets_from_before_the_rotation_are_stale() {
        let since = time("2026-11-25T10:00:00Z");
        assert!(stale(&secret(TOKEN_SECRET_TYPE, "2026-11-25T09:59:59Z"), &since));
        assert!(stale(&secret(TOKEN_SECRET_TYPE, "2026-11-25T10:00:00Z"), &since), "the same second");
        let fraction = time("2026-11-25T10:00:00.5Z");
        assert!(stale(&secret(TOKEN_SECRET_TYPE, "2026-11-25T10:00:00Z"), &fraction), "the same second");
        assert!(!stale(&secret(TOKEN_SECRET_TYPE, "2026-11-25T10:00:01Z"), &fraction));
        assert!(!stale(&secret(TOKEN_SECRET_TYPE, "2026-11-25T10:00:01Z"), &since), "issued with the new key");
        assert!(!stale(&secret("Opaque", "2026-11-25T09:00:00Z"), &since), "not a token");
    }

    #[test]
    fn the_restart_annotation_names_the_rotation_so_a_retry_changes_nothing() {
        let since = time("2026-11-25T10:00:00Z");
        let a = restart_patch("apps/v1", "DaemonSet", "kube-proxy", &since);
        assert_eq!(a, restart_patch("apps/v1", "DaemonSet", "kube-proxy", &since));
        assert_eq!(a["spec"]["template"]["metadata"]["annotations"][RESTARTED_FOR], "2026-11-25T10:00:00Z");
        let later = restart_patch("apps/v1", "DaemonSet", "kube-proxy", &time("2026-12-01T00:00:00Z"));
        assert_ne!(a, later, "the next rotation restarts again");
        let fraction = restart_patch("apps/v1", "DaemonSet", "kube-proxy", &time("2026-11-25T10:00:00.75Z"));
        assert_eq!(a, fraction, "the time as stored in the status, without a fraction");
    }
}
