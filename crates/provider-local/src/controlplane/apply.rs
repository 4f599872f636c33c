//! Writing into a shoot only what differs: an object is read first and written (server-side
//! apply, field manager `provider-local/controlplane`) only when the live object does not carry
//! every field we set, or carries the hash of a different intent (so a field we stop setting
//! is removed by the next apply). A reconcile that changes nothing writes nothing, whatever
//! the API server version does with no-op applies.

use crate::common::{apply_params, sha256_hex};
use crate::error::Error;
use crate::node_agent::{Agent, NAMESPACE};
use extension_sdk::k8s_openapi::api::apps::v1::DaemonSet;
use extension_sdk::k8s_openapi::api::core::v1::ServiceAccount;
use extension_sdk::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use extension_sdk::kube::api::{DeleteParams, Patch};
use extension_sdk::kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;

/// Annotation holding a hash of the intent last applied.
pub const INTENT_HASH_ANNOTATION: &str = "provider-local.gardener.cloud/intent-hash";

/// What [`apply`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The live object already was what we want; nothing was sent.
    Unchanged,
    /// The object was created or updated.
    Applied,
    /// An immutable field differed: the object was deleted and created again.
    Replaced,
}

/// True when `live` holds every field of `desired` with the same value (fields the API server
/// added, such as defaults and status, do not matter).
pub fn contains(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d.iter().all(|(k, dv)| l.get(k).is_some_and(|lv| contains(lv, dv))),
        (Value::Array(l), Value::Array(d)) => l.len() == d.len() && l.iter().zip(d).all(|(lv, dv)| contains(lv, dv)),
        (Value::Number(l), Value::Number(d)) => l.as_f64() == d.as_f64(),
        (l, d) => l == d,
    }
}

/// A short digest of an intent (what [`INTENT_HASH_ANNOTATION`] records).
pub fn intent_hash(intent: &Value) -> String {
    sha256_hex(intent.to_string().as_bytes())[..32].to_string()
}

/// Whether `live` is what `intent` (with `hash`) asks for.
pub fn up_to_date(live: &Value, intent: &Value, hash: &str) -> bool {
    live["metadata"]["annotations"][INTENT_HASH_ANNOTATION].as_str() == Some(hash) && contains(live, intent)
}

/// Where a failed call went wrong: an answer of the API server is an error of the call; no
/// answer (connection refused, timeout) means the shoot's API server is not reachable yet,
/// which a retry mends.
fn failed(action: String) -> impl FnOnce(extension_sdk::kube::Error) -> Error {
    move |e| match e {
        extension_sdk::kube::Error::Api(_) => Error::kube(action)(e),
        other => Error::dependency("the shoot's API server", format!("{action}: not reachable: {other}")),
    }
}

/// Applies `obj` through `api` unless the live object is already up to date (see the module
/// documentation). With `replace_if_invalid`, an apply the API server rejects as invalid (an
/// immutable field such as a StorageClass's provisioner differs) deletes the object and
/// creates it again.
pub async fn apply<K>(api: &Api<K>, obj: &K, replace_if_invalid: bool) -> Result<Written, Error>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    apply_as(super::COMPONENT, api, obj, replace_if_invalid).await
}

/// [`apply`] with the field manager `provider-local/<component>` (another actuator's objects).
pub async fn apply_as<K>(component: &str, api: &Api<K>, obj: &K, replace_if_invalid: bool) -> Result<Written, Error>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let name = obj.name_any();
    let what = match obj.namespace() {
        Some(ns) => format!("{} {ns}/{name} in the shoot", K::kind(&())),
        None => format!("{} {name} in the shoot", K::kind(&())),
    };
    let encode = |o: &K| serde_json::to_value(o).map_err(Error::json(format!("encoding {what}")));
    let intent = encode(obj)?;
    let hash = intent_hash(&intent);
    if let Some(live) = api.get_opt(&name).await.map_err(failed(format!("reading {what}")))?
        && up_to_date(&encode(&live)?, &intent, &hash)
    {
        tracing::debug!(object = %what, "up to date");
        return Ok(Written::Unchanged);
    }
    let mut desired = obj.clone();
    desired.annotations_mut().insert(INTENT_HASH_ANNOTATION.into(), hash);
    let params = apply_params(component);
    match api.patch(&name, &params, &Patch::Apply(&desired)).await {
        Ok(_) => {
            tracing::info!(object = %what, "applied");
            Ok(Written::Applied)
        }
        Err(extension_sdk::kube::Error::Api(s)) if replace_if_invalid && s.code == 422 => {
            tracing::info!(object = %what, reason = %s.message, "an immutable field differs; replacing");
            api.delete(&name, &DeleteParams::default()).await.map_err(failed(format!("deleting {what}")))?;
            api.patch(&name, &params, &Patch::Apply(&desired)).await.map_err(failed(format!("applying {what}")))?;
            Ok(Written::Replaced)
        }
        Err(e) => Err(failed(format!("applying {what}"))(e)),
    }
}

/// Applies a node agent's objects ([`Agent`]) into the shoot as `provider-local/<component>`,
/// RBAC first; returns how many were written.
pub async fn apply_agent(shoot: &Client, component: &str, agent: &Agent) -> Result<usize, Error> {
    let written = [
        apply_as(
            component,
            &Api::<ServiceAccount>::namespaced(shoot.clone(), NAMESPACE),
            &agent.service_account,
            false,
        )
        .await?,
        apply_as(component, &Api::<ClusterRole>::all(shoot.clone()), &agent.cluster_role, false).await?,
        apply_as(component, &Api::<ClusterRoleBinding>::all(shoot.clone()), &agent.cluster_role_binding, false).await?,
        apply_as(component, &Api::<DaemonSet>::namespaced(shoot.clone(), NAMESPACE), &agent.daemon_set, false).await?,
    ];
    Ok(written.iter().filter(|w| **w != Written::Unchanged).count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_added_by_the_server_do_not_count_as_a_difference() {
        let intent = json!({"spec": {"replicas": 1, "template": {"containers": [{"name": "a"}]}}});
        let live = json!({"spec": {"replicas": 1.0, "revisionHistoryLimit": 10,
                                   "template": {"containers": [{"name": "a", "imagePullPolicy": "IfNotPresent"}]}},
                          "status": {}});
        assert!(contains(&live, &intent));
        let changed = json!({"spec": {"replicas": 2, "template": {"containers": [{"name": "a"}]}}});
        assert!(!contains(&live, &changed));
        let extra = json!({"spec": {"template": {"containers": [{"name": "a"}, {"name": "b"}]}}});
        assert!(!contains(&live, &extra), "list lengths must match");
    }

    #[test]
    fn an_object_is_up_to_date_only_with_the_same_intent_hash() {
        let old = json!({"metadata": {"name": "x"}, "data": {"a": "1", "b": "2"}});
        let old_hash = intent_hash(&old);
        assert_eq!(old_hash.len(), 32);
        let mut live = json!({"metadata": {"name": "x", "annotations": {INTENT_HASH_ANNOTATION: old_hash}},
                              "data": {"a": "1", "b": "2"}});
        assert!(up_to_date(&live, &old, &old_hash));
        // A field we no longer set (`b`): the live object still contains the new intent, but
        // only a new apply removes `b`, and the new intent's hash differs.
        let new = json!({"metadata": {"name": "x"}, "data": {"a": "1"}});
        assert!(contains(&live, &new));
        assert!(!up_to_date(&live, &new, &intent_hash(&new)));
        live["metadata"]["annotations"] = json!({});
        assert!(!up_to_date(&live, &old, &old_hash), "no hash: written once to record it");
    }
}
