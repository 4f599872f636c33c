//! Force deletion of a Shoot (`confirmation.gardener.cloud/force-deletion: "true"`, Gardener's
//! rules with its `ShootForceDeletion` feature on): the annotation may only be set on a shoot
//! that is being deleted and whose deletion is stuck on an error a user cannot fix by waiting
//! ([`FORCE_DELETION_CODES`] in `status.lastErrors`); once set it cannot be removed. gardenlet
//! then deletes the shoot without the cleanup of its extension objects (docs/operations.md).

use crate::field::{ErrorList, FieldError, Path};
use api::common::ErrorCode;
use api::core::Shoot;
use api::helpers::constants::ANNOTATION_FORCE_DELETION;

/// The error codes that allow a force deletion: the infrastructure cannot be reached or
/// cleaned up, or the configuration is broken, so the normal deletion cannot finish.
pub const FORCE_DELETION_CODES: [ErrorCode; 6] = [
    ErrorCode::CleanupClusterResources,
    ErrorCode::ConfigurationProblem,
    ErrorCode::InfraUnauthenticated,
    ErrorCode::InfraUnauthorized,
    ErrorCode::InfraDependencies,
    ErrorCode::ProblematicWebhook,
];

/// Whether the shoot carries the force-deletion confirmation.
pub fn confirmed(shoot: &Shoot) -> bool {
    shoot.metadata.annotations.as_ref().and_then(|a| a.get(ANNOTATION_FORCE_DELETION)).is_some_and(|v| v == "true")
}

fn codes(shoot: &Shoot) -> impl Iterator<Item = ErrorCode> + '_ {
    shoot.status.iter().flat_map(|s| s.last_errors.iter()).flat_map(|e| e.codes.iter().copied())
}

/// Pure: the errors of setting or removing the confirmation from `old` (`None` on create) to
/// `new`.
pub fn validate(new: &Shoot, old: Option<&Shoot>) -> ErrorList {
    let mut errs = ErrorList::default();
    let path = Path::new("metadata").child("annotations").key(ANNOTATION_FORCE_DELETION);
    let (was, is) = (old.is_some_and(confirmed), confirmed(new));
    if was && !is {
        errs.push(FieldError::forbidden(path, "the force-deletion confirmation cannot be removed once set"));
        return errs;
    }
    if is && !was {
        if new.metadata.deletion_timestamp.is_none() {
            errs.push(FieldError::forbidden(
                path.clone(),
                "can only be set on a shoot that is being deleted (metadata.deletionTimestamp is not set)",
            ));
        }
        if !codes(new).any(|c| FORCE_DELETION_CODES.contains(&c)) {
            let allowed: Vec<String> = FORCE_DELETION_CODES.iter().map(ToString::to_string).collect();
            errs.push(FieldError::forbidden(
                path,
                format!(
                    "can only be set when the shoot's deletion is stuck: status.lastErrors must carry one of the codes {}",
                    allowed.join(", ")
                ),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;

    fn shoot(force: Option<&str>, deleting: bool, code: Option<&str>) -> Shoot {
        let mut s = crate::fixtures::shoot();
        if let Some(v) = force {
            s.metadata.annotations = Some([(ANNOTATION_FORCE_DELETION.to_string(), v.to_string())].into());
        }
        if deleting {
            s.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time("2026-01-01T00:00:00Z".parse().unwrap()));
        }
        if let Some(code) = code {
            s.status = serde_json::from_value(serde_json::json!({
                "lastErrors": [{"description": "stuck", "codes": [code]}]
            }))
            .unwrap();
        }
        s
    }

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_stuck_deletion_may_be_forced() {
        for code in FORCE_DELETION_CODES {
            let new = shoot(Some("true"), true, Some(&code.to_string()));
            assert!(validate(&new, Some(&shoot(None, true, Some(&code.to_string())))).is_empty(), "{code}");
        }
    }

    #[test]
    fn only_a_deleting_shoot_with_a_stuck_error_may_be_forced() {
        let old = shoot(None, false, Some("ERR_CONFIGURATION_PROBLEM"));
        assert_eq!(
            messages(&validate(&shoot(Some("true"), false, Some("ERR_CONFIGURATION_PROBLEM")), Some(&old))),
            [
                "metadata.annotations[confirmation.gardener.cloud/force-deletion]: Forbidden: can only be set on a shoot that is being deleted (metadata.deletionTimestamp is not set)"
            ]
        );
        let old = shoot(None, true, Some("ERR_INFRA_QUOTA_EXCEEDED"));
        let errs = messages(&validate(&shoot(Some("true"), true, Some("ERR_INFRA_QUOTA_EXCEEDED")), Some(&old)));
        assert_eq!(
            errs,
            [
                "metadata.annotations[confirmation.gardener.cloud/force-deletion]: Forbidden: can only be set when the shoot's deletion is stuck: status.lastErrors must carry one of the codes ERR_CLEANUP_CLUSTER_RESOURCES, ERR_CONFIGURATION_PROBLEM, ERR_INFRA_UNAUTHENTICATED, ERR_INFRA_UNAUTHORIZED, ERR_INFRA_DEPENDENCIES, ERR_PROBLEMATIC_WEBHOOK"
            ]
        );
        assert_eq!(validate(&shoot(Some("true"), false, None), None).len(), 2, "not on create either");
        // Any other value is no confirmation, and is not judged.
        assert!(validate(&shoot(Some("false"), false, None), None).is_empty());
    }

    #[test]
    fn once_set_it_stays() {
        let forced = shoot(Some("true"), true, Some("ERR_CONFIGURATION_PROBLEM"));
        assert!(validate(&forced, Some(&forced)).is_empty(), "kept: nothing to judge");
        assert_eq!(
            messages(&validate(&shoot(None, true, Some("ERR_CONFIGURATION_PROBLEM")), Some(&forced))),
            [
                "metadata.annotations[confirmation.gardener.cloud/force-deletion]: Forbidden: the force-deletion confirmation cannot be removed once set"
            ]
        );
        // Kept after the error is gone (a later attempt of the deletion cleared it).
        assert!(validate(&shoot(Some("true"), true, None), Some(&forced)).is_empty());
    }
}
