//! `security.gardener.cloud/v1alpha1`: CredentialsBinding and WorkloadIdentity, as current
//! Gardener serves them.
//!
//! A CredentialsBinding is the successor of the SecretBinding: it lets the shoots of a project
//! use credentials (a Secret, or a WorkloadIdentity instead of static credentials) and ties the
//! quotas that apply. Like the SecretBinding it has no `spec`. A WorkloadIdentity describes an
//! identity that Gardener issues short-lived tokens for, which a cloud trusts instead of
//! long-lived keys.

use crate::common::ObjectReference;
use crate::opaque::Opaque;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of these kinds.
pub const GROUP: &str = "security.gardener.cloud";

#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "security.gardener.cloud",
    version = "v1alpha1",
    kind = "CredentialsBinding",
    plural = "credentialsbindings",
    doc = "Binds credentials (a Secret or a WorkloadIdentity) and the quotas that apply to them for use by the shoots of a project.",
    namespaced,
    no_spec,
    shortname = "cb",
    category = "gardener",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Provider", type_ = "string", json_path = ".provider.type"),
    printcolumn(name = "Credentials", type_ = "string", json_path = ".credentialsRef.kind"),
    printcolumn(name = "Name", type_ = "string", json_path = ".credentialsRef.name"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsBindingFields {
    /// The provider type the credentials are for. Immutable.
    pub provider: CredentialsBindingProvider,
    /// The credentials: a `v1` Secret or a `security.gardener.cloud/v1alpha1` WorkloadIdentity,
    /// possibly in another namespace. Immutable.
    pub credentials_ref: ObjectReference,
    /// The quotas that apply to shoots using this binding. Immutable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<ObjectReference>,
}

/// The provider of a CredentialsBinding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CredentialsBindingProvider {
    #[serde(rename = "type")]
    pub type_: String,
}

/// An identity Gardener issues short-lived tokens for.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "security.gardener.cloud",
    version = "v1alpha1",
    kind = "WorkloadIdentity",
    plural = "workloadidentities",
    doc = "An identity for which Gardener issues short-lived tokens that a target system trusts.",
    namespaced,
    status = "WorkloadIdentityStatus",
    category = "gardener",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Provider", type_ = "string", json_path = ".spec.targetSystem.type"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadIdentitySpec {
    /// The audiences of the issued tokens (what the target system expects in `aud`).
    pub audiences: Vec<String>,
    /// The system that trusts the tokens.
    pub target_system: TargetSystem,
}

/// The system a WorkloadIdentity's tokens are for.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetSystem {
    /// The provider type (for example `local`).
    #[serde(rename = "type")]
    pub type_: String,
    /// Provider-specific settings.
    pub provider_config: Option<Opaque>,
}

/// Observed state of a WorkloadIdentity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadIdentityStatus {
    /// The `sub` claim of the issued tokens.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sub: String,
}

/// The CRDs of this group.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![CredentialsBinding::crd(), WorkloadIdentity::crd()]
}
