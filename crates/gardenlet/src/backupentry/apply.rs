//! Writing the garden BackupEntry of a shoot: the spec (created with the finalizer, patched when
//! it differs, as after a migration to this seed) and the status gardenlet mirrors from the
//! extension entry, each only when something changed.

use super::decide;
use api::core::{BackupEntry, BackupEntryStatus};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};

/// A failed write of a garden BackupEntry, naming it.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("{what} BackupEntry {namespace}/{name}")]
    Kube {
        what: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("BackupEntry {namespace}/{name} is being deleted; a shoot cannot use it again")]
    Deleting { namespace: String, name: String },
}

fn err(what: &'static str, entry: &BackupEntry) -> impl FnOnce(kube::Error) -> ApplyError {
    let (namespace, name) = (entry.namespace().unwrap_or_default(), entry.name_any());
    move |source| ApplyError::Kube { what, namespace, name, source }
}

/// Creates `desired` or brings the existing entry to it, keeping its bucket (the data is
/// there); returns the entry as stored.
///
/// Created first and read only when it exists: the seed authorizer relates an entry to a seed
/// through the entry itself, so reading one that does not exist yet is refused (403), not
/// answered with 404.
pub async fn apply(garden: &kube::Client, desired: &BackupEntry) -> Result<BackupEntry, ApplyError> {
    let api: Api<BackupEntry> = Api::namespaced(garden.clone(), &desired.namespace().unwrap_or_default());
    let name = desired.name_any();
    match api.create(&PostParams::default(), desired).await {
        Ok(created) => {
            tracing::info!(entry = %name, "created the garden BackupEntry");
            return Ok(created);
        }
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(err("creating", desired)(e)),
    }
    let current = api.get(&name).await.map_err(err("reading", desired))?;
    if current.metadata.deletion_timestamp.is_some() {
        return Err(ApplyError::Deleting { namespace: current.namespace().unwrap_or_default(), name });
    }
    let desired = &decide::keeping_bucket(&current, desired);
    if !decide::needs_apply(&current, desired) {
        return Ok(current);
    }
    let mut finalizers = current.finalizers().to_vec();
    for f in desired.finalizers() {
        if !finalizers.contains(f) {
            finalizers.push(f.clone());
        }
    }
    let patch = serde_json::json!({
        "metadata": { "finalizers": finalizers, "resourceVersion": current.resource_version() },
        "spec": desired.spec,
    });
    tracing::info!(entry = %name, seed = ?desired.spec.seed_name, "updating the garden BackupEntry");
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(err("updating", desired))
}

/// Writes `status` when it differs from the entry's.
pub async fn write_status(
    garden: &kube::Client,
    entry: &BackupEntry,
    status: BackupEntryStatus,
) -> Result<(), ApplyError> {
    if entry.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let api: Api<BackupEntry> = Api::namespaced(garden.clone(), &entry.namespace().unwrap_or_default());
    let patch = serde_json::json!({ "status": status });
    api.patch_status(&entry.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(err("writing the status of", entry))?;
    Ok(())
}
