//! `Infrastructure`: the cloud resources a shoot's machines need (networks, security groups,
//! the machines' namespace for provider-local).

use super::common::{DefaultSpec, DefaultStatus};
use crate::common::SecretReference;
use crate::opaque::Opaque;
use k8s_openapi::NamespaceResourceScope;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "Infrastructure",
    plural = "infrastructures",
    namespaced,
    status = "InfrastructureStatus",
    shortname = "infra",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The provider type"),
    printcolumn(name = "Region", type_ = "string", json_path = ".spec.region"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct InfrastructureSpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
    pub region: String,
    /// Credentials for the provider.
    pub secret_ref: SecretReference,
    /// Public SSH key for the machines, when the provider needs it at infrastructure level.
    pub ssh_public_key: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfrastructureStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
    /// The node network the infrastructure provides, when it decides one.
    pub node_network: Option<String>,
    #[serde(rename = "egressCIDRs")]
    pub egress_cidrs: Option<Vec<String>>,
    /// Opaque machine-image information some providers publish.
    pub machine_image: Option<Opaque>,
}

crate::impl_extension_kind!(Infrastructure, InfrastructureStatus, NamespaceResourceScope);
