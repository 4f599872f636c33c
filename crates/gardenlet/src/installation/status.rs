//! The conditions gardenlet reports on a ControllerInstallation, as pure functions of what it
//! observed: `Valid` (the registration and deployment make sense), `Installed` (every object is
//! applied), `Healthy` and `Progressing` (the controller's workloads are rolled out and
//! available), `Required` (extension objects the controller serves exist in the seed).

use api::common::{Condition, ConditionStatus};
use api::helpers::conditions::{ConditionUpdate, set_condition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

pub use api::core::controller::{
    CONDITION_HEALTHY, CONDITION_INSTALLED, CONDITION_PROGRESSING, CONDITION_REQUIRED, CONDITION_VALID,
};

/// How far a workload (Deployment, StatefulSet, DaemonSet) is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Workload {
    Available,
    /// Still rolling out; the message says how far.
    RollingOut(String),
}

/// The state of a workload object from its spec and status (as the API server returns it).
pub fn workload(kind: &str, object: &Value) -> Workload {
    let int = |pointer: &str| object.pointer(pointer).and_then(Value::as_i64);
    let generation = int("/metadata/generation").unwrap_or(0);
    let observed = int("/status/observedGeneration").unwrap_or(0);
    if observed < generation {
        return Workload::RollingOut("its controller has not observed the latest generation yet".into());
    }
    let (want, updated, available) = match kind {
        "DaemonSet" => (
            int("/status/desiredNumberScheduled").unwrap_or(0),
            int("/status/updatedNumberScheduled").unwrap_or(0),
            int("/status/numberAvailable").unwrap_or(0),
        ),
        "StatefulSet" => (
            int("/spec/replicas").unwrap_or(1),
            int("/status/updatedReplicas").unwrap_or(0),
            int("/status/readyReplicas").unwrap_or(0),
        ),
        _ => (
            int("/spec/replicas").unwrap_or(1),
            int("/status/updatedReplicas").unwrap_or(0),
            int("/status/availableReplicas").unwrap_or(0),
        ),
    };
    if updated < want || available < want {
        Workload::RollingOut(format!("{updated} of {want} updated, {available} available"))
    } else {
        Workload::Available
    }
}

/// What one reconcile observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    /// The registration or deployment is missing or invalid.
    Invalid { reason: &'static str, message: String },
    /// Valid, but applying the objects failed.
    NotInstalled { message: String },
    /// Every object is applied; the workloads as observed (name, state).
    Installed { workloads: Vec<(String, Workload)> },
}

/// Updates `conditions` with what was observed and whether extension objects the controller
/// serves exist (`required`: the objects' names, at most a few). Returns whether anything
/// changed (so an unchanged installation is not written).
pub fn update(conditions: &mut Vec<Condition>, observed: &Observed, required: &[String], now: &Time) -> bool {
    let mut changed = false;
    let mut set = |type_: &str, status: ConditionStatus, reason: &str, message: &str| {
        changed |= set_condition(conditions, ConditionUpdate { type_, status, reason, message, codes: &[] }, now);
    };
    use ConditionStatus::{False, True, Unknown};
    match observed {
        Observed::Invalid { reason, message } => {
            set(CONDITION_VALID, False, reason, message);
            set(CONDITION_INSTALLED, False, "InstallationInvalid", "not installed: the installation is not valid");
            set(CONDITION_HEALTHY, Unknown, "InstallationInvalid", "not installed: the installation is not valid");
            set(CONDITION_PROGRESSING, False, "InstallationInvalid", "not installed: the installation is not valid");
        }
        Observed::NotInstalled { message } => {
            set(CONDITION_VALID, True, "RegistrationValid", "the registration and its deployment are valid");
            set(CONDITION_INSTALLED, False, "InstallationFailed", message);
            set(CONDITION_HEALTHY, Unknown, "InstallationFailed", "not installed yet");
            set(CONDITION_PROGRESSING, True, "InstallationFailed", "retrying the installation");
        }
        Observed::Installed { workloads } => {
            set(CONDITION_VALID, True, "RegistrationValid", "the registration and its deployment are valid");
            set(CONDITION_INSTALLED, True, "InstallationSuccessful", "every object of the deployment is applied");
            let rolling: Vec<String> = workloads
                .iter()
                .filter_map(|(name, w)| match w {
                    Workload::RollingOut(why) => Some(format!("{name}: {why}")),
                    Workload::Available => None,
                })
                .collect();
            if rolling.is_empty() {
                let message = format!("{} workload(s) rolled out and available", workloads.len());
                set(CONDITION_HEALTHY, True, "ControllerHealthy", &message);
                set(CONDITION_PROGRESSING, False, "ControllerRolledOut", &message);
            } else {
                let message = rolling.join("; ");
                set(CONDITION_HEALTHY, False, "ControllerNotHealthy", &message);
                set(CONDITION_PROGRESSING, True, "ControllerRollingOut", &message);
            }
        }
    }
    if required.is_empty() {
        set(
            CONDITION_REQUIRED,
            False,
            "NoExtensionObjects",
            "no extension objects of this controller exist in the seed",
        );
    } else {
        let message = format!("extension objects of this controller exist in the seed: {}", required.join(", "));
        set(CONDITION_REQUIRED, True, "ExtensionObjectsExist", &message);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::helpers::conditions::get_condition;
    use serde_json::json;

    fn now() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap())
    }

    #[test]
    fn deployment_states() {
        let d = |generation: i64, observed: i64, updated: i64, available: i64| {
            json!({"metadata": {"generation": generation}, "spec": {"replicas": 2},
                   "status": {"observedGeneration": observed, "updatedReplicas": updated, "availableReplicas": available}})
        };
        assert_eq!(workload("Deployment", &d(3, 3, 2, 2)), Workload::Available);
        assert!(matches!(workload("Deployment", &d(3, 2, 2, 2)), Workload::RollingOut(m) if m.contains("generation")));
        assert_eq!(workload("Deployment", &d(3, 3, 1, 2)), Workload::RollingOut("1 of 2 updated, 2 available".into()));
        assert_eq!(workload("Deployment", &d(1, 1, 2, 1)), Workload::RollingOut("2 of 2 updated, 1 available".into()));
        // A fresh object without status is rolling out, not available.
        assert!(matches!(workload("Deployment", &json!({"metadata": {"generation": 1}})), Workload::RollingOut(_)));
        let ds = json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1, "desiredNumberScheduled": 1, "updatedNumberScheduled": 1, "numberAvailable": 1}});
        assert_eq!(workload("DaemonSet", &ds), Workload::Available);
        let sts = json!({"metadata": {"generation": 1}, "spec": {"replicas": 1}, "status": {"observedGeneration": 1, "updatedReplicas": 1, "readyReplicas": 0}});
        assert!(matches!(workload("StatefulSet", &sts), Workload::RollingOut(_)));
    }

    #[test]
    fn conditions_follow_what_was_observed_and_write_only_on_change() {
        let mut c = vec![];
        let rolling =
            Observed::Installed { workloads: vec![("Deployment x/a".into(), Workload::RollingOut("0 of 1".into()))] };
        assert!(update(&mut c, &rolling, &[], &now()));
        assert_eq!(get_condition(&c, CONDITION_INSTALLED).unwrap().status, ConditionStatus::True);
        assert_eq!(get_condition(&c, CONDITION_HEALTHY).unwrap().status, ConditionStatus::False);
        assert_eq!(get_condition(&c, CONDITION_PROGRESSING).unwrap().status, ConditionStatus::True);
        assert_eq!(get_condition(&c, CONDITION_REQUIRED).unwrap().status, ConditionStatus::False);
        assert!(!update(&mut c, &rolling, &[], &now()), "the same observation changes nothing");
        let ready = Observed::Installed { workloads: vec![("Deployment x/a".into(), Workload::Available)] };
        assert!(update(&mut c, &ready, &["Infrastructure shoot--a--b/b".into()], &now()));
        assert_eq!(get_condition(&c, CONDITION_HEALTHY).unwrap().status, ConditionStatus::True);
        assert_eq!(get_condition(&c, CONDITION_PROGRESSING).unwrap().status, ConditionStatus::False);
        let required = get_condition(&c, CONDITION_REQUIRED).unwrap();
        assert_eq!(required.status, ConditionStatus::True);
        assert!(required.message.contains("Infrastructure shoot--a--b/b"));
        let invalid =
            Observed::Invalid { reason: "DeploymentNotFound", message: "ControllerDeployment x not found".into() };
        assert!(update(&mut c, &invalid, &[], &now()));
        assert_eq!(get_condition(&c, CONDITION_VALID).unwrap().reason, "DeploymentNotFound");
        assert_eq!(get_condition(&c, CONDITION_INSTALLED).unwrap().status, ConditionStatus::False);
        assert_eq!(get_condition(&c, CONDITION_HEALTHY).unwrap().status, ConditionStatus::Unknown);
    }
}
