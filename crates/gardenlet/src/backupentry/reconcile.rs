//! One garden BackupEntry of this seed. While it lives, the shoot flows keep it; once it is
//! deleted: keep the data for the grace period (reporting until when), then delete the seed's
//! extension entry, wait until it is gone and release the `gardener` finalizer.

use super::Context;
use super::apply;
use super::decide::{self, Deletion};
use api::core::BackupEntry;
use api::extensions::BackupEntry as ExtensionBackupEntry;
use api::helpers::constants::FINALIZER_GARDENER;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

/// While the extension entry is being deleted, how often to look again.
const DELETING_POLL: Duration = Duration::from_secs(5);

/// A failed step, naming the entry and what was being done.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what} for BackupEntry {entry}")]
    Kube {
        what: &'static str,
        entry: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Apply(#[from] apply::ApplyError),
}

fn describe(e: &BackupEntry) -> String {
    format!("{}/{}", e.namespace().unwrap_or_default(), e.name_any())
}

fn kube_err(e: &BackupEntry, what: &'static str) -> impl FnOnce(kube::Error) -> Error {
    let entry = describe(e);
    move |source| Error::Kube { what, entry, source }
}

pub async fn reconcile(entry: Arc<BackupEntry>, ctx: Arc<Context>) -> Result<Action, Error> {
    reconcile_entry(&entry, &ctx).await
}

pub fn error_policy(entry: Arc<BackupEntry>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(entry = %describe(&entry), error = %runtime::events::error_chain(error), "backup entry reconcile failed");
    Action::requeue(Duration::from_secs(10))
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

#[tracing::instrument(skip_all, fields(entry = %describe(entry)))]
async fn reconcile_entry(entry: &BackupEntry, ctx: &Context) -> Result<Action, Error> {
    let ours = entry.spec.seed_name() == Some(ctx.seed_name.as_str());
    if !ours
        || entry.metadata.deletion_timestamp.is_none()
        || !entry.finalizers().iter().any(|f| f == FINALIZER_GARDENER)
    {
        return Ok(Action::await_change());
    }
    let now = now();
    if let Deletion::Keep(left) = decide::deletion(entry, &now, ctx.grace) {
        let until = Time(now.0 + left);
        if let Some(status) = decide::keeping_status(entry, &until, &now) {
            tracing::info!(until = %until.0, "the shoot is deleted; keeping its backups for the grace period");
            apply::write_status(&ctx.garden, entry, status).await?;
        }
        return Ok(Action::requeue(left));
    }
    let extensions: Api<ExtensionBackupEntry> = Api::all(ctx.seed.clone());
    let name = entry.name_any();
    match extensions.get_opt(&name).await.map_err(kube_err(entry, "reading the extension BackupEntry"))? {
        Some(ext) => {
            if ext.metadata.deletion_timestamp.is_none() {
                tracing::info!("deleting the extension BackupEntry and with it the backups");
                match extensions.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(kube_err(entry, "deleting the extension BackupEntry")(e)),
                }
            }
            Ok(Action::requeue(DELETING_POLL))
        }
        None => {
            let finalizers: Vec<&String> = entry.finalizers().iter().filter(|f| *f != FINALIZER_GARDENER).collect();
            let patch = serde_json::json!({"metadata": {"finalizers": finalizers, "resourceVersion": entry.resource_version()}});
            let api: Api<BackupEntry> = Api::namespaced(ctx.garden.clone(), &entry.namespace().unwrap_or_default());
            match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => tracing::info!("the backups are deleted; releasing the BackupEntry"),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(kube_err(entry, "removing the finalizer")(e)),
            }
            Ok(Action::await_change())
        }
    }
}
