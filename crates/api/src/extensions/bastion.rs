//! `Bastion` (seed side): a provider-specific jump host that gives SSH access to a shoot's
//! machines. gardenlet creates it from an `operations.gardener.cloud` Bastion.

use super::common::{DefaultSpec, DefaultStatus};
pub use crate::common::BastionIngressPolicy;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::LoadBalancerIngress;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a bastion host.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "Bastion",
    plural = "bastions",
    namespaced,
    status = "BastionStatus",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The provider type"),
    printcolumn(name = "IP", type_ = "string", json_path = ".status.ingress.ip"),
    printcolumn(name = "Hostname", type_ = "string", json_path = ".status.ingress.hostname"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct BastionSpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
    /// The bastion's user data (base64-encoded); it installs the user's SSH public key.
    pub user_data: String,
    /// Who may connect to the bastion.
    pub ingress: Vec<BastionIngressPolicy>,
}

/// Observed state of a Bastion.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BastionStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
    /// The address under which the bastion is reachable.
    pub ingress: Option<LoadBalancerIngress>,
}

crate::impl_extension_kind!(Bastion, BastionStatus, NamespaceResourceScope);
