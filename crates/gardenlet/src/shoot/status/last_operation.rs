//! What the Shoot's status should say about an operation (pure): when it starts, as it
//! progresses, and when the flow ends (Succeeded, Error with per-task `lastErrors`, or Failed
//! once a final error code appears or the retry window is over).

use crate::flow::FlowResult;
use api::common::{LastError, LastOperation, LastOperationState, LastOperationType, has_non_retryable_code};
use api::core::{Shoot, ShootStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::time::Duration;

/// The operation a Shoot's reconcile is: Create until a Create succeeded; Restore after a
/// source seed handed the shoot over (until the Restore succeeded) and on a forced takeover;
/// Reconcile otherwise.
pub fn reconcile_type(status: Option<&ShootStatus>, takeover: bool) -> LastOperationType {
    use LastOperationState::Succeeded;
    use LastOperationType::{Create, Reconcile, Restore};
    if takeover {
        return Restore;
    }
    match status.and_then(|s| s.last_operation.as_ref()) {
        None => Create,
        Some(l) if l.type_ == Create && l.state != Succeeded => Create,
        Some(l) if restore_pending(l) => Restore,
        Some(_) => Reconcile,
    }
}

/// Whether the owner must restore before anything else: after a hand-over, after an
/// unfinished restore, and after a migration that stopped half-way (its extension objects
/// are migrated and must come back with their saved state).
pub fn restore_pending(last: &LastOperation) -> bool {
    match last.type_ {
        LastOperationType::Migrate => true,
        LastOperationType::Restore => last.state != LastOperationState::Succeeded,
        _ => false,
    }
}

fn op(
    type_: LastOperationType,
    state: LastOperationState,
    progress: i32,
    description: String,
    now: &Time,
) -> LastOperation {
    LastOperation { description, last_update_time: now.clone(), progress, state, type_ }
}

/// The status patch at the start of an operation.
pub fn started(type_: LastOperationType, now: &Time) -> LastOperation {
    let verb = match type_ {
        LastOperationType::Delete => "Deleting",
        LastOperationType::Create => "Creating",
        _ => "Reconciling",
    };
    op(type_, LastOperationState::Processing, 0, format!("{verb} the shoot cluster"), now)
}

/// Progress while the flow runs: the task that finished and the tasks the operation now waits
/// for (`Finished task "A"; waiting for "B", "C"`).
pub fn progressed(type_: LastOperationType, percent: i32, task: &str, running: &[&str], now: &Time) -> LastOperation {
    let mut description = format!("Finished task {task:?}");
    if !running.is_empty() {
        let names: Vec<String> = running.iter().map(|t| format!("{t:?}")).collect();
        description.push_str(&format!("; waiting for {}", names.join(", ")));
    }
    op(type_, LastOperationState::Processing, percent.clamp(0, 99), description, now)
}

#[cfg(test)]
mod progress_tests {
    use super::*;

    #[test]
    fn progress_names_what_the_operation_waits_for() {
        let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let p = progressed(LastOperationType::Create, 90, "Deploying kube-apiserver", &["Deploying Network"], &now);
        assert_eq!(p.description, "Finished task \"Deploying kube-apiserver\"; waiting for \"Deploying Network\"");
        assert_eq!(p.state, LastOperationState::Processing);
        let done = progressed(LastOperationType::Create, 100, "Checking control plane health", &[], &now);
        assert_eq!(done.description, "Finished task \"Checking control plane health\"");
        assert_eq!(done.progress, 99, "100 only once the operation succeeded");
    }
}

/// The outcome of a finished flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub last_operation: LastOperation,
    pub last_errors: Vec<LastError>,
    /// Set at the first failure of a cycle, cleared on success.
    pub retry_cycle_start_time: Option<Time>,
    /// Whether gardenlet stops retrying.
    pub failed: bool,
}

/// A succeeded Restore says what etcd was restored from (`note`: the restore's own words, from
/// the etcd pods), e.g. "... restored on this seed. etcd-main-0 was restored from its backups at
/// <time>: restored from Full-... and 3 delta snapshots up to revision 812."
pub fn naming_the_restore(last: &mut LastOperation, note: Option<&str>) {
    if let Some(note) = note.map(str::trim).filter(|n| !n.is_empty()) {
        last.description = format!("{} {note}", last.description);
    }
}

/// Folds a flow result into the status: errors of failed tasks replace their earlier entries,
/// entries of tasks that succeeded this time are dropped (the error cleaner), others stay.
pub fn finished(
    type_: LastOperationType,
    previous: Option<&ShootStatus>,
    result: &FlowResult,
    retry_window: Duration,
    now: &Time,
) -> Finished {
    if result.is_success() {
        let description = match type_ {
            LastOperationType::Delete => "Shoot cluster has been successfully deleted.",
            LastOperationType::Migrate => "Shoot control plane has been migrated away from this seed.",
            LastOperationType::Restore => "Shoot control plane has been restored on this seed.",
            _ => "Shoot cluster has been successfully reconciled.",
        };
        return Finished {
            last_operation: op(type_, LastOperationState::Succeeded, 100, description.to_string(), now),
            last_errors: Vec::new(),
            retry_cycle_start_time: None,
            failed: false,
        };
    }
    let mut errors: Vec<LastError> = previous
        .map(|s| s.last_errors.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            let task = e.task_id.as_deref().unwrap_or_default();
            !result.succeeded.iter().any(|t| t.0 == task) && !result.failed.iter().any(|f| f.task.0 == task)
        })
        .collect();
    for failure in &result.failed {
        errors.push(LastError {
            description: failure.error.message().to_string(),
            task_id: Some(failure.task.0.clone()),
            codes: failure.error.codes().to_vec(),
            last_update_time: Some(now.clone()),
        });
    }
    let cycle_start = previous.and_then(|s| s.retry_cycle_start_time.clone()).unwrap_or_else(|| now.clone());
    let elapsed = now.0.duration_since(cycle_start.0).unsigned_abs();
    let final_code = has_non_retryable_code(&result.codes());
    let failed = final_code || elapsed >= retry_window;
    let state = if failed { LastOperationState::Failed } else { LastOperationState::Error };
    let mut description = result.summary();
    if final_code {
        description.push_str(" (a non-retryable error code was reported; fix the cause and request a retry)");
    } else if failed {
        description.push_str(" (the retry window is over)");
    }
    Finished {
        last_operation: op(type_, state, result.percent(), description, now),
        last_errors: errors,
        retry_cycle_start_time: Some(cycle_start),
        failed,
    }
}

/// Whether a reconcile is a quiet resync: neither requested nor a hibernation change, of a shoot
/// whose last Create or Reconcile succeeded for its current generation. A quiet resync writes
/// no `Processing` status and no progress, and nothing at all when its result changes nothing
/// ([`unchanged`]): an unchanged, healthy shoot costs no write per resync.
pub fn quiet_resync(shoot: &Shoot, type_: LastOperationType, requested_or_transition: bool) -> bool {
    let Some(status) = shoot.status.as_ref() else { return false };
    let succeeded = status.last_operation.as_ref().is_some_and(|l| {
        l.state == api::common::LastOperationState::Succeeded
            && matches!(l.type_, LastOperationType::Create | LastOperationType::Reconcile)
    });
    !requested_or_transition
        && type_ == LastOperationType::Reconcile
        && succeeded
        && status.last_errors.is_empty()
        && status.observed_generation.is_some()
        && status.observed_generation == shoot.metadata.generation
}

/// Whether writing `desired` (a status patch) would change nothing but `lastOperation`: every
/// other field it sets equals the previous status, objects field by field as a merge patch
/// applies them (absent, `null` and `[]` count as the same).
pub fn unchanged(previous: &ShootStatus, desired: &serde_json::Value) -> bool {
    let Ok(previous) = serde_json::to_value(previous) else { return false };
    let Some(fields) = desired.as_object() else { return false };
    fields.iter().filter(|(k, _)| k.as_str() != "lastOperation").all(|(k, v)| same(previous.get(k), v))
}

/// Whether merging `patch` into `old` leaves it as it is.
fn same(old: Option<&serde_json::Value>, patch: &serde_json::Value) -> bool {
    let empty = |v: Option<&serde_json::Value>| match v {
        None | Some(serde_json::Value::Null) => true,
        Some(serde_json::Value::Array(a)) => a.is_empty(),
        Some(serde_json::Value::Object(o)) => o.is_empty(),
        _ => false,
    };
    match patch {
        serde_json::Value::Object(fields) if !fields.is_empty() => {
            fields.iter().all(|(k, v)| same(old.and_then(|o| o.get(k)), v))
        }
        _ => old == Some(patch) || (empty(old) && empty(Some(patch))),
    }
}

/// True when the shoot's last operation failed for good: no automatic retry.
pub fn is_failed(shoot: &Shoot) -> bool {
    shoot.status.as_ref().and_then(|s| s.last_operation.as_ref()).is_some_and(|l| l.state == LastOperationState::Failed)
}

#[cfg(test)]
mod quiet_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;
    use serde_json::json;

    fn shoot(op: &str, state: &str, generation: i64, observed: i64, errors: bool) -> Shoot {
        let errors = if errors { json!([{"description": "x"}]) } else { json!([]) };
        serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "garden-dev", "generation": generation},
            "spec": {"region": "r", "provider": {"type": "local"}},
            "status": {"hibernated": false, "observedGeneration": observed, "lastErrors": errors,
                       "technicalID": "shoot--dev--s",
                       "lastOperation": {"type": op, "state": state, "progress": 100, "description": "",
                                         "lastUpdateTime": "2026-01-01T00:00:00Z"}}
        }))
        .unwrap()
    }

    #[test]
    fn a_nested_patch_is_compared_field_by_field() {
        let mut status: ShootStatus = serde_json::from_value(json!({
            "hibernated": false,
            "credentials": {"rotation": {"etcdEncryptionKey": {"phase": "Completed"}},
                            "encryptionAtRest": {"provider": {"type": "aescbc"}}},
        }))
        .unwrap();
        let patch = |t: &str| json!({"credentials": {"encryptionAtRest": {"resources": [], "provider": {"type": t}}}});
        assert!(unchanged(&status, &patch("aescbc")), "the rotation it does not set stays; [] is no resource");
        assert!(!unchanged(&status, &patch("secretbox")));
        status.credentials = None;
        assert!(!unchanged(&status, &patch("aescbc")), "recording the provider the first time is a change");
    }

    #[test]
    fn only_a_plain_resync_of_a_healthy_current_shoot_is_quiet() {
        let r = LastOperationType::Reconcile;
        assert!(quiet_resync(&shoot("Reconcile", "Succeeded", 2, 2, false), r, false));
        assert!(quiet_resync(&shoot("Create", "Succeeded", 1, 1, false), r, false));
        assert!(!quiet_resync(&shoot("Reconcile", "Succeeded", 2, 2, false), r, true), "requested");
        assert!(!quiet_resync(&shoot("Reconcile", "Succeeded", 3, 2, false), r, false), "spec changed");
        assert!(!quiet_resync(&shoot("Reconcile", "Error", 2, 2, false), r, false));
        assert!(!quiet_resync(&shoot("Reconcile", "Succeeded", 2, 2, true), r, false), "errors to clear");
        assert!(!quiet_resync(&shoot("Reconcile", "Succeeded", 2, 2, false), LastOperationType::Restore, false));
    }

    #[test]
    fn unchanged_ignores_last_operation_and_empty_forms() {
        let previous = shoot("Reconcile", "Succeeded", 2, 2, false).status.unwrap();
        let same = json!({"lastOperation": {"state": "Succeeded"}, "lastErrors": [], "retryCycleStartTime": null,
                          "observedGeneration": 2, "hibernated": false});
        assert!(unchanged(&previous, &same));
        let woke = json!({"lastOperation": {}, "hibernated": true});
        assert!(!unchanged(&previous, &woke));
        let addresses = json!({"advertisedAddresses": [{"name": "external", "url": "https://a"}]});
        assert!(!unchanged(&previous, &addresses));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{TaskError, TaskFailure, TaskId};
    use api::common::ErrorCode;
    use k8s_openapi::jiff::Timestamp;

    fn at(s: i64) -> Time {
        Time(Timestamp::from_second(s).unwrap())
    }

    fn failing(task: &str, codes: Vec<ErrorCode>) -> FlowResult {
        FlowResult {
            succeeded: vec![TaskId::from("Deploying namespace")],
            failed: vec![TaskFailure { task: TaskId::from(task), error: TaskError::msg("boom").with_codes(codes) }],
            blocked: vec![TaskId::from("later")],
            ..Default::default()
        }
    }

    #[test]
    fn create_until_a_create_succeeded() {
        assert_eq!(reconcile_type(None, false), LastOperationType::Create);
        let mut s =
            ShootStatus { last_operation: Some(started(LastOperationType::Create, &at(1))), ..Default::default() };
        assert_eq!(reconcile_type(Some(&s), false), LastOperationType::Create);
        if let Some(l) = s.last_operation.as_mut() {
            l.state = LastOperationState::Succeeded;
        }
        assert_eq!(reconcile_type(Some(&s), false), LastOperationType::Reconcile);
        assert_eq!(reconcile_type(Some(&s), true), LastOperationType::Restore, "forced takeover");
    }

    #[test]
    fn a_succeeded_restore_names_what_etcd_was_restored_from() {
        let mut last = op(LastOperationType::Restore, LastOperationState::Succeeded, 100, "Restored.".into(), &at(1));
        naming_the_restore(&mut last, None);
        assert_eq!(last.description, "Restored.", "nothing restored from backups: nothing added");
        naming_the_restore(&mut last, Some("  "));
        assert_eq!(last.description, "Restored.");
        let note = "etcd-main-0 was restored from its backups at 2026-11-28T10:00:00Z: restored from Full-00000000-00000812-1764324000 and 2 delta snapshots up to revision 830.";
        naming_the_restore(&mut last, Some(note));
        assert_eq!(last.description, format!("Restored. {note}"));
    }

    #[test]
    fn restore_after_a_hand_over_until_it_succeeded() {
        let with = |type_, state| ShootStatus {
            last_operation: Some(LastOperation { state, ..started(type_, &at(1)) }),
            ..Default::default()
        };
        use LastOperationState::{Error, Processing, Succeeded};
        use LastOperationType::{Migrate, Reconcile, Restore};
        assert_eq!(reconcile_type(Some(&with(Migrate, Succeeded)), false), Restore);
        assert_eq!(reconcile_type(Some(&with(Migrate, Error)), false), Restore, "a migration stopped half-way");
        assert_eq!(reconcile_type(Some(&with(Restore, Processing)), false), Restore);
        assert_eq!(reconcile_type(Some(&with(Restore, Error)), false), Restore);
        assert_eq!(reconcile_type(Some(&with(Restore, Succeeded)), false), Reconcile);
    }

    #[test]
    fn retryable_errors_land_in_last_errors_with_the_task() {
        let f = finished(
            LastOperationType::Create,
            None,
            &failing("Waiting for Infrastructure", vec![]),
            Duration::from_secs(60),
            &at(10),
        );
        assert!(!f.failed);
        assert_eq!(f.last_operation.state, LastOperationState::Error);
        assert_eq!(f.last_operation.progress, 33);
        assert_eq!(f.last_errors.len(), 1);
        assert_eq!(f.last_errors[0].task_id.as_deref(), Some("Waiting for Infrastructure"));
        assert_eq!(f.retry_cycle_start_time, Some(at(10)));
    }

    #[test]
    fn final_codes_and_the_retry_window_fail_the_shoot() {
        let f = finished(
            LastOperationType::Reconcile,
            None,
            &failing("x", vec![ErrorCode::InfraUnauthorized]),
            Duration::from_secs(60),
            &at(10),
        );
        assert!(f.failed);
        assert_eq!(f.last_operation.state, LastOperationState::Failed);
        assert_eq!(f.last_errors[0].codes, [ErrorCode::InfraUnauthorized]);

        let previous = ShootStatus { retry_cycle_start_time: Some(at(0)), ..Default::default() };
        let f = finished(
            LastOperationType::Reconcile,
            Some(&previous),
            &failing("x", vec![]),
            Duration::from_secs(60),
            &at(61),
        );
        assert!(f.failed, "the retry window of 60 s is over");
    }

    #[test]
    fn success_clears_errors_and_the_cleaner_drops_recovered_tasks() {
        let previous = ShootStatus {
            last_errors: vec![
                LastError {
                    description: "old".into(),
                    task_id: Some("Deploying namespace".into()),
                    codes: vec![],
                    last_update_time: None,
                },
                LastError {
                    description: "other".into(),
                    task_id: Some("untouched".into()),
                    codes: vec![],
                    last_update_time: None,
                },
            ],
            ..Default::default()
        };
        let f = finished(
            LastOperationType::Reconcile,
            Some(&previous),
            &failing("x", vec![]),
            Duration::from_secs(60),
            &at(1),
        );
        let tasks: Vec<_> = f.last_errors.iter().map(|e| e.task_id.clone().unwrap()).collect();
        assert_eq!(tasks, ["untouched", "x"], "the namespace task recovered; x failed now");
        let ok = finished(
            LastOperationType::Reconcile,
            Some(&previous),
            &FlowResult::default(),
            Duration::from_secs(60),
            &at(1),
        );
        assert!(ok.last_errors.is_empty());
        assert_eq!(ok.last_operation.state, LastOperationState::Succeeded);
        assert_eq!(ok.last_operation.progress, 100);
    }
}
