//! One Project: read its namespace, RoleBindings and (while deleting) its shoots, decide with
//! [`super::decide`], write only what differs. Children are applied server-side with the field
//! manager `gardener-controller-manager/project`; the phase goes through the status subresource.

use super::Context;
use super::decide::{self, DeletionStep, Invalid, MANAGED_BINDINGS, Ownership};
use crate::runtime::{self, field_manager};
use api::core::project::ProjectPhase;
use api::core::{Project, Shoot};
use api::helpers::constants::{FINALIZER_GARDENER, LABEL_PROJECT_NAME};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "project";

/// A failed API call, with what was being done.
pub use crate::runtime::KubeError as Error;
use crate::runtime::kube_err;

/// Entry point of the controller.
pub async fn reconcile(project: Arc<Project>, ctx: Arc<Context>) -> Result<Action, Error> {
    runtime::instrumented(&ctx.common, project.as_ref(), reconcile_project(&project, &ctx)).await
}

pub fn error_policy(project: Arc<Project>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common.retry_after_failure(project.as_ref())
}

#[tracing::instrument(skip_all, fields(project = %project.name_any()))]
async fn reconcile_project(project: &Project, ctx: &Context) -> Result<Action, Error> {
    let client = &ctx.common.client;
    let name = project.name_any();
    let namespace = match decide::namespace_name(project) {
        Ok(ns) => ns,
        Err(invalid) if project.meta().deletion_timestamp.is_none() => return fail(project, ctx, invalid).await,
        // A project whose namespace could never be created has nothing to clean up.
        Err(_) => return remove_finalizer(project, ctx).await.map(|()| Action::await_change()),
    };
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let live = namespaces
        .get_opt(&namespace)
        .await
        .map_err(kube_err("ReadNamespaceFailed", format!("reading Namespace {namespace} of project {name}")))?;
    let ownership = decide::ownership(project, live.as_ref());

    if project.meta().deletion_timestamp.is_some() {
        return delete(project, ctx, &namespace, live.as_ref(), &ownership).await;
    }
    if let Ownership::Foreign(owner) = &ownership {
        let invalid = Invalid::Field {
            project: name.clone(),
            field: "spec.namespace".into(),
            problem: format!("namespace {namespace} already exists and belongs to {owner}"),
        };
        return fail(project, ctx, invalid).await;
    }
    let bindings = match decide::desired_role_bindings(project, &namespace) {
        Ok(b) => b,
        Err(invalid) => return fail(project, ctx, invalid).await,
    };
    let has_finalizer = project.finalizers().iter().any(|f| f == FINALIZER_GARDENER);
    if !has_finalizer || project.spec.namespace.is_none() {
        // One write for both, guarded by the resourceVersion that was read: the finalizer, and
        // the chosen namespace name, recorded as the reference system does (it cannot change
        // afterwards). The write's own watch event brings the project back.
        let mut finalizers = project.finalizers().to_vec();
        if !has_finalizer {
            finalizers.push(FINALIZER_GARDENER.into());
        }
        let patch = json!({
            "metadata": {"finalizers": finalizers, "resourceVersion": project.resource_version()},
            "spec": {"namespace": namespace},
        });
        Api::<Project>::all(client.clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(kube_err(
                "WriteProjectFailed",
                format!("adding the finalizer and spec.namespace to project {name}"),
            ))?;
        return Ok(Action::await_change());
    }

    if project.status.as_ref().and_then(|s| s.phase).is_none() {
        write_status(project, ctx, ProjectPhase::Pending).await?;
    }
    let desired = decide::desired_namespace(project, &namespace);
    if !live.as_ref().is_some_and(|l| decide::namespace_up_to_date(l, &desired)) {
        tracing::info!(%namespace, "applying the project namespace");
        namespaces
            .patch(&namespace, &apply_params(), &Patch::Apply(&desired))
            .await
            .map_err(kube_err("ApplyNamespaceFailed", format!("applying Namespace {namespace} of project {name}")))?;
    }

    let role_bindings: Api<RoleBinding> = Api::namespaced(client.clone(), &namespace);
    let selector = ListParams::default().labels(&format!("{LABEL_PROJECT_NAME}={name}"));
    let existing = role_bindings
        .list(&selector)
        .await
        .map_err(kube_err("ReadRoleBindingsFailed", format!("listing RoleBindings in {namespace}")))?
        .items;
    for binding in &bindings {
        let current = existing.iter().find(|l| l.name_any() == binding.name_any());
        if current.is_some_and(|c| decide::binding_up_to_date(c, binding)) {
            continue;
        }
        let binding_name = binding.name_any();
        tracing::info!(%namespace, binding = %binding_name, "applying a member RoleBinding");
        role_bindings.patch(&binding_name, &apply_params(), &Patch::Apply(binding)).await.map_err(kube_err(
            "ApplyRoleBindingFailed",
            format!("applying RoleBinding {binding_name} in {namespace}"),
        ))?;
    }
    for stale in existing.iter().filter(|l| {
        MANAGED_BINDINGS.contains(&l.name_any().as_str()) && !bindings.iter().any(|b| b.name_any() == l.name_any())
    }) {
        let stale_name = stale.name_any();
        tracing::info!(%namespace, binding = %stale_name, "deleting a RoleBinding no member needs");
        match role_bindings.delete(&stale_name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(kube_err(
                    "DeleteRoleBindingFailed",
                    format!("deleting RoleBinding {stale_name} in {namespace}"),
                )(e));
            }
        }
    }
    write_status(project, ctx, decide::phase(project, false)).await?;
    Ok(Action::await_change())
}

async fn delete(
    project: &Project,
    ctx: &Context,
    namespace: &str,
    live: Option<&Namespace>,
    ownership: &Ownership,
) -> Result<Action, Error> {
    if !project.finalizers().iter().any(|f| f == FINALIZER_GARDENER) {
        return Ok(Action::await_change());
    }
    let name = project.name_any();
    write_status(project, ctx, ProjectPhase::Terminating).await?;
    let shoots = if live.is_some() {
        Api::<Shoot>::namespaced(ctx.common.client.clone(), namespace)
            .list_metadata(&ListParams::default())
            .await
            .map_err(kube_err("ListShootsFailed", format!("listing the shoots of project {name} in {namespace}")))?
            .items
            .into_iter()
            .map(|s| s.name_any())
            .collect()
    } else {
        Vec::new()
    };
    let deleting = live.is_some_and(|ns| ns.metadata.deletion_timestamp.is_some());
    match decide::deletion_step(project, ownership, deleting, &shoots) {
        DeletionStep::BlockedByShoots(message) => {
            tracing::info!(%message, "deletion waits for shoots");
            ctx.common.event(project, EventType::Warning, "DeletionBlocked", "Delete", message).await;
            // Every shoot deletion in the namespace re-queues the project; this is a fallback.
            Ok(Action::requeue(Duration::from_secs(60)))
        }
        DeletionStep::DeleteNamespace => {
            tracing::info!(%namespace, "deleting the project namespace");
            let params = DeleteParams {
                preconditions: Some(Preconditions { uid: live.and_then(|l| l.uid()), resource_version: None }),
                ..Default::default()
            };
            match Api::<Namespace>::all(ctx.common.client.clone()).delete(namespace, &params).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(kube_err("DeleteNamespaceFailed", format!("deleting Namespace {namespace}"))(e)),
            }
            Ok(Action::requeue(Duration::from_secs(5)))
        }
        DeletionStep::WaitForNamespace => Ok(Action::requeue(Duration::from_secs(5))),
        DeletionStep::Release => {
            remove_finalizer(project, ctx).await?;
            Ok(Action::await_change())
        }
    }
}

/// Reports an invalid project: phase `Failed` and a Warning event naming the field. Not retried
/// until the project changes (or, for a foreign namespace, a while later).
async fn fail(project: &Project, ctx: &Context, invalid: Invalid) -> Result<Action, Error> {
    let message = invalid.to_string();
    tracing::warn!(%message, "project cannot be reconciled");
    write_status(project, ctx, decide::phase(project, true)).await?;
    ctx.common.event(project, EventType::Warning, "InvalidProject", "Reconcile", message).await;
    Ok(Action::requeue(Duration::from_secs(300)))
}

fn apply_params() -> PatchParams {
    PatchParams::apply(&field_manager(NAME)).force()
}

async fn write_status(project: &Project, ctx: &Context, phase: ProjectPhase) -> Result<(), Error> {
    let status = project.status.as_ref();
    let generation = project.meta().generation;
    if status.and_then(|s| s.phase) == Some(phase) && status.and_then(|s| s.observed_generation) == generation {
        return Ok(());
    }
    let name = project.name_any();
    let body = json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "Project",
        "status": {"phase": phase, "observedGeneration": generation},
    });
    Api::<Project>::all(ctx.common.client.clone())
        .patch_status(&name, &apply_params(), &Patch::Apply(&body))
        .await
        .map_err(kube_err("WriteStatusFailed", format!("writing the status of project {name}")))?;
    Ok(())
}

/// Removes the `gardener` finalizer (a no-op when absent), guarded by the resourceVersion that
/// was read so that a concurrent change of the list is not lost.
async fn remove_finalizer(project: &Project, ctx: &Context) -> Result<(), Error> {
    if !project.finalizers().iter().any(|f| f == FINALIZER_GARDENER) {
        return Ok(());
    }
    let finalizers: Vec<&String> = project.finalizers().iter().filter(|f| *f != FINALIZER_GARDENER).collect();
    let name = project.name_any();
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": project.resource_version()}});
    match Api::<Project>::all(ctx.common.client.clone())
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        // Gone already: an earlier reconcile's removal was the last one (the cached object
        // still showed the finalizer).
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        result => result
            .map(|_| ())
            .map_err(kube_err("WriteFinalizerFailed", format!("removing the finalizer of project {name}"))),
    }
}
