//! `Worker`: the machines of a shoot's worker pools. The provider extension turns the pools into
//! machine classes and machine deployments and reports them back.

use super::common::{DefaultSpec, DefaultStatus};
use crate::common::SecretReference;
use crate::opaque::Opaque;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The machine volumes and the machine-controller-manager settings are the Shoot's own types.
pub use crate::core::shoot::provider::{DataVolume, MachineControllerManagerSettings, Volume};

/// Desired state of a shoot's worker machines.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "Worker",
    plural = "workers",
    namespaced,
    status = "WorkerStatus",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The worker type"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct WorkerSpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
    /// The `providerStatus` of the shoot's Infrastructure object.
    pub infrastructure_provider_status: Option<Opaque>,
    pub region: String,
    /// Credentials for the provider.
    pub secret_ref: SecretReference,
    /// Public SSH key for the machines (base64-encoded).
    pub ssh_public_key: Option<String>,
    /// The worker pools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<WorkerPool>,
}

/// One pool of identical machines.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerPool {
    pub name: String,
    pub machine_type: String,
    pub machine_image: MachineImage,
    pub minimum: i32,
    pub maximum: i32,
    /// How many machines may be created above the desired number during a rolling update.
    pub max_surge: Option<IntOrString>,
    /// How many machines may be unavailable during a rolling update.
    pub max_unavailable: Option<IntOrString>,
    /// Annotations for the pool's nodes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Labels for the pool's nodes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Taints for the pool's nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    pub provider_config: Option<Opaque>,
    /// The machines' user data (base64-encoded), the operating system config's bootstrap script.
    pub user_data: String,
    /// Names the parts of the pool's operating system config whose change must replace the
    /// machines (Gardener's field): gardenlet derives it from the config without the bootstrap
    /// token, so a new token (issued daily) reaches new machines through `userData` without
    /// replacing the running ones. A provider that has it rolls the pool on it instead of on
    /// `userData`.
    pub node_agent_secret_name: Option<String>,
    /// The root volume.
    pub volume: Option<Volume>,
    /// Additional volumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_volumes: Vec<DataVolume>,
    /// The name of the data volume the kubelet's directory is put on.
    pub kubelet_data_volume_name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// Settings for the machine-controller-manager of this pool.
    pub machine_controller_manager: Option<MachineControllerManagerSettings>,
    /// The pool's Kubernetes version, when it differs from the control plane's.
    pub kubernetes_version: Option<String>,
    /// The resources of one machine, for the cluster autoscaler when scaling up from zero.
    pub node_template: Option<NodeTemplate>,
    /// CPU architecture (for example `amd64`, `arm64`).
    pub architecture: Option<String>,
}

/// The machine image of a pool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineImage {
    pub name: String,
    pub version: String,
    pub provider_config: Option<Opaque>,
}

/// The resources of one machine of a pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeTemplate {
    pub capacity: BTreeMap<String, Quantity>,
}

/// Observed state of a Worker.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
    /// The machine deployments the extension created, one or more per pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_deployments: Vec<MachineDeployment>,
    /// When `machineDeployments` last changed.
    pub machine_deployments_last_update_time: Option<Time>,
}

/// A machine deployment and its scaling bounds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeployment {
    pub name: String,
    pub minimum: i32,
    pub maximum: i32,
}

crate::impl_extension_kind!(Worker, WorkerStatus, NamespaceResourceScope);
