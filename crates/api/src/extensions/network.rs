//! `Network`: the pod network (CNI plugin) of a shoot.

use super::common::{DefaultSpec, DefaultStatus};
use k8s_openapi::NamespaceResourceScope;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The IP families of the cluster network are the Shoot's.
pub use crate::core::shared::IpFamily;

/// Desired state of a shoot's pod network.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "Network",
    plural = "networks",
    namespaced,
    status = "NetworkStatus",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The network type"),
    printcolumn(name = "Pod CIDR", type_ = "string", json_path = ".spec.podCIDR"),
    printcolumn(name = "Service CIDR", type_ = "string", json_path = ".spec.serviceCIDR"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
    /// The CIDR of the pod network.
    #[serde(rename = "podCIDR")]
    pub pod_cidr: String,
    /// The CIDR of the service network.
    #[serde(rename = "serviceCIDR")]
    pub service_cidr: String,
    /// The IP families of the cluster network (absent means IPv4 only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_families: Vec<IpFamily>,
}

/// Observed state of a Network.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
}

crate::impl_extension_kind!(Network, NetworkStatus, NamespaceResourceScope);
