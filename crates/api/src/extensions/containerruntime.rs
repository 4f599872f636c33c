//! `ContainerRuntime`: an additional container runtime (for example gVisor or Kata) installed on
//! the nodes of one worker pool.

use super::common::{DefaultSpec, DefaultStatus};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of an additional container runtime.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "ContainerRuntime",
    plural = "containerruntimes",
    namespaced,
    status = "ContainerRuntimeStatus",
    shortname = "cr",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The container runtime type"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRuntimeSpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
    /// Where the runtime's binaries are installed on the nodes.
    pub binary_path: String,
    /// The worker pool whose nodes get the runtime.
    pub worker_pool: ContainerRuntimeWorkerPool,
}

/// The worker pool a container runtime is installed on.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRuntimeWorkerPool {
    pub name: String,
    /// Selects the pool's nodes.
    pub selector: Option<LabelSelector>,
}

/// Observed state of a ContainerRuntime.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRuntimeStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
}

crate::impl_extension_kind!(ContainerRuntime, ContainerRuntimeStatus, NamespaceResourceScope);
