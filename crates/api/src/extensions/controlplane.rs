//! `ControlPlane`: the provider-specific parts of a shoot's control plane (cloud-controller-manager,
//! CSI controllers, ...), or, with purpose `exposure`, how the API server is exposed.

use super::common::{DefaultSpec, DefaultStatus};
use crate::common::SecretReference;
use crate::opaque::Opaque;
use k8s_openapi::NamespaceResourceScope;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a ControlPlane object is for. Absent means `normal`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    /// The provider-specific control-plane components of the shoot.
    #[default]
    Normal,
    /// How the shoot's API server is exposed.
    Exposure,
}

/// Desired state of a shoot's provider-specific control plane.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "ControlPlane",
    plural = "controlplanes",
    namespaced,
    status = "ControlPlaneStatus",
    shortname = "cp",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The control plane type"),
    printcolumn(name = "Purpose", type_ = "string", json_path = ".spec.purpose"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneSpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
    /// `normal` (absent) or `exposure`.
    pub purpose: Option<Purpose>,
    /// The `providerStatus` of the shoot's Infrastructure object.
    pub infrastructure_provider_status: Option<Opaque>,
    pub region: String,
    /// Credentials for the provider.
    pub secret_ref: SecretReference,
}

/// Observed state of a ControlPlane.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
}

crate::impl_extension_kind!(ControlPlane, ControlPlaneStatus, NamespaceResourceScope);
