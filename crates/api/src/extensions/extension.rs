//! `Extension`: a generic extension of a shoot (for example a certificate or DNS service) that
//! needs nothing beyond the common spec.

use super::common::{DefaultSpec, DefaultStatus};
use k8s_openapi::NamespaceResourceScope;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a generic extension.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "Extension",
    plural = "extensions",
    namespaced,
    status = "ExtensionStatus",
    shortname = "ext",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The extension type"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionSpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
}

/// Observed state of an Extension.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
}

crate::impl_extension_kind!(Extension, ExtensionStatus, NamespaceResourceScope);
