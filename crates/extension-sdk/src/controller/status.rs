//! Pure status transitions of the contract, and the JSON merge patch that carries a status
//! change (nothing is written when nothing changed).
//!
//! * Processing: state Processing, progress 1.
//! * Succeeded: progress 100, `lastError` cleared, `observedGeneration` set.
//! * Error: progress 50, `lastError` with codes, `observedGeneration` set.

use api::common::{ErrorCode, LastError, LastOperation, LastOperationState, LastOperationType};
use api::extensions::DefaultStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Map, Value};

/// Longest `lastError.description` / `lastOperation.description` kept in the status.
pub const MAX_DESCRIPTION_BYTES: usize = 4096;

fn verb(op: LastOperationType) -> &'static str {
    match op {
        LastOperationType::Create => "Creating",
        LastOperationType::Reconcile => "Reconciling",
        LastOperationType::Delete => "Deleting",
        LastOperationType::Migrate => "Migrating",
        LastOperationType::Restore => "Restoring",
    }
}

fn past(op: LastOperationType) -> &'static str {
    match op {
        LastOperationType::Create => "created",
        LastOperationType::Reconcile => "reconciled",
        LastOperationType::Delete => "deleted",
        LastOperationType::Migrate => "migrated",
        LastOperationType::Restore => "restored",
    }
}

/// The operation has started.
pub fn processing(status: &mut DefaultStatus, op: LastOperationType, kind: &str, now: &Time) {
    set_last_operation(status, op, LastOperationState::Processing, 1, format!("{} the {kind}", verb(op)), now);
}

/// The actuator asked to be called again: still Processing, with a note. The generation is
/// recorded as observed (as a failure does), so that this controller's own status write is
/// not taken for a new request: the next attempt waits for the requested time instead of
/// following at once (docs/extensions.md).
pub fn requeued(status: &mut DefaultStatus, op: LastOperationType, kind: &str, generation: Option<i64>, now: &Time) {
    let description = format!("{} the {kind}: waiting to be called again", verb(op));
    set_last_operation(status, op, LastOperationState::Processing, 1, description, now);
    status.observed_generation = generation;
}

/// The operation succeeded; `description` replaces the generic text when the actuator gave one.
pub fn succeeded(
    status: &mut DefaultStatus,
    op: LastOperationType,
    kind: &str,
    generation: Option<i64>,
    description: Option<&str>,
    now: &Time,
) {
    let text = match description {
        Some(d) if !d.is_empty() => runtime::events::truncate(d, MAX_DESCRIPTION_BYTES),
        _ => format!("Successfully {} the {kind}", past(op)),
    };
    set_last_operation(status, op, LastOperationState::Succeeded, 100, text, now);
    status.last_error = None;
    status.observed_generation = generation;
}

/// The operation failed with `message` and `codes`.
pub fn failed(
    status: &mut DefaultStatus,
    op: LastOperationType,
    kind: &str,
    generation: Option<i64>,
    message: &str,
    codes: &[ErrorCode],
    now: &Time,
) {
    // Empty strings do not survive every API server version's status handling; never write one.
    let message = if message.trim().is_empty() { "unknown error" } else { message };
    let message = runtime::events::truncate(&runtime::events::redact(message), MAX_DESCRIPTION_BYTES);
    let description = runtime::events::truncate(
        &format!("Error {} the {kind}: {message}", verb(op).to_lowercase()),
        MAX_DESCRIPTION_BYTES,
    );
    set_last_operation(status, op, LastOperationState::Error, 50, description, now);
    status.last_error = Some(LastError {
        description: message,
        task_id: None,
        codes: codes.to_vec(),
        last_update_time: Some(now.clone()),
    });
    status.observed_generation = generation;
}

fn set_last_operation(
    status: &mut DefaultStatus,
    type_: LastOperationType,
    state: LastOperationState,
    progress: i32,
    description: String,
    now: &Time,
) {
    status.last_operation = Some(LastOperation { description, last_update_time: now.clone(), progress, state, type_ });
}

/// The JSON merge patch (RFC 7386) that turns `current` into `desired`, or `None` when they are
/// equal. Keys missing from `desired` become `null`; arrays are replaced whole.
pub fn merge_patch(current: &Value, desired: &Value) -> Option<Value> {
    if current == desired {
        return None;
    }
    match (current, desired) {
        (Value::Object(c), Value::Object(d)) => {
            let mut patch = Map::new();
            for (k, dv) in d {
                match c.get(k) {
                    Some(cv) => {
                        if let Some(p) = merge_patch(cv, dv) {
                            patch.insert(k.clone(), p);
                        }
                    }
                    None => {
                        patch.insert(k.clone(), dv.clone());
                    }
                }
            }
            for k in c.keys() {
                if !d.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        (_, d) => Some(d.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    fn at(s: i64) -> Time {
        Time(Timestamp::from_second(s).unwrap())
    }

    #[test]
    fn processing_then_success() {
        let mut s = DefaultStatus::default();
        processing(&mut s, LastOperationType::Create, "Infrastructure", &at(1));
        let lo = s.last_operation.clone().unwrap();
        assert_eq!((lo.state, lo.progress, lo.type_), (LastOperationState::Processing, 1, LastOperationType::Create));
        assert_eq!(s.observed_generation, None);
        s.last_error =
            Some(LastError { description: "old".into(), task_id: None, codes: vec![], last_update_time: None });
        succeeded(&mut s, LastOperationType::Create, "Infrastructure", Some(3), None, &at(2));
        let lo = s.last_operation.clone().unwrap();
        assert_eq!((lo.state, lo.progress), (LastOperationState::Succeeded, 100));
        assert_eq!(lo.last_update_time, at(2));
        assert_eq!(s.observed_generation, Some(3));
        assert!(s.last_error.is_none());
    }

    #[test]
    fn a_requeue_records_the_generation_so_the_next_attempt_is_no_new_request() {
        use crate::controller::decide::{Action, ClusterView, Filter, Mode, decide};
        let mut s = DefaultStatus::default();
        processing(&mut s, LastOperationType::Create, "Bastion", &at(1));
        requeued(&mut s, LastOperationType::Create, "Bastion", Some(1), &at(2));
        assert_eq!(s.last_operation.as_ref().map(|l| l.state), Some(LastOperationState::Processing));
        assert_eq!(s.observed_generation, Some(1));
        let meta = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            generation: Some(1),
            finalizers: Some(vec!["f".into()]),
            ..Default::default()
        };
        let spec = api::extensions::DefaultSpec { type_: "local".into(), ..Default::default() };
        let types = vec!["local".to_string()];
        let filter = Filter {
            types: &types,
            class: Default::default(),
            mode: Mode::Annotation,
            migratable: true,
            finalizer: "f",
        };
        match decide(&meta, &spec, Some(&s), ClusterView::Absent, &filter) {
            Action::Act(plan) => assert!(!plan.fresh, "the same request goes on at the requested time"),
            other => panic!("{other:?}"),
        }
        let newer = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta { generation: Some(2), ..meta };
        match decide(&newer, &spec, Some(&s), ClusterView::Absent, &filter) {
            Action::Act(plan) => assert!(plan.fresh, "a new spec is a new request"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn error_records_codes_and_generation() {
        let mut s = DefaultStatus::default();
        failed(
            &mut s,
            LastOperationType::Reconcile,
            "Worker",
            Some(2),
            "quota exceeded",
            &[ErrorCode::InfraQuotaExceeded],
            &at(5),
        );
        let lo = s.last_operation.clone().unwrap();
        assert_eq!((lo.state, lo.progress), (LastOperationState::Error, 50));
        let le = s.last_error.clone().unwrap();
        assert_eq!(le.codes, vec![ErrorCode::InfraQuotaExceeded]);
        assert_eq!(le.description, "quota exceeded");
        assert_eq!(le.last_update_time, Some(at(5)));
        assert_eq!(s.observed_generation, Some(2));
        assert!(lo.description.contains("quota exceeded"));
        failed(&mut s, LastOperationType::Reconcile, "Worker", Some(2), " ", &[], &at(6));
        assert_eq!(s.last_error.unwrap().description, "unknown error");
    }

    #[test]
    fn merge_patch_nulls_removed_keys_and_skips_equal_values() {
        let cur = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "gone": true});
        let des = json!({"a": 1, "b": {"c": 2, "d": 4}, "e": [1], "new": "x"});
        assert_eq!(merge_patch(&cur, &des), Some(json!({"b": {"d": 4}, "e": [1], "gone": null, "new": "x"})));
        assert_eq!(merge_patch(&cur, &cur), None);
        assert_eq!(merge_patch(&Value::Null, &json!({"a": 1})), Some(json!({"a": 1})));
    }

    #[test]
    fn an_actuator_description_replaces_the_generic_one() {
        let mut s = DefaultStatus::default();
        succeeded(
            &mut s,
            LastOperationType::Reconcile,
            "Network",
            Some(1),
            Some("No CNI installed: local mode"),
            &at(2),
        );
        assert_eq!(s.last_operation.as_ref().unwrap().description, "No CNI installed: local mode");
        succeeded(&mut s, LastOperationType::Reconcile, "Network", Some(1), Some(""), &at(3));
        assert_eq!(s.last_operation.unwrap().description, "Successfully reconciled the Network");
    }
}
