//! The shoot's BackupEntries (the garden's and the seed's extension entry) and the final etcd snapshot of a migration: checked before etcd starts from it, marked restored after.

use crate::backupentry;
use crate::components::etcd;
use crate::flow::TaskError;
use crate::shoot::backup;
use crate::shoot::objects::extensions as ext;
use crate::shoot::operation::apply::{deploy_extension, task_err};
use crate::shoot::operation::clients::shoot_client;
use crate::shoot::operation::context::OperationContext;
use etcd_backup::snapshot as etcd_snapshot;
use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, ResourceExt};
use std::sync::Arc;

pub(super) async fn deploy_backup_entry(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let (Some(seed), Some(uid)) = (ctx.seed_object.as_ref(), ctx.shoot.metadata.uid.as_deref()) else {
        return Err(TaskError::msg("the seed or the shoot's UID is unknown"));
    };
    let Some(mut entry) = ext::backup_entry(&ctx.values, seed, uid) else {
        return Err(TaskError::msg(format!(
            "seed {} has a backup section without a provider type (spec.backup.provider)",
            seed.name_any()
        )));
    };
    // After a migration the shoot keeps the bucket its data is in.
    if let Some(record) = ctx.snapshot_record.as_ref().filter(|r| r.entry_name == entry.name_any()) {
        entry.spec.bucket_name = record.bucket_name.clone();
    }
    // The garden's entry first (the record that outlives the shoot for the deletion grace
    // period), then the seed's extension entry, then the garden entry's status from it.
    let seed_name = ctx.config.seed.name.as_str();
    let desired = backupentry::decide::desired(&ctx.shoot, seed_name, &entry.spec.bucket_name, &entry.name_any());
    let garden_entry = backupentry::apply::apply(&ctx.garden, &desired).await.map_err(task_err)?;
    // The garden entry keeps the bucket the data is in, also when the shoot moved to another
    // seed without a final snapshot (the source seed was lost): its backups are found there.
    entry.spec.bucket_name = garden_entry.spec.bucket_name.clone();
    let ready = deploy_extension(&ctx, &entry).await?;
    let status = backupentry::decide::status_from(&garden_entry, &ready, seed_name);
    backupentry::apply::write_status(&ctx.garden, &garden_entry, status).await.map_err(task_err)?;
    ctx.found().backup_dir = backup::host_path(&ready);
    Ok(())
}

/// Before etcd starts from a final snapshot: the file must be the one the source recorded, or
/// etcd would silently start empty (missing file) or from other data.
pub(super) async fn verify_final_snapshot(ctx: &OperationContext) -> Result<(), TaskError> {
    // A hibernated shoot's etcd does not start: the snapshot waits for the wake-up.
    let pending = ctx.snapshot_record.as_ref().filter(|r| !r.is_restored() && !ctx.values.hibernated);
    let Some(record) = pending else {
        return Ok(());
    };
    let Some(dir) = ctx.found().backup_dir.clone() else {
        return Err(TaskError::msg(format!(
            "the final etcd snapshot of shoot {} is recorded, but its BackupEntry {} publishes no directory",
            ctx.values.technical_id, record.entry_name
        )));
    };
    let path = std::path::Path::new(&dir).join(&record.file);
    let consumed = std::path::Path::new(&dir).join(etcd::RESTORED_SNAPSHOT);
    // Renamed by an earlier run whose record update did not land: etcd was restored then.
    let path = if !path.exists() && consumed.exists() { consumed } else { path };
    let sha256 = etcd_snapshot::file_sha256(&path).await.map_err(task_err)?;
    if sha256 != record.sha256 {
        return Err(TaskError::msg(format!(
            "the final etcd snapshot {} does not match its record in the ShootState (sha256 {sha256}, recorded {})",
            path.display(),
            record.sha256
        )));
    }
    Ok(())
}

/// After a successful restore from a final snapshot: rename the file (so a later loss of
/// etcd's volume does not bring back this old state unnoticed) and mark the record restored.
pub(super) async fn complete_restore(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let Some(record) = ctx.snapshot_record.clone().filter(|r| !r.is_restored()) else {
        return Ok(());
    };
    // etcd must really hold the restored data: the API server's list revision is etcd's
    // revision, at least the snapshot's.
    let client = shoot_client(&ctx).await?;
    let namespaces: Api<Namespace> = Api::all(client);
    let listed = namespaces.list_metadata(&kube::api::ListParams::default().limit(1)).await.map_err(task_err)?;
    let revision: i64 = listed.metadata.resource_version.as_deref().and_then(|r| r.parse().ok()).unwrap_or(0);
    let recorded: i64 = record.revision.parse().unwrap_or(0);
    if revision < recorded {
        return Err(TaskError::msg(format!(
            "etcd of shoot {} is at revision {revision}, below the final snapshot's {recorded}: the restore did not happen",
            ctx.values.technical_id
        )));
    }
    let dir = ctx.found().backup_dir.clone();
    if let Some(dir) = dir {
        let from = std::path::Path::new(&dir).join(&record.file);
        let to = std::path::Path::new(&dir).join(etcd::RESTORED_SNAPSHOT);
        if let Err(e) = tokio::fs::rename(&from, &to).await
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(TaskError::msg(format!("renaming {} to {}: {e}", from.display(), to.display())));
        }
    }
    let restored = backup::SnapshotRecord { restored: "true".to_string(), ..record };
    backup::write_record(&ctx.garden, &ctx.values.garden_namespace, &ctx.values.name, &restored).await.map_err(task_err)
}
