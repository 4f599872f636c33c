//! What the garden's BackupEntry of a shoot says, as pure functions: the desired object (bucket,
//! seed, shoot), its status mirrored from the extension BackupEntry in the seed, and when a
//! deleted entry's data may go (Gardener's deletion grace period, or at once when the
//! `backupentry.core.gardener.cloud/force-deletion` annotation says so).

use api::common::{LastOperation, LastOperationState, LastOperationType, ObjectReference};
use api::core::{BackupEntry, BackupEntrySpec, BackupEntryStatus, Shoot};
use api::extensions::BackupEntry as ExtensionBackupEntry;
use api::helpers::constants::FINALIZER_GARDENER;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::{Resource, ResourceExt};
use std::time::Duration;

/// The annotation that ends a deleted entry's grace period at once (Gardener's).
pub const ANNOTATION_FORCE_DELETION: &str = "backupentry.core.gardener.cloud/force-deletion";

/// The garden BackupEntry `name` of `shoot`, in the shoot's namespace: in `bucket`, kept by
/// `seed`, owned by the Shoot (so that a shoot removed without its flow still leaves an entry
/// that the grace period then ends), with the finalizer that keeps it until its data is gone.
pub fn desired(shoot: &Shoot, seed: &str, bucket: &str, name: &str) -> BackupEntry {
    let mut entry = BackupEntry::new(
        name,
        BackupEntrySpec {
            bucket_name: bucket.to_string(),
            seed_name: Some(seed.to_string()),
            seed: None,
            shoot_ref: Some(ObjectReference {
                api_version: Some("core.gardener.cloud/v1beta1".into()),
                kind: Some("Shoot".into()),
                name: shoot.name_any(),
                namespace: shoot.namespace(),
            }),
        },
    );
    entry.metadata.namespace = shoot.namespace();
    entry.metadata.finalizers = Some(vec![FINALIZER_GARDENER.to_string()]);
    entry.metadata.owner_references = shoot.controller_owner_ref(&()).map(|owner| {
        // The Shoot's deletion waits for nothing of the entry.
        vec![OwnerReference { block_owner_deletion: None, ..owner }]
    });
    entry
}

/// Whether `current` must be written to become `desired`: another spec, or the finalizer
/// missing.
pub fn needs_apply(current: &BackupEntry, desired: &BackupEntry) -> bool {
    current.spec != desired.spec || !current.finalizers().iter().any(|f| f == FINALIZER_GARDENER)
}

/// `desired` with the bucket of the existing entry `current`: the backups stay where they are
/// when the shoot moves to another seed (Gardener changes an entry's bucket only by a new
/// entry).
pub fn keeping_bucket(current: &BackupEntry, desired: &BackupEntry) -> BackupEntry {
    let mut out = desired.clone();
    if !current.spec.bucket_name.is_empty() {
        out.spec.bucket_name = current.spec.bucket_name.clone();
    }
    out
}

/// The status of the garden entry once the seed's extension entry `ext` has been reconciled:
/// its last operation and error, the garden entry's generation, the seed.
pub fn status_from(entry: &BackupEntry, ext: &ExtensionBackupEntry, seed: &str) -> BackupEntryStatus {
    let ext_status = ext.status.as_ref().map(|s| &s.default);
    BackupEntryStatus {
        last_operation: ext_status.and_then(|s| s.last_operation.clone()),
        last_error: ext_status.and_then(|s| s.last_error.clone()),
        observed_generation: entry.metadata.generation,
        seed_name: Some(seed.to_string()),
        migration_start_time: entry.status.as_ref().and_then(|s| s.migration_start_time.clone()),
    }
}

/// What a deleted entry's controller does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deletion {
    /// Keep the data: the grace period ends in this long.
    Keep(Duration),
    /// Delete the extension entry (and with it the data), then release the finalizer.
    Now,
}

/// When the data of an entry deleted at `deleted` goes, `grace` later, or at once when the entry
/// carries [`ANNOTATION_FORCE_DELETION`] `"true"`.
pub fn deletion(entry: &BackupEntry, now: &Time, grace: Duration) -> Deletion {
    if entry.annotations().get(ANNOTATION_FORCE_DELETION).is_some_and(|v| v == "true") {
        return Deletion::Now;
    }
    let Some(deleted) = entry.metadata.deletion_timestamp.as_ref() else { return Deletion::Keep(grace) };
    let elapsed = now.0.duration_since(deleted.0);
    let elapsed = Duration::try_from(elapsed).unwrap_or_default();
    match grace.checked_sub(elapsed) {
        Some(left) if !left.is_zero() => Deletion::Keep(left),
        _ => Deletion::Now,
    }
}

/// The status of an entry whose data is kept until `until`; `None` when it already says so.
pub fn keeping_status(entry: &BackupEntry, until: &Time, now: &Time) -> Option<BackupEntryStatus> {
    let description = format!(
        "The shoot is deleted; its backups are kept until {} (the deletion grace period), then deleted.",
        until.0
    );
    let current = entry.status.clone().unwrap_or_default();
    let op = current.last_operation.as_ref();
    if op.is_some_and(|o| o.type_ == LastOperationType::Delete && o.description == description) {
        return None;
    }
    Some(BackupEntryStatus {
        last_operation: Some(LastOperation {
            description,
            last_update_time: now.clone(),
            progress: 0,
            state: LastOperationState::Pending,
            type_: LastOperationType::Delete,
        }),
        ..current
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;
    use k8s_openapi::jiff::{SignedDuration, Timestamp};

    fn shoot() -> Shoot {
        let mut s = Shoot::new("demo", Default::default());
        s.metadata.namespace = Some("garden-dev".into());
        s.metadata.uid = Some("uid-1".into());
        s
    }

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(1_800_000_000 + seconds).unwrap())
    }

    fn deleted_at(seconds: i64) -> BackupEntry {
        let mut e = desired(&shoot(), "local", "bucket", "shoot--dev--demo--uid-1");
        e.metadata.deletion_timestamp = Some(at(seconds));
        e
    }

    #[test]
    fn the_entry_names_bucket_seed_and_shoot_and_carries_the_finalizer() {
        let e = desired(&shoot(), "local", "bucket", "shoot--dev--demo--uid-1");
        assert_eq!(e.namespace().as_deref(), Some("garden-dev"));
        assert_eq!((e.spec.bucket_name.as_str(), e.spec.seed_name()), ("bucket", Some("local")));
        assert_eq!(e.spec.shoot_ref.as_ref().map(|r| r.name.as_str()), Some("demo"));
        assert_eq!(e.finalizers(), [FINALIZER_GARDENER.to_string()]);
        let owner = &e.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Shoot", "uid-1"));
        assert!(!needs_apply(&e, &e.clone()));
        let mut moved = e.clone();
        moved.spec.seed_name = Some("other".into());
        assert!(needs_apply(&e, &moved), "a new seed is written");
        let mut elsewhere = desired(&shoot(), "other-seed", "other-bucket", "shoot--dev--demo--uid-1");
        elsewhere = keeping_bucket(&e, &elsewhere);
        assert_eq!(elsewhere.spec.bucket_name, "bucket", "the bucket stays with the data");
        assert_eq!(elsewhere.spec.seed_name(), Some("other-seed"));
        let mut released = e.clone();
        released.metadata.finalizers = None;
        assert!(needs_apply(&released, &e), "a missing finalizer is written");
    }

    #[test]
    fn data_is_kept_for_the_grace_period_from_the_deletion_then_deleted() {
        let grace = Duration::from_secs(600);
        assert_eq!(deletion(&deleted_at(0), &at(0), grace), Deletion::Keep(grace));
        assert_eq!(deletion(&deleted_at(0), &at(599), grace), Deletion::Keep(Duration::from_secs(1)));
        assert_eq!(deletion(&deleted_at(0), &at(600), grace), Deletion::Now);
        assert_eq!(deletion(&deleted_at(0), &at(7200), grace), Deletion::Now);
        assert_eq!(deletion(&deleted_at(0), &at(0), Duration::ZERO), Deletion::Now, "no grace period: at once");
        // A clock behind the deletion time keeps the whole period.
        assert_eq!(deletion(&deleted_at(10), &at(0), grace), Deletion::Keep(grace));
        let mut forced = deleted_at(0);
        forced.metadata.annotations = Some([(ANNOTATION_FORCE_DELETION.to_string(), "true".to_string())].into());
        assert_eq!(deletion(&forced, &at(1), grace), Deletion::Now);
    }

    #[test]
    fn the_keeping_status_is_written_once() {
        let mut e = deleted_at(0);
        let until = Time(at(0).0 + SignedDuration::from_secs(600));
        let status = keeping_status(&e, &until, &at(1)).unwrap();
        let op = status.last_operation.as_ref().unwrap();
        assert_eq!((op.type_, op.state), (LastOperationType::Delete, LastOperationState::Pending));
        assert!(op.description.contains("kept until"), "{}", op.description);
        e.status = Some(status);
        assert_eq!(keeping_status(&e, &until, &at(2)), None, "nothing changed, nothing written");
    }
}
