//! The operation annotation of a Shoot: a credential rotation is refused when it cannot run now
//! (see [`api::helpers::rotation`]: a start while one is under way, a completion before
//! `Prepared`, any step before the shoot exists or while it sleeps), naming the annotation.

use crate::field::{ErrorList, FieldError, Path};
use api::core::Shoot;
use api::helpers::constants::ANNOTATION_OPERATION;
use api::helpers::rotation::{self, Lifecycle};

fn operation(shoot: &Shoot) -> Option<&str> {
    shoot.metadata.annotations.as_ref()?.get(ANNOTATION_OPERATION).map(String::as_str)
}

/// Pure: the errors of the operation `new` asks for (none when it asks for none, or for the
/// same as `old` did: a request is judged once, when it is made).
pub fn validate(new: &Shoot, old: Option<&Shoot>) -> ErrorList {
    let mut errs = ErrorList::default();
    let Some(op) = operation(new) else { return errs };
    if old.and_then(operation) == Some(op) {
        return errs;
    }
    let Some(request) = rotation::request(op, new.spec.provider.ssh_access()) else { return errs };
    let path = Path::new("metadata").child("annotations").key(ANNOTATION_OPERATION);
    for why in rotation::allowed(&request, rotation::status(new), Lifecycle::of(new)) {
        errs.push(FieldError::forbidden(path.clone(), format!("{op}: {why}")));
    }
    errs
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;

    fn shoot(op: Option<&str>, status: serde_json::Value) -> Shoot {
        let mut s = crate::fixtures::shoot();
        if let Some(op) = op {
            s.metadata.annotations = Some([(ANNOTATION_OPERATION.to_string(), op.to_string())].into());
        }
        s.status = serde_json::from_value(status).unwrap();
        s
    }

    fn created() -> serde_json::Value {
        serde_json::json!({"lastOperation": {"type": "Reconcile", "state": "Succeeded", "progress": 100,
                                             "description": "", "lastUpdateTime": "2026-01-01T00:00:00Z"}})
    }

    #[test]
    fn a_rotation_request_is_judged_once_against_the_rotation_status() {
        let old = shoot(None, created());
        assert!(validate(&shoot(Some("rotate-ca-start"), created()), Some(&old)).is_empty());
        let errs = validate(&shoot(Some("rotate-ca-complete"), created()), Some(&old));
        assert_eq!(
            errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "metadata.annotations[gardener.cloud/operation]: Forbidden: rotate-ca-complete: the rotation of the certificate authorities can only be completed in phase Prepared, not before it started"
            ]
        );
        // The same request, already accepted, is not judged again on later updates.
        let pending = shoot(Some("rotate-ca-complete"), created());
        assert!(validate(&pending, Some(&pending)).is_empty());
        // Other operations are not this module's business.
        assert!(validate(&shoot(Some("reconcile"), serde_json::Value::Null), Some(&old)).is_empty());
    }

    #[test]
    fn no_rotation_before_the_shoot_exists() {
        let errs = validate(&shoot(Some("rotate-credentials-start"), serde_json::Value::Null), None);
        assert!(errs.iter().any(|e| e.to_string().contains("before the shoot was created")), "{errs:?}");
    }
}
