//! Whether an installed controller serves an extension object (pure): a wait for an object that
//! nothing on this seed will ever pick up ends with an error that says so, instead of running
//! into the wait's timeout with "has no status yet".
//!
//! An object counts as picked up once it has a status and its operation annotation is gone (the
//! extension controller removes it when it takes the request). One that is not picked up after
//! [`UNSERVED_AFTER`] is judged by [`serving`]: served when a ControllerInstallation on this seed,
//! of a registration that is primary for the object's kind and type, is `Installed`.

use api::common::{ConditionStatus, ErrorCode};
use api::core::controller::CONDITION_INSTALLED;
use api::core::{ControllerInstallation, ControllerRegistration};
use api::extensions::DefaultStatus;
use api::helpers::conditions::get_condition;
use api::helpers::constants::ANNOTATION_OPERATION;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::time::Duration;

/// How long an extension object may go without being picked up before gardenlet checks whether
/// any controller is installed for it on this seed (and, if none is, ends the wait).
pub const UNSERVED_AFTER: Duration = Duration::from_secs(30);

/// Whether an extension controller has taken the object's current request.
pub fn picked_up(meta: &ObjectMeta, status: Option<&DefaultStatus>) -> bool {
    let requested = meta.annotations.as_ref().is_some_and(|a| a.contains_key(ANNOTATION_OPERATION));
    status.is_some_and(|s| s.last_operation.is_some()) && !requested
}

/// Who serves one extension kind and type on one seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Serving {
    /// A ControllerInstallation of a serving registration is installed on the seed.
    Installed,
    /// No ControllerRegistration is primary for the kind and type.
    Unregistered,
    /// These registrations serve it, but none has a ControllerInstallation for the seed.
    NotInstalled { registrations: Vec<String> },
    /// The seed has a ControllerInstallation of a serving registration that is not installed
    /// (yet): its name and what its `Installed` condition says.
    Installing { installation: String, condition: String },
}

impl Serving {
    /// The error that ends the wait for `object` (`<Kind> <namespace>/<name>`), or `None` when an
    /// installed controller serves it. A missing registration is the user's configuration
    /// (`ERR_CONFIGURATION_PROBLEM`, no automatic retry); a missing or unfinished installation
    /// may still come (`ERR_RETRYABLE_CONFIGURATION_PROBLEM`).
    pub fn error(&self, object: &str, kind: &str, type_: &str, seed: &str) -> Option<(String, ErrorCode)> {
        let head = format!(
            "{object} was not picked up within {}s: no controller installed for it on seed {seed}",
            UNSERVED_AFTER.as_secs()
        );
        match self {
            Self::Installed => None,
            Self::Unregistered => Some((
                format!("{head}: no ControllerRegistration serves {kind} type {type_:?}"),
                ErrorCode::ConfigurationProblem,
            )),
            Self::NotInstalled { registrations } => Some((
                format!(
                    "{head}: ControllerRegistration {} serves {kind} type {type_:?}, but has no ControllerInstallation for this seed",
                    registrations.join(", ")
                ),
                ErrorCode::RetryableConfigurationProblem,
            )),
            Self::Installing { installation, condition } => Some((
                format!(
                    "{head}: ControllerInstallation {installation} (for {kind} type {type_:?}) is not installed: {condition}"
                ),
                ErrorCode::RetryableConfigurationProblem,
            )),
        }
    }
}

/// Who serves `kind` objects of type `type_` on seed `seed`, by the garden's registrations and
/// the ControllerInstallations.
pub fn serving(
    kind: &str,
    type_: &str,
    seed: &str,
    registrations: &[ControllerRegistration],
    installations: &[ControllerInstallation],
) -> Serving {
    let serving: Vec<String> = registrations
        .iter()
        .filter(|r| {
            r.spec.resources.iter().any(|res| res.kind == kind && res.type_ == type_ && res.primary != Some(false))
        })
        .filter_map(|r| r.metadata.name.clone())
        .collect();
    if serving.is_empty() {
        return Serving::Unregistered;
    }
    let on_seed: Vec<&ControllerInstallation> = installations
        .iter()
        .filter(|i| i.spec.seed_ref.as_ref().is_some_and(|s| s.name == seed))
        .filter(|i| serving.contains(&i.spec.registration_ref.name))
        .collect();
    let installed = |i: &ControllerInstallation| {
        let conditions = i.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        get_condition(conditions, CONDITION_INSTALLED).filter(|c| c.status == ConditionStatus::True).is_some()
    };
    if on_seed.iter().any(|i| installed(i)) {
        return Serving::Installed;
    }
    match on_seed.first() {
        None => Serving::NotInstalled { registrations: serving },
        Some(i) => {
            let conditions = i.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
            let condition = match get_condition(conditions, CONDITION_INSTALLED) {
                Some(c) if c.message.is_empty() => format!("Installed is {:?}", c.status),
                Some(c) => format!("Installed is {:?}: {}", c.status, c.message),
                None => "it has no Installed condition yet".into(),
            };
            Serving::Installing { installation: i.metadata.name.clone().unwrap_or_default(), condition }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;
    use serde_json::json;

    fn registration(name: &str, kind: &str, type_: &str, primary: Option<bool>) -> ControllerRegistration {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"resources": [{"kind": kind, "type": type_, "primary": primary}]}
        }))
        .unwrap()
    }

    fn installation(name: &str, registration: &str, seed: &str, installed: Option<&str>) -> ControllerInstallation {
        let conditions: Vec<_> = installed
            .map(|s| {
                json!({"type": "Installed", "status": s, "lastTransitionTime": "2026-01-01T00:00:00Z",
                            "lastUpdateTime": "2026-01-01T00:00:00Z", "message": "chart rendered"})
            })
            .into_iter()
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"registrationRef": {"name": registration}, "seedRef": {"name": seed}},
            "status": {"conditions": conditions}
        }))
        .unwrap()
    }

    #[test]
    fn served_only_by_an_installed_primary_registration_on_this_seed() {
        let regs = [
            registration("provider-local", "Network", "local", None),
            registration("calico-secondary", "Network", "calico", Some(false)),
        ];
        let installed = [installation("provider-local-local", "provider-local", "local", Some("True"))];
        assert_eq!(serving("Network", "local", "local", &regs, &installed), Serving::Installed);
        assert_eq!(serving("Network", "calico", "local", &regs, &installed), Serving::Unregistered);
        assert_eq!(serving("Worker", "local", "local", &regs, &installed), Serving::Unregistered, "other kind");
        assert_eq!(
            serving("Network", "local", "other", &regs, &installed),
            Serving::NotInstalled { registrations: vec!["provider-local".into()] }
        );
        let pending = [installation("provider-local-local", "provider-local", "local", Some("False"))];
        assert_eq!(
            serving("Network", "local", "local", &regs, &pending),
            Serving::Installing {
                installation: "provider-local-local".into(),
                condition: "Installed is False: chart rendered".into()
            }
        );
        let fresh = [installation("provider-local-local", "provider-local", "local", None)];
        assert!(matches!(serving("Network", "local", "local", &regs, &fresh), Serving::Installing { .. }));
    }

    #[test]
    fn the_error_names_kind_type_and_seed_and_is_final_only_without_a_registration() {
        let (message, code) =
            Serving::Unregistered.error("Network shoot--dev--demo/demo", "Network", "calico", "local").unwrap();
        assert_eq!(
            message,
            "Network shoot--dev--demo/demo was not picked up within 30s: no controller installed for it on seed local: \
             no ControllerRegistration serves Network type \"calico\""
        );
        assert_eq!(code, ErrorCode::ConfigurationProblem);
        let (message, code) = Serving::NotInstalled { registrations: vec!["calico".into()] }
            .error("Network n/demo", "Network", "calico", "local")
            .unwrap();
        assert!(message.contains("no controller installed for it on seed local"), "{message}");
        assert_eq!(code, ErrorCode::RetryableConfigurationProblem);
        assert_eq!(Serving::Installed.error("Network n/demo", "Network", "calico", "local"), None);
    }

    #[test]
    fn picked_up_means_a_status_and_no_pending_request() {
        let meta = |annotated: bool| ObjectMeta {
            annotations: annotated.then(|| [(ANNOTATION_OPERATION.to_string(), "reconcile".to_string())].into()),
            ..Default::default()
        };
        let status: DefaultStatus = serde_json::from_value(json!({"lastOperation": {
            "type": "Reconcile", "state": "Processing", "progress": 0, "description": "",
            "lastUpdateTime": "2026-01-01T00:00:00Z"}}))
        .unwrap();
        assert!(picked_up(&meta(false), Some(&status)));
        assert!(!picked_up(&meta(true), Some(&status)), "a stale status of an earlier request");
        assert!(!picked_up(&meta(false), None));
        assert!(!picked_up(&meta(false), Some(&DefaultStatus::default())));
    }
}
