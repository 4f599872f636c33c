//! The I/O helpers flow tasks share: applying objects, waiting for workloads, deploying
//! extension objects only when something changed. A wait for an extension object that no
//! installed controller serves ends early with an error saying so ([`served`]).

pub mod served;

use crate::flow::TaskError;
use crate::shoot::operation::context::OperationContext;
use api::helpers::extension_operation::check_ready;
use extension_sdk::deployer::DeployError;
use extension_sdk::kinds::ExtensionResource;
use k8s_openapi::NamespaceResourceScope;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

pub const FIELD_MANAGER: &str = "gardenlet";

/// Wraps an async task function over the shared context into a flow task.
pub fn t<F, Fut>(ctx: &Arc<OperationContext>, f: F) -> impl Fn() -> Fut + Send + Sync + 'static
where
    F: Fn(Arc<OperationContext>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), TaskError>> + Send + 'static,
{
    let ctx = ctx.clone();
    move || f(ctx.clone())
}

/// A task error from any error, with the whole chain as message.
pub fn task_err(e: impl std::error::Error + 'static) -> TaskError {
    TaskError::new(&e)
}

/// A task error from a deploy error, carrying the extension's error codes.
pub fn deploy_err(e: DeployError) -> TaskError {
    let codes = e.codes().to_vec();
    TaskError::new(&e).with_codes(codes)
}

/// Annotation holding a hash of the last applied intent.
pub const INTENT_HASH_ANNOTATION: &str = "gardener.cloud/intent-hash";

/// True when `live` holds every field of `desired` with the same value (fields the server
/// added, such as defaults and status, do not matter).
pub fn contains(live: &serde_json::Value, desired: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d.iter().all(|(k, dv)| l.get(k).is_some_and(|lv| contains(lv, dv))),
        (Value::Array(l), Value::Array(d)) => l.len() == d.len() && l.iter().zip(d).all(|(lv, dv)| contains(lv, dv)),
        (Value::Number(l), Value::Number(d)) => l.as_f64() == d.as_f64(),
        (l, d) => l == d,
    }
}

/// A short digest of an intent (what [`INTENT_HASH_ANNOTATION`] records).
pub fn intent_hash(desired: &serde_json::Value) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, desired.to_string().as_bytes());
    digest.as_ref().iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// Server-side applies a namespaced object in the shoot's seed namespace, unless the live
/// object already is what we want: then nothing is written (some API server versions bump
/// `managedFields` even for an apply that changes nothing). "What we want" means the live
/// object carries the hash of this exact intent (so a field we stopped setting is still
/// removed by a new apply) and every field of the intent (so drift is repaired).
pub async fn apply<K>(ctx: &OperationContext, obj: &K) -> Result<K, TaskError>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + Debug + Serialize + DeserializeOwned,
{
    apply_in(Api::namespaced(ctx.seed.clone(), ctx.values.namespace()), obj).await
}

/// [`apply`] with any API (cluster-scoped objects such as the shoot's Namespace and Cluster):
/// a GET, and a write only when the live object is not yet what `obj` says.
pub async fn apply_in<K>(api: Api<K>, obj: &K) -> Result<K, TaskError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let name = obj.name_any();
    let fail = |e: kube::Error| {
        let at = obj.namespace().map(|ns| format!("{ns}/")).unwrap_or_default();
        TaskError::context(format!("applying {} {at}{name}", K::kind(&())), &e)
    };
    let intent = serde_json::to_value(obj).map_err(task_err)?;
    let hash = intent_hash(&intent);
    let mut desired = obj.clone();
    desired
        .meta_mut()
        .annotations
        .get_or_insert_with(Default::default)
        .insert(INTENT_HASH_ANNOTATION.into(), hash.clone());
    if let Some(live) = api.get_opt(&name).await.map_err(fail)? {
        let same_intent = live.meta().annotations.as_ref().and_then(|a| a.get(INTENT_HASH_ANNOTATION)) == Some(&hash);
        if same_intent && contains(&serde_json::to_value(&live).map_err(task_err)?, &intent) {
            return Ok(live);
        }
    }
    let mut desired_json = serde_json::to_value(&desired).map_err(task_err)?;
    if let Some(o) = desired_json.as_object_mut() {
        o.insert("apiVersion".into(), K::api_version(&()).into());
        o.insert("kind".into(), K::kind(&()).into());
    }
    api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&desired_json)).await.map_err(fail)
}

/// Waits (watching, not polling) until `check` accepts the object, bounded by the
/// operation's wait timeout; the error names the object and the last reason.
pub async fn wait_for<K>(
    ctx: &OperationContext,
    name: &str,
    check: impl Fn(&K) -> Result<(), String>,
) -> Result<K, TaskError>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let api: Api<K> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    wait_in(api, ctx.values.namespace(), name, ctx.wait_timeout, check).await
}

/// [`wait_for`] in any cluster (the seed's, or the shoot's own API): `namespace` only names
/// the object in errors.
pub async fn wait_in<K>(
    api: Api<K>,
    namespace: &str,
    name: &str,
    timeout: std::time::Duration,
    check: impl Fn(&K) -> Result<(), String>,
) -> Result<K, TaskError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let last = std::sync::Mutex::new(String::from("not found"));
    let cond = |obj: Option<&K>| match obj {
        None => false,
        Some(o) => match check(o) {
            Ok(()) => true,
            Err(reason) => {
                *last.lock().unwrap_or_else(|e| e.into_inner()) = reason;
                false
            }
        },
    };
    let waited = tokio::time::timeout(timeout, kube::runtime::wait::await_condition(api, name, cond)).await;
    let reason = last.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match waited {
        Ok(Ok(Some(obj))) => Ok(obj),
        Ok(Ok(None)) => Err(TaskError::msg(format!("{} {name} disappeared while waiting", K::kind(&())))),
        Ok(Err(e)) => Err(TaskError::context(format!("watching {} {name}", K::kind(&())), &e)),
        Err(_) => {
            Err(TaskError::msg(format!("{} {namespace}/{name} is not ready after {timeout:?}: {reason}", K::kind(&()))))
        }
    }
}

/// Deploys an extension object and waits until it is ready, unless it is already ready with
/// the same spec (and no explicit reconcile was requested): then nothing is written.
pub async fn deploy_extension<K>(ctx: &OperationContext, desired: &K) -> Result<K, TaskError>
where
    K: ExtensionResource,
{
    if let Some(restore) = &ctx.restore {
        // The restore protocol: the object is created waiting, gets the state the source
        // seed left in the ShootState, and only then is restored by its extension.
        let (state, resources) = match restore.entry(K::kind(&()).as_ref(), &desired.name_any()) {
            Some(e) => (e.state.clone(), e.resources.clone()),
            // Nothing saved: keep what the object already has (a retried restore must not
            // erase the state the extension wrote since).
            None => {
                let api: Api<K> = K::api(ctx.seed.clone(), desired.meta().namespace.as_deref());
                let live = api.get_opt(&desired.name_any()).await.map_err(task_err)?;
                live.as_ref()
                    .and_then(|o| o.default_status())
                    .map(|s| (s.state.clone(), s.resources.clone()))
                    .unwrap_or_default()
            }
        };
        return unless_unserved(ctx, desired, ctx.deployer.restore_and_wait(desired, state, resources)).await;
    }
    let api: Api<K> = K::api(ctx.seed.clone(), desired.meta().namespace.as_deref());
    if !ctx.force_redeploy {
        let current = api.get_opt(&desired.name_any()).await.map_err(task_err)?;
        if let Some(current) = current {
            let same_spec = serde_json::to_value(&current).ok().map(|v| v["spec"].clone())
                == serde_json::to_value(desired).ok().map(|v| v["spec"].clone());
            if same_spec && check_ready(current.meta(), current.default_status()).is_ok() {
                return Ok(current);
            }
        }
    }
    unless_unserved(ctx, desired, ctx.deployer.deploy_and_wait(desired)).await
}

/// Runs `wait` for the extension object `desired`, but ends it early when the object was not
/// picked up after [`served::UNSERVED_AFTER`] and no controller for its kind and type is installed
/// on this seed ([`served::serving`]): the error names the kind, the type and the seed and
/// carries the configuration-problem code. One check, not a polling loop: a served or picked-up
/// object is left to `wait` and its timeout.
async fn unless_unserved<K>(
    ctx: &OperationContext,
    desired: &K,
    wait: impl Future<Output = Result<K, DeployError>>,
) -> Result<K, TaskError>
where
    K: ExtensionResource,
{
    let watchdog = async {
        tokio::time::sleep(served::UNSERVED_AFTER).await;
        match unserved(ctx, desired).await {
            Some(e) => e,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        waited = wait => waited.map_err(deploy_err),
        e = watchdog => Err(e),
    }
}

/// The error for `desired` when it is not picked up and nothing installed serves it; `None` when
/// it is picked up, served, or the garden cannot be read (then the wait's own timeout decides).
async fn unserved<K>(ctx: &OperationContext, desired: &K) -> Option<TaskError>
where
    K: ExtensionResource,
{
    use api::core::{ControllerInstallation, ControllerRegistration};
    let namespace = desired.namespace();
    let name = desired.name_any();
    let live = K::api(ctx.seed.clone(), namespace.as_deref()).get_opt(&name).await.ok().flatten();
    if live.as_ref().is_some_and(|o| served::picked_up(o.meta(), o.default_status())) {
        return None;
    }
    let seed = ctx.config.seed.name.as_str();
    let selector = format!("{}={seed}", crate::installation::SEED_LABEL);
    let listed = futures::future::try_join(
        Api::<ControllerRegistration>::all(ctx.garden.clone()).list(&Default::default()),
        Api::<ControllerInstallation>::all(ctx.garden.clone())
            .list(&kube::api::ListParams::default().labels(&selector)),
    )
    .await;
    let (registrations, installations) = match listed {
        Ok((r, i)) => (r.items, i.items),
        Err(e) => {
            tracing::warn!(error = %e, "reading ControllerRegistrations and ControllerInstallations to explain a wait");
            return None;
        }
    };
    let kind = K::kind(&());
    let type_ = desired.default_spec().type_.as_str();
    let object = match &namespace {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    };
    let (message, code) =
        served::serving(&kind, type_, seed, &registrations, &installations).error(&object, &kind, type_, seed)?;
    Some(TaskError::msg(message).with_codes([code]))
}

/// The `policy/v1beta1` PodDisruptionBudgets of `namespace` (the seeds and shoots run 1.20, and
/// the typed client only knows `policy/v1`): a highly available control plane's in the seed, the
/// system components' in the shoot.
pub fn disruption_budgets(client: &kube::Client, namespace: &str) -> Api<kube::api::DynamicObject> {
    let pdb = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("policy", "v1beta1", "PodDisruptionBudget"),
        "poddisruptionbudgets",
    );
    Api::namespaced_with(client.clone(), namespace, &pdb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containment_ignores_server_additions_but_not_changes() {
        let live = json!({"spec": {"replicas": 1, "template": {"a": [1, 2]}, "defaulted": true}, "status": {}});
        assert!(contains(&live, &json!({"spec": {"replicas": 1, "template": {"a": [1, 2]}}})));
        assert!(!contains(&live, &json!({"spec": {"replicas": 2}})));
        assert!(!contains(&live, &json!({"spec": {"template": {"a": [1]}}})), "lists compare whole");
        assert!(!contains(&live, &json!({"spec": {"missing": 0}})));
        assert_eq!(intent_hash(&json!({"a": 1})), intent_hash(&json!({"a": 1})));
        assert_ne!(intent_hash(&json!({"a": 1})), intent_hash(&json!({"a": 2})));
    }
}
