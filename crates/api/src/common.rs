//! Types shared by many kinds: last operation and last error, conditions, error codes, and
//! small reference types. Their JSON spelling follows the reference API exactly.

use k8s_openapi::api::networking::v1::IPBlock;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The kind of operation a controller last performed on an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum LastOperationType {
    Create,
    Reconcile,
    Delete,
    Migrate,
    Restore,
}

/// How far the last operation got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum LastOperationState {
    Processing,
    Succeeded,
    Error,
    Failed,
    Pending,
    Aborted,
}

impl fmt::Display for LastOperationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl fmt::Display for LastOperationState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// `status.lastOperation`: what a controller is doing or last did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastOperation {
    pub description: String,
    pub last_update_time: Time,
    /// Percentage 0..=100.
    #[schemars(range(min = 0, max = 100))]
    pub progress: i32,
    pub state: LastOperationState,
    #[serde(rename = "type")]
    pub type_: LastOperationType,
}

/// Error codes a controller attaches to an error so that gardenlet can tell final errors
/// from transient ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum ErrorCode {
    #[serde(rename = "ERR_INFRA_UNAUTHENTICATED")]
    InfraUnauthenticated,
    #[serde(rename = "ERR_INFRA_UNAUTHORIZED")]
    InfraUnauthorized,
    #[serde(rename = "ERR_INFRA_QUOTA_EXCEEDED")]
    InfraQuotaExceeded,
    #[serde(rename = "ERR_INFRA_RATE_LIMITS_EXCEEDED")]
    InfraRateLimitsExceeded,
    #[serde(rename = "ERR_INFRA_DEPENDENCIES")]
    InfraDependencies,
    #[serde(rename = "ERR_RETRYABLE_INFRA_DEPENDENCIES")]
    RetryableInfraDependencies,
    #[serde(rename = "ERR_INFRA_RESOURCES_DEPLETED")]
    InfraResourcesDepleted,
    #[serde(rename = "ERR_CLEANUP_CLUSTER_RESOURCES")]
    CleanupClusterResources,
    #[serde(rename = "ERR_CONFIGURATION_PROBLEM")]
    ConfigurationProblem,
    #[serde(rename = "ERR_RETRYABLE_CONFIGURATION_PROBLEM")]
    RetryableConfigurationProblem,
    #[serde(rename = "ERR_PROBLEMATIC_WEBHOOK")]
    ProblematicWebhook,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 11] = [
        Self::InfraUnauthenticated,
        Self::InfraUnauthorized,
        Self::InfraQuotaExceeded,
        Self::InfraRateLimitsExceeded,
        Self::InfraDependencies,
        Self::RetryableInfraDependencies,
        Self::InfraResourcesDepleted,
        Self::CleanupClusterResources,
        Self::ConfigurationProblem,
        Self::RetryableConfigurationProblem,
        Self::ProblematicWebhook,
    ];

    /// The wire spelling, e.g. `ERR_INFRA_UNAUTHORIZED`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InfraUnauthenticated => "ERR_INFRA_UNAUTHENTICATED",
            Self::InfraUnauthorized => "ERR_INFRA_UNAUTHORIZED",
            Self::InfraQuotaExceeded => "ERR_INFRA_QUOTA_EXCEEDED",
            Self::InfraRateLimitsExceeded => "ERR_INFRA_RATE_LIMITS_EXCEEDED",
            Self::InfraDependencies => "ERR_INFRA_DEPENDENCIES",
            Self::RetryableInfraDependencies => "ERR_RETRYABLE_INFRA_DEPENDENCIES",
            Self::InfraResourcesDepleted => "ERR_INFRA_RESOURCES_DEPLETED",
            Self::CleanupClusterResources => "ERR_CLEANUP_CLUSTER_RESOURCES",
            Self::ConfigurationProblem => "ERR_CONFIGURATION_PROBLEM",
            Self::RetryableConfigurationProblem => "ERR_RETRYABLE_CONFIGURATION_PROBLEM",
            Self::ProblematicWebhook => "ERR_PROBLEMATIC_WEBHOOK",
        }
    }

    /// Whether an operation that failed with this code should be retried. Final codes stop a
    /// shoot's retries: the user has to fix something first.
    pub fn is_retryable(self) -> bool {
        match self {
            Self::InfraUnauthenticated
            | Self::InfraUnauthorized
            | Self::InfraQuotaExceeded
            | Self::InfraDependencies
            | Self::ConfigurationProblem
            | Self::ProblematicWebhook => false,
            Self::InfraRateLimitsExceeded
            | Self::RetryableInfraDependencies
            | Self::InfraResourcesDepleted
            | Self::CleanupClusterResources
            | Self::RetryableConfigurationProblem => true,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// True when any code in the list is final (not retryable).
pub fn has_non_retryable_code(codes: &[ErrorCode]) -> bool {
    codes.iter().any(|c| !c.is_retryable())
}

/// `status.lastError` of an extension object, and one entry of a Shoot's `status.lastErrors`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    pub description: String,
    /// The flow task that failed, when known.
    #[serde(rename = "taskID")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codes: Vec<ErrorCode>,
    pub last_update_time: Option<Time>,
}

/// The status of a condition. `Progressing` is the reference system's extra state for a
/// condition that is changing and has not failed yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
    Progressing,
}

/// A Gardener condition (`status.conditions[]` of Shoot, Seed, extension kinds, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: ConditionStatus,
    pub last_transition_time: Time,
    pub last_update_time: Time,
    // Empty strings are left out rather than sent: kube-apiserver 1.20 decodes an empty
    // required string inside a list item as null and refuses the write.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codes: Vec<ErrorCode>,
}

/// Identifies the component instance that last wrote an object's status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Gardener {
    // Empty values are left out (see `Condition`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

/// A reference to a Secret by name and namespace.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretReference {
    pub name: String,
    pub namespace: Option<String>,
}

/// A reference to an object in the same namespace by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalObjectReference {
    /// The object's name.
    pub name: String,
}

/// A source range allowed to connect to the bastion.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BastionIngressPolicy {
    pub ip_block: IPBlock,
}

/// A reference to an object of any kind (the `ObjectReference` of the reference API, reduced
/// to what is used).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
}

/// A cross-version object reference (`apiVersion`, `kind`, `name`), as used by
/// `resources[].resourceRef`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossVersionObjectReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
}

/// A named reference to a resource, which `state` may point at (for example a Secret that an
/// extension needs to restore itself).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamedResourceReference {
    pub name: String,
    pub resource_ref: CrossVersionObjectReference,
}

/// An RBAC subject (`apiGroup`, `kind`, `name`, `namespace`).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    pub api_group: Option<String>,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_use_wire_spelling() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, code.as_str());
            let back: ErrorCode = serde_json::from_value(json).unwrap();
            assert_eq!(back, code);
        }
    }

    #[test]
    fn retryability_matches_the_contract() {
        let final_codes: Vec<_> = ErrorCode::ALL.into_iter().filter(|c| !c.is_retryable()).collect();
        assert_eq!(
            final_codes,
            vec![
                ErrorCode::InfraUnauthenticated,
                ErrorCode::InfraUnauthorized,
                ErrorCode::InfraQuotaExceeded,
                ErrorCode::InfraDependencies,
                ErrorCode::ConfigurationProblem,
                ErrorCode::ProblematicWebhook,
            ]
        );
        assert!(!has_non_retryable_code(&[ErrorCode::InfraRateLimitsExceeded]));
        assert!(has_non_retryable_code(&[ErrorCode::InfraRateLimitsExceeded, ErrorCode::InfraUnauthorized]));
        assert!(!has_non_retryable_code(&[]));
    }

    #[test]
    fn last_error_spells_task_id_like_the_reference() {
        let e = LastError {
            description: "boom".into(),
            task_id: Some("Deploy Infrastructure".into()),
            codes: vec![ErrorCode::ConfigurationProblem],
            last_update_time: None,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["taskID"], "Deploy Infrastructure");
        assert_eq!(v["codes"][0], "ERR_CONFIGURATION_PROBLEM");
    }
}
