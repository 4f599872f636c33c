//! The extension contract's two decisions that both sides share: which operation an object
//! asks for, and whether gardenlet may consider it ready.

use crate::common::{LastError, LastOperation, LastOperationState, LastOperationType};
use crate::extensions::DefaultStatus;
use crate::helpers::constants::{ANNOTATION_OPERATION, ANNOTATION_TIMESTAMP, operation};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;

/// The operation an extension object asks for, by precedence: a `migrate` annotation, then
/// deletion, then a `restore` annotation, then Create when there is no last operation, then an
/// unfinished Create/Migrate/Restore (sticky until it succeeds), otherwise Reconcile.
pub fn operation_type(
    operation_annotation: Option<&str>,
    deleting: bool,
    last: Option<&LastOperation>,
) -> LastOperationType {
    if operation_annotation == Some(operation::MIGRATE) {
        return LastOperationType::Migrate;
    }
    if deleting {
        return LastOperationType::Delete;
    }
    if operation_annotation == Some(operation::RESTORE) {
        return LastOperationType::Restore;
    }
    let Some(last) = last else {
        return LastOperationType::Create;
    };
    let sticky =
        matches!(last.type_, LastOperationType::Create | LastOperationType::Migrate | LastOperationType::Restore);
    if sticky && last.state != LastOperationState::Succeeded {
        return last.type_;
    }
    LastOperationType::Reconcile
}

/// True when the object's last operation is a succeeded Migrate: it now belongs to another seed
/// and is left alone unless asked to migrate or restore again.
pub fn is_migrated(last: Option<&LastOperation>) -> bool {
    last.is_some_and(|l| l.type_ == LastOperationType::Migrate && l.state == LastOperationState::Succeeded)
}

/// Why gardenlet does not (yet) consider an extension object ready.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotReady {
    #[error("has no status yet")]
    NoStatus,
    #[error("reported an error: {}", .0.description)]
    LastError(LastError),
    #[error("observed generation {observed:?} is behind generation {generation:?}")]
    GenerationOutdated { observed: Option<i64>, generation: Option<i64> },
    #[error("the operation annotation {0:?} has not been processed yet")]
    OperationPending(String),
    #[error("last operation is {type_:?} {state:?}")]
    NotSucceeded { type_: LastOperationType, state: LastOperationState },
    #[error("last operation has not been recorded yet")]
    NoLastOperation,
    #[error("last operation ({last_update}) is older than the request ({requested})")]
    StaleOperation { requested: String, last_update: String },
    #[error("timestamp annotation {0:?} is not RFC 3339")]
    BadTimestamp(String),
}

impl NotReady {
    /// Errors that should be surfaced immediately rather than waited out.
    pub fn is_error(&self) -> bool {
        matches!(self, Self::LastError(_) | Self::BadTimestamp(_))
    }
}

/// The five readiness rules of the contract: no `lastError`, `observedGeneration ==
/// generation`, no operation annotation left, last operation Succeeded, and the timestamp
/// annotation (to the second) not later than `lastOperation.lastUpdateTime`.
pub fn check_ready(meta: &ObjectMeta, status: Option<&DefaultStatus>) -> Result<(), NotReady> {
    let status = status.ok_or(NotReady::NoStatus)?;
    if let Some(err) = &status.last_error {
        return Err(NotReady::LastError(err.clone()));
    }
    if status.observed_generation != meta.generation {
        return Err(NotReady::GenerationOutdated { observed: status.observed_generation, generation: meta.generation });
    }
    let annotations = meta.annotations.as_ref();
    if let Some(op) = annotations.and_then(|a| a.get(ANNOTATION_OPERATION)) {
        return Err(NotReady::OperationPending(op.clone()));
    }
    let last = status.last_operation.as_ref().ok_or(NotReady::NoLastOperation)?;
    if last.state != LastOperationState::Succeeded {
        return Err(NotReady::NotSucceeded { type_: last.type_, state: last.state });
    }
    if let Some(ts) = annotations.and_then(|a| a.get(ANNOTATION_TIMESTAMP)) {
        let requested: Timestamp = ts.parse().map_err(|_| NotReady::BadTimestamp(ts.clone()))?;
        if requested.as_second() > last.last_update_time.0.as_second() {
            return Err(NotReady::StaleOperation {
                requested: ts.clone(),
                last_update: last.last_update_time.0.to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::ErrorCode;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use std::collections::BTreeMap;

    fn op(type_: LastOperationType, state: LastOperationState, secs: i64) -> LastOperation {
        LastOperation {
            description: String::new(),
            last_update_time: Time(Timestamp::from_second(secs).unwrap()),
            progress: 100,
            state,
            type_,
        }
    }

    #[test]
    fn operation_precedence() {
        use LastOperationState as S;
        use LastOperationType as T;
        let ok = op(T::Reconcile, S::Succeeded, 0);
        let cases: Vec<(Option<&str>, bool, Option<LastOperation>, T)> = vec![
            (Some("migrate"), true, Some(ok.clone()), T::Migrate),
            (Some("restore"), true, Some(ok.clone()), T::Delete),
            (None, true, None, T::Delete),
            (Some("restore"), false, None, T::Restore),
            (None, false, None, T::Create),
            (Some("reconcile"), false, None, T::Create),
            (None, false, Some(op(T::Create, S::Error, 0)), T::Create),
            (None, false, Some(op(T::Create, S::Succeeded, 0)), T::Reconcile),
            (None, false, Some(op(T::Restore, S::Processing, 0)), T::Restore),
            (None, false, Some(op(T::Migrate, S::Error, 0)), T::Migrate),
            (None, false, Some(op(T::Reconcile, S::Error, 0)), T::Reconcile),
            (Some("reconcile"), false, Some(ok), T::Reconcile),
        ];
        for (annotation, deleting, last, want) in cases {
            assert_eq!(operation_type(annotation, deleting, last.as_ref()), want, "{annotation:?} {deleting} {last:?}");
        }
    }

    #[test]
    fn migrated_objects_are_recognised() {
        assert!(is_migrated(Some(&op(LastOperationType::Migrate, LastOperationState::Succeeded, 0))));
        assert!(!is_migrated(Some(&op(LastOperationType::Migrate, LastOperationState::Error, 0))));
        assert!(!is_migrated(None));
    }

    fn meta(generation: i64, annotations: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            generation: Some(generation),
            annotations: Some(
                annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
            ),
            ..Default::default()
        }
    }

    fn ready_status(generation: i64, secs: i64) -> DefaultStatus {
        DefaultStatus {
            observed_generation: Some(generation),
            last_operation: Some(op(LastOperationType::Reconcile, LastOperationState::Succeeded, secs)),
            ..Default::default()
        }
    }

    #[test]
    fn ready_when_all_five_rules_hold() {
        let ts = "1970-01-01T00:01:40Z"; // second 100
        assert_eq!(check_ready(&meta(2, &[(ANNOTATION_TIMESTAMP, ts)]), Some(&ready_status(2, 100))), Ok(()));
    }

    #[test]
    fn each_rule_rejects() {
        let ts = "1970-01-01T00:01:40Z";
        assert_eq!(check_ready(&meta(1, &[]), None), Err(NotReady::NoStatus));
        let mut with_error = ready_status(1, 100);
        with_error.last_error = Some(LastError {
            description: "quota".into(),
            task_id: None,
            codes: vec![ErrorCode::InfraQuotaExceeded],
            last_update_time: None,
        });
        let err = check_ready(&meta(1, &[]), Some(&with_error)).unwrap_err();
        assert!(err.is_error());
        assert!(matches!(
            check_ready(&meta(2, &[]), Some(&ready_status(1, 100))),
            Err(NotReady::GenerationOutdated { .. })
        ));
        assert!(matches!(
            check_ready(&meta(1, &[(ANNOTATION_OPERATION, "reconcile")]), Some(&ready_status(1, 100))),
            Err(NotReady::OperationPending(_))
        ));
        let mut processing = ready_status(1, 100);
        if let Some(l) = processing.last_operation.as_mut() {
            l.state = LastOperationState::Processing;
        }
        assert!(matches!(check_ready(&meta(1, &[]), Some(&processing)), Err(NotReady::NotSucceeded { .. })));
        // The request (second 100) is later than the last update (second 99): stale.
        assert!(matches!(
            check_ready(&meta(1, &[(ANNOTATION_TIMESTAMP, ts)]), Some(&ready_status(1, 99))),
            Err(NotReady::StaleOperation { .. })
        ));
        // Sub-second differences do not count: the comparison is to the second.
        let ts_frac = "1970-01-01T00:01:40.900Z";
        assert_eq!(check_ready(&meta(1, &[(ANNOTATION_TIMESTAMP, ts_frac)]), Some(&ready_status(1, 100))), Ok(()));
        assert!(matches!(
            check_ready(&meta(1, &[(ANNOTATION_TIMESTAMP, "yesterday")]), Some(&ready_status(1, 100))),
            Err(NotReady::BadTimestamp(_))
        ));
    }
}
