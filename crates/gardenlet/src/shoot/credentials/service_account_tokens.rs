//! The token Secrets of a service-account key rotation, inside the shoot. On Kubernetes 1.20
//! pods get their tokens from Secrets of type `kubernetes.io/service-account-token`, signed by
//! kube-controller-manager's tokens controller; those signed with the old key stop working
//! when the rotation completes, and deleting one revokes its token at once (kube-apiserver
//! looks the Secret up). So, as Gardener does:
//!
//! * **phase one** ([`prepare`]), once kube-controller-manager signs with the new key: every
//!   ServiceAccount with a token from before the rotation gets a new token Secret, put first in
//!   its `secrets` (the ServiceAccount admission mounts the first into new pods); the tokens
//!   controller fills it with a token of the new key. The old Secrets stay, so running pods keep
//!   working. The system components gardenlet runs in the shoot (kube-proxy, cluster DNS) are
//!   restarted onto the new tokens; the owner restarts their own pods before completing.
//! * **phase two** ([`complete`]): the token Secrets from before the rotation are deleted.
//!
//! [`stale`], [`needing_new_tokens`] and [`restart_patch`] are pure.

use crate::components::{cluster_dns, kube_proxy};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ObjectReference, Secret, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The type of the token Secrets kube-controller-manager's tokens controller issues.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming a token Secret's ServiceAccount.
pub const SERVICE_ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";
/// The pod-template annotation that restarts a system component for a rotation.
pub const RESTARTED_FOR: &str = "credentials.gardener.cloud/service-account-key-rotation";
/// The field manager of that annotation, apart from gardenlet's own apply so that the next
/// apply of the component leaves it alone (and the pods are not restarted again).
const FIELD_MANAGER: &str = "gardenlet-service-account-key-rotation";

/// `time` to the whole second, as the API server stores it (the status read on a retry has no
/// fraction, the operation that began the rotation has one).
fn whole_second(time: &Time) -> Timestamp {
    Timestamp::from_second(time.0.as_second()).unwrap_or(time.0)
}

/// Pure: whether `secret` is a token Secret issued before the rotation began at `since` (in the
/// same second counts as before: kube-controller-manager took longer to restart).
pub fn stale(secret: &Secret, since: &Time) -> bool {
    secret.type_.as_deref() == Some(TOKEN_SECRET_TYPE)
        && secret.metadata.creation_timestamp.as_ref().is_some_and(|created| created.0 <= whole_second(since))
}

/// Pure: the ServiceAccounts, as (namespace, name), that have a token Secret from before the
/// rotation began at `since` and none from after (so a retry creates no second one).
pub fn needing_new_tokens(token_secrets: &[Secret], since: &Time) -> BTreeSet<(String, String)> {
    let owner = |s: &Secret| {
        let name = s.annotations().get(SERVICE_ACCOUNT_NAME)?.clone();
        Some((s.namespace().unwrap_or_default(), name))
    };
    let tokens = token_secrets.iter().filter(|s| s.type_.as_deref() == Some(TOKEN_SECRET_TYPE));
    let fresh: BTreeSet<_> = tokens.clone().filter(|s| !stale(s, since)).filter_map(owner).collect();
    tokens.filter(|s| stale(s, since)).filter_map(owner).filter(|sa| !fresh.contains(sa)).collect()
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
pub enum TokenError {
    #[error("listing the shoot's token Secrets")]
    List(#[source] kube::Error),
    #[error("creating a token Secret for ServiceAccount {namespace}/{name}")]
    Create {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("putting the new token Secret first in ServiceAccount {namespace}/{name}")]
    Reference {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
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

async fn token_secrets(shoot: &kube::Client) -> Result<Vec<Secret>, TokenError> {
    let params = ListParams::default().fields(&format!("type={TOKEN_SECRET_TYPE}"));
    Ok(Api::<Secret>::all(shoot.clone()).list(&params).await.map_err(TokenError::List)?.items)
}

/// Phase one: a new token Secret for every ServiceAccount whose token is from before `since`,
/// first in its `secrets`; then the system components restart. Returns how many were created.
pub async fn prepare(shoot: &kube::Client, since: &Time) -> Result<usize, TokenError> {
    let wanted = needing_new_tokens(&token_secrets(shoot).await?, since);
    for (namespace, name) in &wanted {
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"generateName": format!("{name}-token-"), "annotations": {SERVICE_ACCOUNT_NAME: name}},
            "type": TOKEN_SECRET_TYPE,
        }))
        .map_err(|e| TokenError::Create {
            namespace: namespace.clone(),
            name: name.clone(),
            source: kube::Error::SerdeError(e),
        })?;
        let created = Api::<Secret>::namespaced(shoot.clone(), namespace)
            .create(&PostParams::default(), &secret)
            .await
            .map_err(|source| TokenError::Create { namespace: namespace.clone(), name: name.clone(), source })?;
        reference_first(shoot, namespace, name, &created.name_any()).await.map_err(|source| TokenError::Reference {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        })?;
    }
    restart_system_components(shoot, since).await?;
    Ok(wanted.len())
}

/// Puts `secret` first in the ServiceAccount's `secrets`, with the resourceVersion read (the
/// tokens controller writes the same list: a conflict fails the task, and the retry reads again).
async fn reference_first(shoot: &kube::Client, namespace: &str, name: &str, secret: &str) -> Result<(), kube::Error> {
    let api = Api::<ServiceAccount>::namespaced(shoot.clone(), namespace);
    let sa = api.get(name).await?;
    let mut secrets = vec![ObjectReference { name: Some(secret.to_string()), ..Default::default() }];
    secrets.extend(sa.secrets.clone().unwrap_or_default().into_iter().filter(|r| r.name.as_deref() != Some(secret)));
    let patch = json!({"metadata": {"resourceVersion": sa.resource_version()}, "secrets": secrets});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
}

async fn restart_system_components(shoot: &kube::Client, since: &Time) -> Result<(), TokenError> {
    let proxy = Api::<DaemonSet>::namespaced(shoot.clone(), kube_proxy::NAMESPACE);
    // A shoot with kube-proxy turned off has none to restart (an apply would try to create it).
    let exists = proxy.get_opt(kube_proxy::NAME).await.map_err(|source| TokenError::Restart {
        kind: "DaemonSet",
        namespace: kube_proxy::NAMESPACE,
        name: kube_proxy::NAME,
        source,
    })?;
    if exists.is_some() {
        restart(&proxy, "DaemonSet", kube_proxy::NAMESPACE, kube_proxy::NAME, since).await?;
    }
    let dns = Api::<Deployment>::namespaced(shoot.clone(), cluster_dns::NAMESPACE);
    restart(&dns, "Deployment", cluster_dns::NAMESPACE, cluster_dns::NAME, since).await
}

/// Restarts the pods of one apps/v1 workload for the rotation begun at `since`.
async fn restart<K>(
    api: &Api<K>,
    kind: &'static str,
    namespace: &'static str,
    name: &'static str,
    since: &Time,
) -> Result<(), TokenError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let patch = restart_patch("apps/v1", kind, name, since);
    api.patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&patch))
        .await
        .map(|_| ())
        .map_err(|source| TokenError::Restart { kind, namespace, name, source })
}

/// Phase two: deletes the token Secrets from before `since` (their key is gone). Returns how
/// many were deleted.
pub async fn complete(shoot: &kube::Client, since: &Time) -> Result<usize, TokenError> {
    let mut deleted = 0;
    for secret in token_secrets(shoot).await?.iter().filter(|s| stale(s, since)) {
        let namespace = secret.namespace().unwrap_or_default();
        match Api::<Secret>::namespaced(shoot.clone(), &namespace)
            .delete(&secret.name_any(), &DeleteParams::default())
            .await
        {
            Ok(_) => deleted += 1,
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(source) => return Err(TokenError::Delete { namespace, name: secret.name_any(), source }),
        }
    }
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
        token("default", "sa", created, type_)
    }

    fn token(namespace: &str, sa: &str, created: &str, type_: &str) -> Secret {
        serde_json::from_value(json!({
            "metadata": {
                "name": format!("{sa}-{created}"), "namespace": namespace, "creationTimestamp": created,
                "annotations": {SERVICE_ACCOUNT_NAME: sa},
            },
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
    fn a_service_account_gets_one_new_token_and_only_if_its_token_is_old() {
        let since = time("2026-11-25T10:00:00Z");
        let (old, new) = ("2026-11-25T09:00:00Z", "2026-11-25T10:01:00Z");
        let secrets = [
            token("default", "default", old, TOKEN_SECRET_TYPE),
            token("kube-system", "kube-proxy", old, TOKEN_SECRET_TYPE),
            token("kube-system", "kube-proxy", new, TOKEN_SECRET_TYPE), // a retry: already has one
            token("kube-system", "created-later", new, TOKEN_SECRET_TYPE),
            token("default", "not-a-token", old, "Opaque"),
        ];
        let wanted = needing_new_tokens(&secrets, &since);
        assert_eq!(wanted, BTreeSet::from([("default".to_string(), "default".to_string())]));
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
