//! The force-deletion flow (`confirmation.gardener.cloud/force-deletion: "true"` on a shoot
//! being deleted, Gardener's "Force Deletion"): for a deletion stuck on something the normal
//! flow cannot get past (an extension nobody serves any more, infrastructure credentials that no
//! longer work), the cleanup of the extension objects is given up:
//!
//! 1. the garden BackupEntry is deleted without its grace period; every extension object of
//!    the shoot (in its seed namespace, and its BackupEntry) is
//!    annotated with `confirmation.gardener.cloud/force-deletion=true`, which tells its
//!    controller to drop its finalizer without cleaning up (`extension_sdk::controller`), and
//!    deleted;
//! 2. after a short grace ([`GRACE`]) the finalizers still on them are removed;
//! 3. the control plane, the Cluster, the namespaces of the shoot in the seed (the control
//!    plane namespace, and any labelled with its technical ID, such as the machines'), and the
//!    ShootState in the garden are deleted, as in the normal deletion.
//!
//! gardenlet then releases the shoot's finalizer. Resources the extensions did not clean up
//! (real infrastructure) are left to the owner of the shoot: that is what the confirmation says.

use crate::flow::{Flow, FlowBuilder, GraphError, TaskError};
use crate::shoot::flows::delete::{delete_cluster, delete_control_plane, delete_etcd};
use crate::shoot::operation::apply::{t, task_err};
use crate::shoot::operation::context::OperationContext;
use api::core::ShootState;
use api::extensions::{
    BackupEntry, ContainerRuntime, ControlPlane, DNSRecord, Extension, Infrastructure, Network, OperatingSystemConfig,
    Worker,
};
use api::helpers::constants::{ANNOTATION_FORCE_DELETION, LABEL_TECHNICAL_ID};
use extension_sdk::kinds::ExtensionResource;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// How long the controllers of the extension objects get to see the confirmation and drop
/// their finalizers themselves before gardenlet removes what is left.
pub const GRACE: Duration = Duration::from_secs(10);

/// What to do with one extension object that is still there (pure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Annotate it with the confirmation (not yet annotated).
    Confirm,
    /// Delete it (confirmed, not yet deleted).
    Delete,
    /// Wait for its controller to drop its finalizers (deleted, within the grace).
    Wait,
    /// Remove its finalizers (deleted, the grace is over, finalizers left).
    StripFinalizers,
}

/// The next step for an object with these properties (`waited`: how long since its deletion
/// was issued by this task, `None` before).
pub fn next(confirmed: bool, deleting: bool, finalizers: usize, waited: Option<Duration>, grace: Duration) -> Next {
    if !confirmed {
        return Next::Confirm;
    }
    if !deleting {
        return Next::Delete;
    }
    match waited {
        Some(w) if w < grace && finalizers > 0 => Next::Wait,
        // A deletion that was issued before this task ran (a retried operation) gets no grace.
        _ => Next::StripFinalizers,
    }
}

fn ignore_not_found<T>(result: Result<T, kube::Error>) -> Result<(), TaskError> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(task_err(e)),
    }
}

/// Confirms, deletes and, after the grace, strips the finalizers of every object of kind `K`
/// in `api` that `select` keeps, until none is left.
async fn force_delete<K>(api: Api<K>, select: impl Fn(&K) -> bool, grace: Duration) -> Result<(), TaskError>
where
    K: ExtensionResource,
{
    let started = tokio::time::Instant::now();
    let mut issued = false;
    loop {
        let listed = match api.list(&ListParams::default()).await {
            Ok(l) => l.items,
            // The kind is not installed on this seed: nothing of it to delete.
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(e) => return Err(task_err(e)),
        };
        let objects: Vec<K> = listed.into_iter().filter(|o| select(o)).collect();
        if objects.is_empty() {
            return Ok(());
        }
        for o in &objects {
            let name = o.name_any();
            let confirmed = o.annotations().get(ANNOTATION_FORCE_DELETION).is_some_and(|v| v == "true");
            let waited = issued.then(|| started.elapsed());
            match next(confirmed, o.meta().deletion_timestamp.is_some(), o.finalizers().len(), waited, grace) {
                Next::Confirm => {
                    let patch = json!({"metadata": {"annotations": {ANNOTATION_FORCE_DELETION: "true"}}});
                    ignore_not_found(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await)?;
                    ignore_not_found(api.delete(&name, &DeleteParams::background()).await)?;
                }
                Next::Delete => ignore_not_found(api.delete(&name, &DeleteParams::background()).await)?,
                Next::Wait => {}
                Next::StripFinalizers => {
                    tracing::info!(object = %name, finalizers = ?o.finalizers(), "force deletion: removing the finalizers");
                    let patch = json!({"metadata": {"finalizers": null}});
                    ignore_not_found(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await)?;
                }
            }
        }
        if !issued {
            issued = true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Every object of kind `K` in the shoot's seed namespace.
async fn force_delete_all<K>(ctx: Arc<OperationContext>) -> Result<(), TaskError>
where
    K: ExtensionResource,
{
    let api = K::api(ctx.seed.clone(), Some(ctx.values.namespace()));
    force_delete(api, |_: &K| true, GRACE.min(ctx.wait_timeout)).await
}

/// The shoot's BackupEntries: the garden's, deleted without a grace period (the BackupEntry
/// controller releases it once the extension entry is gone), and the extension entry
/// (cluster-scoped, named after the shoot), force-deleted like every extension object.
async fn force_delete_backup_entry(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let Some(uid) = ctx.shoot.metadata.uid.as_deref() else { return Ok(()) };
    let name = crate::shoot::objects::extensions::backup_entry_name(&ctx.values, uid);
    let garden: Api<api::core::BackupEntry> = Api::namespaced(ctx.garden.clone(), &ctx.values.garden_namespace);
    let now = json!({"metadata": {"annotations": {crate::backupentry::decide::ANNOTATION_FORCE_DELETION: "true"}}});
    // A missing entry: not found, or through the seed authorizer refused (it relates only
    // existing entries to a seed).
    let missing = |r: Result<_, kube::Error>| match r {
        Err(kube::Error::Api(s)) if s.code == 403 => Ok(()),
        r => ignore_not_found(r),
    };
    missing(garden.patch(&name, &PatchParams::default(), &Patch::Merge(&now)).await.map(|_| ()))?;
    missing(garden.delete(&name, &DeleteParams::background()).await.map(|_| ()))?;
    let api = BackupEntry::api(ctx.seed.clone(), None);
    force_delete(api, move |b: &BackupEntry| b.name_any() == name, GRACE.min(ctx.wait_timeout)).await
}

/// Deletes the shoot's namespaces in the seed (its control plane namespace and every
/// namespace labelled with its technical ID, such as provider-local's machine namespace) and
/// waits until they are gone.
async fn delete_namespaces(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let api: Api<Namespace> = Api::all(ctx.seed.clone());
    let id = ctx.values.namespace();
    let labelled = api.list(&ListParams::default().labels(&format!("{LABEL_TECHNICAL_ID}={id}"))).await;
    let mut names: Vec<String> = labelled.map_err(task_err)?.items.iter().map(ResourceExt::name_any).collect();
    if !names.iter().any(|n| n == id) {
        names.push(id.to_string());
    }
    for name in &names {
        ignore_not_found(api.delete(name, &DeleteParams::background()).await)?;
    }
    let deadline = tokio::time::Instant::now() + ctx.wait_timeout;
    loop {
        let mut left = Vec::new();
        for name in &names {
            if api.get_opt(name).await.map_err(task_err)?.is_some() {
                left.push(name.clone());
            }
        }
        if left.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(TaskError::msg(format!(
                "namespaces {} still exist after {:?}",
                left.join(", "),
                ctx.wait_timeout
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn delete_shootstate(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let api: Api<ShootState> = Api::namespaced(ctx.garden.clone(), &ctx.values.garden_namespace);
    ignore_not_found(api.delete(&ctx.values.name, &DeleteParams::default()).await)
}

/// Builds the force-deletion flow for one shoot.
pub fn flow(ctx: &Arc<OperationContext>) -> Result<Flow, GraphError> {
    let mut f = FlowBuilder::new("Shoot force deletion");
    let extensions = [
        f.task("Force-deleting Workers", &[], t(ctx, force_delete_all::<Worker>)),
        f.task("Force-deleting OperatingSystemConfigs", &[], t(ctx, force_delete_all::<OperatingSystemConfig>)),
        f.task("Force-deleting Networks", &[], t(ctx, force_delete_all::<Network>)),
        f.task("Force-deleting Extensions", &[], t(ctx, force_delete_all::<Extension>)),
        f.task("Force-deleting ContainerRuntimes", &[], t(ctx, force_delete_all::<ContainerRuntime>)),
        f.task("Force-deleting ControlPlanes", &[], t(ctx, force_delete_all::<ControlPlane>)),
        f.task("Force-deleting DNSRecords", &[], t(ctx, force_delete_all::<DNSRecord>)),
        f.task("Force-deleting Infrastructures", &[], t(ctx, force_delete_all::<Infrastructure>)),
        f.task("Force-deleting BackupEntry", &[], t(ctx, force_delete_backup_entry)),
    ];
    let after: Vec<_> = extensions.iter().collect();
    let control_plane = f.task(
        "Deleting kube-apiserver, kube-controller-manager, kube-scheduler",
        &after,
        t(ctx, delete_control_plane),
    );
    let etcd = f.task("Deleting etcd", &[&control_plane], t(ctx, delete_etcd));
    let cluster = f.task("Deleting Cluster resource", &[&etcd], t(ctx, delete_cluster));
    let namespaces = f.task("Deleting namespaces", &[&cluster], t(ctx, delete_namespaces));
    f.task("Deleting ShootState", &[&namespaces], t(ctx, delete_shootstate));
    f.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn an_object_is_confirmed_deleted_given_a_grace_and_then_stripped() {
        assert_eq!(next(false, false, 1, None, 10 * S), Next::Confirm);
        assert_eq!(
            next(false, true, 1, Some(S), 10 * S),
            Next::Confirm,
            "a deletion without confirmation is confirmed"
        );
        assert_eq!(next(true, false, 1, None, 10 * S), Next::Delete);
        assert_eq!(next(true, true, 1, Some(S), 10 * S), Next::Wait, "its controller drops the finalizer");
        assert_eq!(next(true, true, 1, Some(11 * S), 10 * S), Next::StripFinalizers, "nobody did");
        assert_eq!(next(true, true, 0, Some(S), 10 * S), Next::StripFinalizers, "nothing to wait for");
        assert_eq!(next(true, true, 2, None, 10 * S), Next::StripFinalizers, "confirmed and deleted before: no grace");
    }
}
