//! `status.credentials`: where each credential rotation of a shoot stands, as Gardener reports
//! it (GEP-18). Rotations are requested with operation annotations (`rotate-ca-start`, ...);
//! [`crate::helpers::rotation`] decides what a request means for this status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The shoot's credentials.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShootCredentials {
    /// Where each rotation stands.
    pub rotation: Option<ShootCredentialsRotation>,
    /// What the shoot's etcd data is encrypted with now.
    pub encryption_at_rest: Option<EncryptionAtRest>,
}

/// What a shoot's etcd data is encrypted with, once the running API server writes it so and the
/// stored objects were rewritten.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionAtRest {
    /// The resources besides Secrets that are encrypted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// The encryption provider in use.
    pub provider: Option<EncryptionProviderStatus>,
}

/// The encryption provider in use.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EncryptionProviderStatus {
    #[serde(rename = "type", default)]
    pub type_: String,
}

/// The rotations of a shoot's credentials.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShootCredentialsRotation {
    /// The cluster CA, the client CA, etcd's CAs and the front-proxy CA, rotated together.
    pub certificate_authorities: Option<TwoPhaseRotation>,
    /// The key that signs service account tokens.
    pub service_account_key: Option<TwoPhaseRotation>,
    /// The key that encrypts Secrets in etcd.
    #[serde(rename = "etcdEncryptionKey")]
    pub etcd_encryption_key: Option<TwoPhaseRotation>,
    /// The SSH key pair of the worker nodes (one phase: the previous key stays authorised until
    /// the next rotation).
    #[serde(rename = "sshKeypair")]
    pub ssh_keypair: Option<OnePhaseRotation>,
}

/// The phase of a two-phase rotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RotationPhase {
    /// Phase one is running: new credentials are created and trusted next to the old ones.
    Preparing,
    /// Phase one is done: old and new are both valid; waiting for the completion request.
    Prepared,
    /// Phase two is running: the old credentials are being withdrawn.
    Completing,
    /// Phase two is done: only the new credentials are valid.
    Completed,
}

/// A rotation in two phases (start, then complete), with Gardener's timestamps.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TwoPhaseRotation {
    pub phase: RotationPhase,
    /// When phase one was requested.
    pub last_initiation_time: Option<Time>,
    /// When phase one finished.
    pub last_initiation_finished_time: Option<Time>,
    /// When phase two was requested.
    pub last_completion_triggered_time: Option<Time>,
    /// When phase two finished.
    pub last_completion_time: Option<Time>,
}

/// A rotation done in one step.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OnePhaseRotation {
    /// When the rotation was requested.
    pub last_initiation_time: Option<Time>,
    /// When it finished.
    pub last_completion_time: Option<Time>,
}
