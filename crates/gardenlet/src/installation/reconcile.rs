//! One ControllerInstallation of this seed: apply the objects its ControllerDeployment carries
//! into the seed (server-side apply, field manager `gardenlet`), delete those a previous
//! version had and this one has not, and report the conditions ([`super::status`]); on
//! deletion, remove everything the inventory names and only then release the finalizer.

use super::manifest::{self, Manifest, ObjectId};
use super::status::{self, Observed, Workload};
use super::{Context, InUse};
use api::core::controller::FINALIZER_CONTROLLER_INSTALLATION;
use api::core::{ControllerDeployment, ControllerInstallation, ControllerRegistration};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The field manager of everything gardenlet applies for an installation.
pub const FIELD_MANAGER: &str = "gardenlet";
/// How soon a failed or unfinished installation is looked at again (besides the watches).
const RETRY: Duration = Duration::from_secs(15);
/// How often an uninstallation checks whether its objects are gone.
const UNINSTALL_POLL: Duration = Duration::from_secs(2);

/// A failed call to the garden, with what was being done.
#[derive(Debug, thiserror::Error)]
#[error("ControllerInstallation {installation}: {what}: {source}")]
pub struct Error {
    installation: String,
    what: String,
    #[source]
    source: kube::Error,
}

fn err(installation: &str, what: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let (installation, what) = (installation.to_string(), what.into());
    move |source| Error { installation, what, source }
}

pub fn error_policy(_: Arc<ControllerInstallation>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(error = %runtime::events::error_chain(error), "controller installation failed; retrying");
    Action::requeue(RETRY)
}

#[tracing::instrument(skip_all, fields(installation = %installation.name_any()))]
pub async fn reconcile(installation: Arc<ControllerInstallation>, ctx: Arc<Context>) -> Result<Action, Error> {
    if installation.spec.seed_ref.as_ref().map(|s| s.name.as_str()) != Some(ctx.seed_name.as_str()) {
        return Ok(Action::await_change());
    }
    let name = installation.name_any();
    let api: Api<ControllerInstallation> = Api::all(ctx.garden.clone());
    if installation.metadata.deletion_timestamp.is_some() {
        return uninstall(&installation, &api, &ctx).await;
    }
    if !installation.finalizers().iter().any(|f| f == FINALIZER_CONTROLLER_INSTALLATION) {
        let mut finalizers = installation.finalizers().to_vec();
        finalizers.push(FINALIZER_CONTROLLER_INSTALLATION.into());
        let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": installation.resource_version()}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(err(&name, "adding the finalizer"))?;
    }
    let previous = manifest::inventory(
        installation.status.as_ref().and_then(|s| s.provider_status.as_ref()).map(|o| o.as_value()),
    );
    let (observed, inventory) = install(&installation, &previous, &ctx).await;
    let required = required(&installation, &ctx);
    let mut conditions = installation.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let mut changed = status::update(&mut conditions, &observed, &required, &now);
    changed |= inventory != previous;
    if changed {
        let patch =
            json!({"status": {"conditions": conditions, "providerStatus": manifest::provider_status(&inventory)}});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(err(&name, "writing the status"))?;
    }
    match &observed {
        Observed::Invalid { message, .. } => {
            tracing::warn!(%message, "controller installation is not valid");
            Ok(Action::await_change())
        }
        Observed::NotInstalled { message } => {
            tracing::warn!(%message, "controller installation failed; retrying");
            Ok(Action::requeue(RETRY))
        }
        // Deployments are watched; other workloads are looked at again while they roll out.
        Observed::Installed { workloads } => {
            if workloads.iter().any(|(id, w)| !id.starts_with("Deployment ") && *w != Workload::Available) {
                Ok(Action::requeue(RETRY))
            } else {
                Ok(Action::await_change())
            }
        }
    }
}

/// Why an installation cannot be looked at: the condition reason and message.
type Unusable = (&'static str, String);

/// The deployment of an installation (its own reference, else its registration's first), from
/// the caches.
fn deployment_of(installation: &ControllerInstallation, ctx: &Context) -> Result<Arc<ControllerDeployment>, Unusable> {
    let reg_name = &installation.spec.registration_ref.name;
    let registration = ctx
        .registrations
        .get(&ObjectRef::new(reg_name))
        .ok_or(("RegistrationNotFound", format!("ControllerRegistration {reg_name} does not exist")))?;
    let deployment_name = installation.spec.deployment_ref.as_ref().map(|d| d.name.clone()).or_else(|| {
        registration.spec.deployment.as_ref().and_then(|d| d.deployment_refs.first()).map(|d| d.name.clone())
    });
    let Some(deployment_name) = deployment_name else {
        return Err(("NoDeployment", format!("ControllerRegistration {reg_name} names no ControllerDeployment")));
    };
    let deployment = ctx
        .deployments
        .get(&ObjectRef::new(&deployment_name))
        .ok_or(("DeploymentNotFound", format!("ControllerDeployment {deployment_name} does not exist")))?;
    Ok(deployment)
}

/// The pod security level asked for the installation's namespace: the annotation
/// [`manifest::ANNOTATION_POD_SECURITY_ENFORCE`] of the installation, else of its registration.
fn pod_security_of(installation: &ControllerInstallation, ctx: &Context) -> Option<String> {
    let annotation = |annotations: &std::collections::BTreeMap<String, String>| {
        annotations.get(manifest::ANNOTATION_POD_SECURITY_ENFORCE).cloned()
    };
    annotation(installation.annotations()).or_else(|| {
        let registration = ctx.registrations.get(&ObjectRef::new(&installation.spec.registration_ref.name))?;
        annotation(registration.annotations())
    })
}

/// Applies what the installation's deployment carries and prunes what it no longer carries.
/// Returns what was observed and the inventory to record.
async fn install(
    installation: &ControllerInstallation,
    previous: &[ObjectId],
    ctx: &Context,
) -> (Observed, Vec<ObjectId>) {
    let name = installation.name_any();
    let deployment = match deployment_of(installation, ctx) {
        Ok(s) => s,
        Err((reason, message)) => return (Observed::Invalid { reason, message }, previous.to_vec()),
    };
    let parsed = match manifest::parse(&deployment) {
        Ok(p) => p,
        Err(e) => {
            return (Observed::Invalid { reason: "DeploymentInvalid", message: e.to_string() }, previous.to_vec());
        }
    };
    let mut resources = Vec::with_capacity(parsed.len());
    for m in &parsed {
        resources.push((m.id.api_version.clone(), m.id.kind.clone(), ctx.resolve(&parsed, &m.id).await));
    }
    let scope = |api_version: &str, kind: &str| {
        resources.iter().find(|(a, k, _)| a == api_version && k == kind).and_then(|(_, _, r)| r.as_ref().map(|r| r.1))
    };
    let mut prepared = match manifest::prepare(parsed.clone(), &name, scope) {
        Ok(p) => p,
        Err(message) => return (Observed::NotInstalled { message }, previous.to_vec()),
    };
    manifest::set_pod_security(&mut prepared, &name, pod_security_of(installation, ctx).as_deref());
    let current: Vec<ObjectId> = prepared.iter().map(|m| m.id.clone()).collect();
    // Until everything is applied, the inventory keeps what may still exist from before and
    // adds what was applied since.
    let mut attempted: Vec<ObjectId> = previous.to_vec();
    let mut workloads = Vec::new();
    for m in &prepared {
        // Everything prepared resolves: its kind was checked above, or it is the Namespace.
        let Some((resource, _)) = ctx.resolve(&parsed, &m.id).await else {
            return (
                Observed::NotInstalled { message: format!("{}: the seed does not serve its kind", m.id) },
                attempted,
            );
        };
        let applied = match apply(ctx, &resource, m).await {
            Ok(o) => o,
            Err(e) => {
                return (Observed::NotInstalled { message: format!("applying {}: {}", m.id, describe(&e)) }, attempted);
            }
        };
        if !attempted.contains(&m.id) {
            attempted.push(m.id.clone());
        }
        if matches!(m.id.kind.as_str(), "Deployment" | "StatefulSet" | "DaemonSet") {
            // A Deployment's rollout is followed in the watched cache; what apply returned
            // may be older than what the cache has seen since.
            let cached = (m.id.kind == "Deployment")
                .then(|| {
                    ctx.workloads.get(
                        &ObjectRef::<Deployment>::new(&m.id.name).within(m.id.namespace.as_deref().unwrap_or_default()),
                    )
                })
                .flatten()
                .and_then(|d| serde_json::to_value(d.as_ref()).ok())
                .filter(|d| d.pointer("/metadata/generation") == applied.pointer("/metadata/generation"));
            let state = status::workload(&m.id.kind, cached.as_ref().unwrap_or(&applied));
            workloads.push((m.id.to_string(), state));
        }
    }
    for id in manifest::stale(previous, &current) {
        if let Err(e) = delete(ctx, &parsed, &id).await {
            return (
                Observed::NotInstalled {
                    message: format!("deleting {id}, which the deployment no longer has: {}", describe(&e)),
                },
                attempted,
            );
        }
        tracing::info!(object = %id, "deleted: the deployment no longer has it");
    }
    (Observed::Installed { workloads }, current)
}

/// An API error's message without the request it came from (which can be long).
fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} ({})", s.message, s.reason),
        other => other.to_string(),
    }
}

fn dynamic_api(ctx: &Context, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(ctx.seed.clone(), ns, resource),
        None => Api::all_with(ctx.seed.clone(), resource),
    }
}

async fn apply(ctx: &Context, resource: &ApiResource, m: &Manifest) -> Result<Value, kube::Error> {
    let api = dynamic_api(ctx, resource, m.id.namespace.as_deref());
    let applied = api.patch(&m.id.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&m.object)).await?;
    Ok(serde_json::to_value(applied).unwrap_or(Value::Null))
}

/// Deletes an object; one that is gone already is fine. Returns whether it still exists.
async fn delete(ctx: &Context, parsed: &[Manifest], id: &ObjectId) -> Result<bool, kube::Error> {
    let Some((resource, _)) = ctx.resolve(parsed, id).await else {
        // The seed no longer serves the kind, so no such object can exist.
        return Ok(false);
    };
    let api = dynamic_api(ctx, &resource, id.namespace.as_deref());
    match api.delete(&id.name, &DeleteParams::background()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        // A namespace still being emptied refuses another delete.
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(true),
        Err(e) => Err(e),
    }
}

/// Removes every object of the inventory (dependents first, namespaces last) and releases the
/// finalizer once they are all gone.
async fn uninstall(
    installation: &ControllerInstallation,
    api: &Api<ControllerInstallation>,
    ctx: &Context,
) -> Result<Action, Error> {
    let name = installation.name_any();
    if !installation.finalizers().iter().any(|f| f == FINALIZER_CONTROLLER_INSTALLATION) {
        return Ok(Action::await_change());
    }
    let inventory = manifest::inventory(
        installation.status.as_ref().and_then(|s| s.provider_status.as_ref()).map(|o| o.as_value()),
    );
    let mut remaining = Vec::new();
    for id in manifest::deletion_order(&inventory) {
        match delete(ctx, &[], &id).await {
            Ok(true) => remaining.push(id.to_string()),
            Ok(false) => {}
            Err(e) => {
                let e = Error { installation: name.clone(), what: format!("deleting {id}"), source: e };
                return Err(e);
            }
        }
    }
    if !remaining.is_empty() {
        tracing::debug!(?remaining, "waiting for the installation's objects to be gone");
        return Ok(Action::requeue(UNINSTALL_POLL));
    }
    let finalizers: Vec<&String> =
        installation.finalizers().iter().filter(|f| *f != FINALIZER_CONTROLLER_INSTALLATION).collect();
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": installation.resource_version()}});
    match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(err(&name, "removing the finalizer")(e)),
    }
    tracing::info!(objects = inventory.len(), "controller uninstalled from the seed");
    Ok(Action::await_change())
}

/// The extension objects in the seed that the installation's registration serves (a few names).
fn required(installation: &ControllerInstallation, ctx: &Context) -> Vec<String> {
    let Some(registration) = ctx.registrations.get(&ObjectRef::new(&installation.spec.registration_ref.name)) else {
        return vec![];
    };
    in_use_by(&registration, &ctx.in_use)
}

/// The objects (at most five named) of the kinds and types a registration serves.
pub fn in_use_by(registration: &ControllerRegistration, in_use: &InUse) -> Vec<String> {
    let Ok(index) = in_use.read() else { return vec![] };
    let mut out = Vec::new();
    for r in &registration.spec.resources {
        if let Some(objects) = index.get(&(r.kind.clone(), r.type_.clone())) {
            out.extend(objects.iter().map(|o| format!("{} {o}", r.kind)));
        }
    }
    if out.len() > 5 {
        let more = out.len() - 5;
        out.truncate(5);
        out.push(format!("and {more} more"));
    }
    out
}

impl Context {
    /// The API resource of a kind and whether it is namespaced: from a CustomResourceDefinition
    /// among the manifests, else from the seed's discovery (remembered once found).
    async fn resolve(&self, manifests: &[Manifest], id: &ObjectId) -> Option<(ApiResource, bool)> {
        let (group, version) = id.api_version.rsplit_once('/').unwrap_or(("", id.api_version.as_str()));
        let gvk = GroupVersionKind::gvk(group, version, &id.kind);
        let key = (id.api_version.clone(), id.kind.clone());
        if let Some(found) = self.discovered.lock().ok().and_then(|d| d.get(&key).cloned()) {
            return Some(found);
        }
        let from_crd = manifests.iter().find_map(|m| {
            let spec = m.object.get("spec")?;
            (m.id.kind == "CustomResourceDefinition"
                && spec.get("group")?.as_str()? == group
                && spec.pointer("/names/kind")?.as_str()? == id.kind)
                .then(|| {
                    let plural = spec.pointer("/names/plural")?.as_str()?;
                    let namespaced = spec.get("scope")?.as_str()? == "Namespaced";
                    Some((ApiResource::from_gvk_with_plural(&gvk, plural), namespaced))
                })
                .flatten()
        });
        if from_crd.is_some() {
            return from_crd;
        }
        let (resource, caps) = kube::discovery::pinned_kind(&self.seed, &gvk).await.ok()?;
        let found = (resource, caps.scope == kube::discovery::Scope::Namespaced);
        if let Ok(mut d) = self.discovered.lock() {
            d.insert(key, found.clone());
        }
        Some(found)
    }
}
