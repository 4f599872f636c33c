//! When gardenlet acts on a Shoot (pure): never while `shoot.gardener.cloud/ignore` is `"true"`;
//! only shoots of its seed; deletion (forced with `confirmation.gardener.cloud/force-deletion`);
//! an operation annotation (`reconcile`, `retry`, a credential rotation, `rollout-workers=…`, or
//! several of them separated by `;`); a generation it has not reconciled; an unfinished
//! operation; and otherwise a regular resync, spread per shoot so that many shoots do not
//! resync at once. A Failed shoot waits for a `retry` (or a spec change).

use api::common::{LastOperationState, LastOperationType};
use api::core::Shoot;
use api::helpers::constants::{ANNOTATION_FORCE_DELETION, operation};
use api::helpers::shoot_operation::{self, has};
use std::time::Duration;

/// The operation annotation value with which an operator takes over a shoot whose owning
/// seed (`status.seedName`) is gone.
pub const FORCE_RESTORE: &str = operation::FORCE_RESTORE;

/// Why an ignored shoot is skipped.
pub const IGNORED: &str = "shoot.gardener.cloud/ignore is \"true\": neither reconciled nor deleted until it is removed";

/// What to do with a Shoot now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Skip(&'static str),
    Reconcile {
        requested: bool,
    },
    /// The shoot moved to another seed while this one still runs it: migrate, then hand over.
    Migrate,
    Delete,
    /// A deletion confirmed with `confirmation.gardener.cloud/force-deletion: "true"`: the
    /// extension objects are not cleaned up but deleted by force
    /// ([`crate::shoot::flows::force_delete`]).
    ForceDelete,
    RequeueAfter(Duration),
}

/// A per-shoot offset within `period / 10`, so resyncs spread out.
pub fn spread(uid: &str, period: Duration) -> Duration {
    let hash = uid.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let window = (period.as_secs() / 10).max(1);
    Duration::from_secs(hash % window)
}

/// The deletion the shoot asks for: [`Action::ForceDelete`] when confirmed with
/// `confirmation.gardener.cloud/force-deletion: "true"`, else [`Action::Delete`]; `None` while it
/// is not being deleted.
pub fn deletion(shoot: &Shoot) -> Option<Action> {
    shoot.metadata.deletion_timestamp.as_ref()?;
    let forced = shoot.metadata.annotations.as_ref().and_then(|a| a.get(ANNOTATION_FORCE_DELETION));
    Some(if forced.is_some_and(|v| v == "true") { Action::ForceDelete } else { Action::Delete })
}

pub fn decide(shoot: &Shoot, seed_name: &str, sync_period: Duration, now: k8s_openapi::jiff::Timestamp) -> Action {
    // An operator keeps gardenlet's hands off the shoot (Gardener's semantics: the care
    // controller still reports on it).
    if shoot_operation::ignored(shoot) {
        return Action::Skip(IGNORED);
    }
    let owner = shoot.status.as_ref().and_then(|s| s.seed_name.as_deref()).filter(|s| !s.is_empty());
    let annotation = shoot_operation::value(shoot);
    let last = shoot.status.as_ref().and_then(|s| s.last_operation.as_ref());
    if shoot.spec.seed_name.as_deref() != Some(seed_name) {
        // Still the owner: the control plane runs here until it is migrated and handed over
        // (a deletion waits for the hand-over and then happens on the new seed).
        if owner == Some(seed_name) {
            let failed =
                last.is_some_and(|l| l.type_ == LastOperationType::Migrate && l.state == LastOperationState::Failed);
            if failed && !has(annotation, operation::RETRY) {
                return Action::Skip("the migration failed; annotate gardener.cloud/operation=retry");
            }
            return Action::Migrate;
        }
        return Action::Skip("scheduled to another seed");
    }
    // Ownership: `status.seedName` names the seed that runs the control plane. While it names
    // another seed, that seed has not handed the shoot over, and taking it would run two
    // control planes for one cluster (this holds for a deletion too). An operator whose
    // source seed is gone forces the takeover with `force-restore`; the old seed never acts
    // again, since neither the spec nor the status names it any more.
    if let Some(owner) = owner
        && owner != seed_name
    {
        return if has(annotation, FORCE_RESTORE) {
            Action::Reconcile { requested: true }
        } else {
            Action::Skip(
                "another seed still owns the shoot (status.seedName); annotate gardener.cloud/operation=force-restore to take it over",
            )
        };
    }
    // Handed over (or a restore unfinished): restore first, also before a deletion, so that
    // the deletion finds the extension objects and deletes the real infrastructure.
    if last.is_some_and(crate::shoot::status::last_operation::restore_pending) {
        return Action::Reconcile { requested: annotation.is_some() };
    }
    if let Some(deleting) = deletion(shoot) {
        return deleting;
    }
    // A force-restore on a shoot this seed owns (or nobody does) is consumed, not kept armed;
    // `reconcile`, `retry`, a credential rotation (a reconcile that takes the rotation's step)
    // and a rollout of worker pools are requested reconciles, alone or as parts of a list.
    if requested(annotation) {
        return Action::Reconcile { requested: true };
    }
    let status = shoot.status.as_ref();
    let Some(last) = last else {
        return Action::Reconcile { requested: false };
    };
    if status.and_then(|s| s.observed_generation) != shoot.metadata.generation {
        return Action::Reconcile { requested: false };
    }
    match last.state {
        LastOperationState::Failed => {
            Action::Skip("the last operation failed; annotate gardener.cloud/operation=retry")
        }
        LastOperationState::Succeeded => {
            let due = last.last_update_time.0
                + sync_period
                + spread(shoot.metadata.uid.as_deref().unwrap_or_default(), sync_period);
            if now >= due {
                Action::Reconcile { requested: false }
            } else {
                Action::RequeueAfter(due.duration_since(now).unsigned_abs())
            }
        }
        _ => Action::Reconcile { requested: false },
    }
}

/// Whether the operation annotation asks gardenlet for a reconcile: any part of it that
/// gardenlet acts on (`maintain` is gardener-controller-manager's).
pub fn requested(annotation: Option<&str>) -> bool {
    let Some(value) = annotation else { return false };
    shoot_operation::parts(value).any(|part| {
        matches!(part, operation::RECONCILE | operation::RETRY | FORCE_RESTORE)
            || api::helpers::rotation::request_one(part, false).is_some()
            || shoot_operation::rollout_pools(part).is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn shoot(extra: serde_json::Value) -> Shoot {
        let mut v = serde_json::json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
            "metadata": {"name": "s", "namespace": "garden-dev", "generation": 1, "uid": "u-1"},
            "spec": {"region": "local", "provider": {"type": "local"}, "kubernetes": {"version": "1.20.2"}, "seedName": "local"},
        });
        json_merge(&mut v, extra);
        serde_json::from_value(v).unwrap()
    }

    fn json_merge(a: &mut serde_json::Value, b: serde_json::Value) {
        match (a, b) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    json_merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    fn succeeded_at(secs: i64, generation: i64) -> serde_json::Value {
        serde_json::json!({"status": {"observedGeneration": generation, "lastOperation": {
            "type": "Reconcile", "state": "Succeeded", "progress": 100, "description": "",
            "lastUpdateTime": Timestamp::from_second(secs).unwrap().to_string()}}})
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn triggers() {
        let now = Timestamp::from_second(10_000).unwrap();
        assert_eq!(
            decide(&shoot(serde_json::json!({"spec": {"seedName": "other"}})), "local", HOUR, now),
            Action::Skip("scheduled to another seed")
        );
        assert_eq!(decide(&shoot(serde_json::json!({})), "local", HOUR, now), Action::Reconcile { requested: false });
        assert_eq!(
            decide(
                &shoot(serde_json::json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}})),
                "local",
                HOUR,
                now
            ),
            Action::Delete
        );
        let annotated = serde_json::json!({"metadata": {"annotations": {"gardener.cloud/operation": "reconcile"}}});
        let mut s = shoot(annotated);
        s.status = shoot(succeeded_at(9_999, 1)).status;
        assert_eq!(decide(&s, "local", HOUR, now), Action::Reconcile { requested: true });
        let rotate = serde_json::json!({"metadata": {"annotations": {"gardener.cloud/operation": "rotate-ca-start"}}});
        let mut s = shoot(rotate);
        s.status = shoot(succeeded_at(9_999, 1)).status;
        assert_eq!(decide(&s, "local", HOUR, now), Action::Reconcile { requested: true }, "a rotation request");
        assert_eq!(
            decide(&shoot(succeeded_at(9_999, 0)), "local", HOUR, now),
            Action::Reconcile { requested: false },
            "new generation"
        );
        match decide(&shoot(succeeded_at(9_999, 1)), "local", HOUR, now) {
            Action::RequeueAfter(d) => assert!(d <= HOUR + HOUR / 10 && d > HOUR - Duration::from_secs(2), "{d:?}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            decide(&shoot(succeeded_at(0, 1)), "local", HOUR, now),
            Action::Reconcile { requested: false },
            "resync due"
        );
    }

    #[test]
    fn failed_shoots_wait_for_a_retry() {
        let failed = serde_json::json!({"status": {"observedGeneration": 1, "lastOperation": {
            "type": "Reconcile", "state": "Failed", "progress": 40, "description": "x", "lastUpdateTime": "2024-01-01T00:00:00Z"}}});
        let now = Timestamp::from_second(10_000).unwrap();
        assert!(matches!(decide(&shoot(failed.clone()), "local", HOUR, now), Action::Skip(_)));
        let mut retry = shoot(failed);
        retry.metadata.annotations = Some([("gardener.cloud/operation".to_string(), "retry".to_string())].into());
        assert_eq!(decide(&retry, "local", HOUR, now), Action::Reconcile { requested: true });
    }

    #[test]
    fn a_shoot_owned_by_another_seed_waits_for_hand_over_or_force() {
        let now = Timestamp::from_second(10_000).unwrap();
        let owned_elsewhere = serde_json::json!({"status": {"seedName": "old-seed"}});
        match decide(&shoot(owned_elsewhere.clone()), "local", HOUR, now) {
            Action::Skip(reason) => assert!(reason.contains("force-restore"), "{reason}"),
            other => panic!("{other:?}"),
        }
        let mut forced = shoot(owned_elsewhere);
        forced.metadata.annotations =
            Some([("gardener.cloud/operation".to_string(), "force-restore".to_string())].into());
        assert_eq!(decide(&forced, "local", HOUR, now), Action::Reconcile { requested: true });
        // The old seed still owns it: it migrates (and hands over) before anyone else acts.
        assert_eq!(decide(&forced, "old-seed", HOUR, now), Action::Migrate);
        // Once the status names the new seed, the old seed never acts again.
        let mut taken = forced.clone();
        taken.status.as_mut().unwrap().seed_name = Some("local".into());
        assert_eq!(decide(&taken, "old-seed", HOUR, now), Action::Skip("scheduled to another seed"));
        // Owned by this seed, or never owned: business as usual.
        assert_eq!(
            decide(&shoot(serde_json::json!({"status": {"seedName": "local"}})), "local", HOUR, now),
            Action::Reconcile { requested: false }
        );
    }

    #[test]
    fn a_deletion_waits_for_the_owner_and_for_the_restore() {
        let now = Timestamp::from_second(10_000).unwrap();
        let deleting = serde_json::json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"},
            "status": {"seedName": "old-seed"}});
        assert!(matches!(decide(&shoot(deleting), "local", HOUR, now), Action::Skip(_)));
        let handed_over = serde_json::json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"},
            "status": {"seedName": "local", "observedGeneration": 1, "lastOperation": {
            "type": "Migrate", "state": "Succeeded", "progress": 100, "description": "",
            "lastUpdateTime": "2024-01-01T00:00:00Z"}}});
        assert_eq!(decide(&shoot(handed_over), "local", HOUR, now), Action::Reconcile { requested: false });
    }

    #[test]
    fn a_failed_migration_waits_for_a_retry_and_force_restore_is_always_consumed() {
        let now = Timestamp::from_second(10_000).unwrap();
        let failed = serde_json::json!({"spec": {"seedName": "new"}, "status": {"seedName": "local",
            "lastOperation": {"type": "Migrate", "state": "Failed", "progress": 30, "description": "",
            "lastUpdateTime": "2024-01-01T00:00:00Z"}}});
        let mut s = shoot(failed);
        assert!(matches!(decide(&s, "local", HOUR, now), Action::Skip(_)));
        s.metadata.annotations = Some([("gardener.cloud/operation".to_string(), "retry".to_string())].into());
        assert_eq!(decide(&s, "local", HOUR, now), Action::Migrate);
        let mut owned = shoot(succeeded_at(9_999, 1));
        owned.status.as_mut().unwrap().seed_name = Some("local".into());
        owned.metadata.annotations =
            Some([("gardener.cloud/operation".to_string(), "force-restore".to_string())].into());
        assert_eq!(decide(&owned, "local", HOUR, now), Action::Reconcile { requested: true });
    }

    #[test]
    fn a_hand_over_is_restored_at_once() {
        let now = Timestamp::from_second(10_000).unwrap();
        let handed_over = serde_json::json!({"status": {"seedName": "local", "observedGeneration": 1, "lastOperation": {
            "type": "Migrate", "state": "Succeeded", "progress": 100, "description": "",
            "lastUpdateTime": Timestamp::from_second(9_999).unwrap().to_string()}}});
        assert_eq!(decide(&shoot(handed_over), "local", HOUR, now), Action::Reconcile { requested: false });
    }

    fn annotated(annotations: serde_json::Value, extra: serde_json::Value) -> Shoot {
        let mut s = shoot(extra);
        s.metadata.annotations = serde_json::from_value(annotations).unwrap();
        s
    }

    #[test]
    fn an_ignored_shoot_is_neither_reconciled_nor_deleted() {
        let now = Timestamp::from_second(10_000).unwrap();
        let ignore =
            serde_json::json!({"shoot.gardener.cloud/ignore": "true", "gardener.cloud/operation": "reconcile"});
        assert_eq!(
            decide(&annotated(ignore.clone(), serde_json::json!({})), "local", HOUR, now),
            Action::Skip(IGNORED)
        );
        let deleting = serde_json::json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}});
        assert_eq!(decide(&annotated(ignore.clone(), deleting.clone()), "local", HOUR, now), Action::Skip(IGNORED));
        let forced = serde_json::json!({"shoot.gardener.cloud/ignore": "true",
            "confirmation.gardener.cloud/force-deletion": "true"});
        assert_eq!(decide(&annotated(forced, deleting.clone()), "local", HOUR, now), Action::Skip(IGNORED));
        // A migrating shoot is not migrated either.
        let migrating = serde_json::json!({"spec": {"seedName": "new"}, "status": {"seedName": "local"}});
        assert_eq!(decide(&annotated(ignore, migrating), "local", HOUR, now), Action::Skip(IGNORED));
        // Any other value, or removing it, lets gardenlet act again.
        let not = serde_json::json!({"shoot.gardener.cloud/ignore": "false"});
        assert_eq!(decide(&annotated(not, deleting), "local", HOUR, now), Action::Delete);
    }

    #[test]
    fn a_confirmed_force_deletion_replaces_the_deletion() {
        let now = Timestamp::from_second(10_000).unwrap();
        let deleting = serde_json::json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}});
        let forced = serde_json::json!({"confirmation.gardener.cloud/force-deletion": "true"});
        assert_eq!(decide(&annotated(forced.clone(), deleting), "local", HOUR, now), Action::ForceDelete);
        // Without a deletion the confirmation does nothing (admission refuses it anyway).
        assert_eq!(
            decide(&annotated(forced, serde_json::json!({})), "local", HOUR, now),
            Action::Reconcile { requested: false }
        );
        // A shoot another seed still owns is not force-deleted here either.
        let owned = serde_json::json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"},
            "status": {"seedName": "old-seed"}});
        let forced = serde_json::json!({"confirmation.gardener.cloud/force-deletion": "true"});
        assert!(matches!(decide(&annotated(forced, owned), "local", HOUR, now), Action::Skip(_)));
    }

    #[test]
    fn every_part_of_an_operation_list_counts() {
        let now = Timestamp::from_second(10_000).unwrap();
        for value in [
            "rotate-ca-start;rotate-serviceaccount-key-start",
            "maintain;reconcile",
            "rotate-etcd-encryption-key",
            "rollout-workers=pool",
            "bogus; retry",
        ] {
            let mut s = annotated(serde_json::json!({"gardener.cloud/operation": value}), serde_json::json!({}));
            s.status = shoot(succeeded_at(9_999, 1)).status;
            assert_eq!(decide(&s, "local", HOUR, now), Action::Reconcile { requested: true }, "{value}");
        }
        let mut maintain =
            annotated(serde_json::json!({"gardener.cloud/operation": "maintain"}), serde_json::json!({}));
        maintain.status = shoot(succeeded_at(9_999, 1)).status;
        assert!(matches!(decide(&maintain, "local", HOUR, now), Action::RequeueAfter(_)), "controller-manager's");
        // A failed migration is retried by a `retry` in a list too.
        let failed = serde_json::json!({"spec": {"seedName": "new"}, "status": {"seedName": "local",
            "lastOperation": {"type": "Migrate", "state": "Failed", "progress": 30, "description": "",
            "lastUpdateTime": "2024-01-01T00:00:00Z"}}});
        let retried = annotated(serde_json::json!({"gardener.cloud/operation": "reconcile;retry"}), failed);
        assert_eq!(decide(&retried, "local", HOUR, now), Action::Migrate);
    }

    #[test]
    fn spread_stays_within_a_tenth() {
        for uid in ["a", "b", "0000-1111", "ffff"] {
            assert!(spread(uid, HOUR) < HOUR / 10);
        }
    }
}
