//! `spec.provider` of a Shoot: the provider type, the provider-specific infrastructure and
//! control plane configs (opaque here; the provider extension decodes them) and the worker pools.

use super::kubelet::KubeletConfig;
use crate::opaque::Opaque;
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Provider type, provider configs and worker pools of a shoot.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Provider {
    /// The provider type (for example `local`). Immutable.
    #[serde(rename = "type")]
    pub type_: String,
    /// Provider-specific control plane configuration.
    pub control_plane_config: Option<Opaque>,
    /// Provider-specific infrastructure configuration.
    pub infrastructure_config: Option<Opaque>,
    /// The worker pools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<Worker>,
    /// Settings for all worker pools.
    pub workers_settings: Option<WorkersSettings>,
}

impl Provider {
    /// Whether the shoot's nodes are reached over SSH: it has workers, and
    /// `workersSettings.sshAccess.enabled` is not false (the default is true).
    pub fn ssh_access(&self) -> bool {
        !self.workers.is_empty() && self.workers_settings.as_ref().and_then(|w| w.ssh_access).is_none_or(|s| s.enabled)
    }
}

/// A worker pool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Worker {
    /// Annotations of the pool's Node objects.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// CA bundle installed onto every machine of the pool.
    pub ca_bundle: Option<String>,
    /// The container runtime interface of the pool's machines (default `containerd`).
    pub cri: Option<Cri>,
    /// Kubernetes settings of the pool (kubelet settings, kubelet version).
    pub kubernetes: Option<WorkerKubernetes>,
    /// Labels of the pool's Node objects.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The pool name.
    pub name: String,
    /// Machine type and image of the pool.
    pub machine: Machine,
    /// Maximum number of machines, divided over the zones.
    pub maximum: i32,
    /// Minimum number of machines, divided over the zones.
    pub minimum: i32,
    /// How many machines may be created above the desired number during an update.
    pub max_surge: Option<IntOrString>,
    /// How many machines may be unavailable during an update.
    pub max_unavailable: Option<IntOrString>,
    /// Provider-specific configuration of the pool.
    pub provider_config: Option<Opaque>,
    /// Taints of the pool's Node objects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// The root volume of the pool's machines.
    pub volume: Option<Volume>,
    /// Additional volumes of the pool's machines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_volumes: Vec<DataVolume>,
    /// The data volume holding the kubelet's state.
    pub kubelet_data_volume_name: Option<String>,
    /// Availability zones the pool is spread over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// Whether the pool may host system components.
    pub system_components: Option<WorkerSystemComponents>,
    /// Machine controller manager settings of the pool.
    #[serde(rename = "machineControllerManager")]
    pub machine_controller_manager_settings: Option<MachineControllerManagerSettings>,
    /// Kernel settings applied on the pool's machines.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, String>,
    /// Cluster autoscaler settings of the pool.
    pub cluster_autoscaler: Option<ClusterAutoscalerOptions>,
    /// Priority of the pool for the cluster autoscaler's priority expander.
    pub priority: Option<i32>,
    /// How the pool's machines are updated.
    pub update_strategy: Option<MachineUpdateStrategy>,
}

/// The container runtime interface of a worker pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cri {
    /// The CRI name.
    pub name: CriName,
    /// Additional container runtimes (for example `gvisor`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_runtimes: Vec<ContainerRuntime>,
}

/// A container runtime interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CriName {
    #[default]
    Containerd,
    /// Legacy (Kubernetes < 1.23).
    Docker,
}

/// An additional container runtime of a worker pool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRuntime {
    /// The runtime type.
    #[serde(rename = "type")]
    pub type_: String,
    /// Configuration of the runtime.
    pub provider_config: Option<Opaque>,
}

/// Kubernetes settings of a worker pool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerKubernetes {
    /// Kubelet settings of the pool; replace (do not merge with) `spec.kubernetes.kubelet`.
    pub kubelet: Option<KubeletConfig>,
    /// Kubelet version of the pool; at most the shoot's version.
    pub version: Option<String>,
}

/// Machine type and image of a worker pool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    /// The machine type (one of the CloudProfile's).
    #[serde(rename = "type")]
    pub type_: String,
    /// The machine image; defaulted from the CloudProfile.
    pub image: Option<ShootMachineImage>,
    /// The CPU architecture (for example `amd64`).
    pub architecture: Option<String>,
}

/// The machine image of a worker pool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShootMachineImage {
    /// The image name.
    pub name: String,
    /// Image-specific configuration (for the operating system extension).
    pub provider_config: Option<Opaque>,
    /// The image version; defaulted to the latest in the CloudProfile.
    pub version: Option<String>,
}

/// The root volume of a worker pool's machines.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    /// A name to refer to the volume.
    pub name: Option<String>,
    /// The volume type (one of the CloudProfile's).
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// The volume size (for example `20Gi`).
    pub size: String,
    /// Whether the volume is encrypted.
    pub encrypted: Option<bool>,
}

/// An additional volume of a worker pool's machines.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataVolume {
    /// A name to refer to the volume.
    pub name: String,
    /// The volume type.
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// The volume size.
    pub size: String,
    /// Whether the volume is encrypted.
    pub encrypted: Option<bool>,
}

/// Whether a worker pool may host system components.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerSystemComponents {
    pub allow: bool,
}

/// Machine controller manager settings of a worker pool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineControllerManagerSettings {
    /// After how long a draining machine is deleted forcefully.
    pub machine_drain_timeout: Option<String>,
    /// After how long an unhealthy machine is declared failed.
    pub machine_health_timeout: Option<String>,
    /// After how long a machine that is still being created is declared failed.
    pub machine_creation_timeout: Option<String>,
    /// Eviction retries before a drain is declared failed.
    pub max_evict_retries: Option<i32>,
    /// Node conditions that make a machine unhealthy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_conditions: Vec<String>,
}

/// Cluster autoscaler settings of a worker pool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAutoscalerOptions {
    pub scale_down_utilization_threshold: Option<f64>,
    pub scale_down_gpu_utilization_threshold: Option<f64>,
    pub scale_down_unneeded_time: Option<String>,
    pub scale_down_unready_time: Option<String>,
    pub max_node_provision_time: Option<String>,
}

/// How a worker pool's machines are updated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum MachineUpdateStrategy {
    /// Machines are replaced.
    AutoRollingUpdate,
    /// Machines are updated in place, chosen automatically.
    AutoInPlaceUpdate,
    /// Machines are updated in place, chosen by the user.
    ManualInPlaceUpdate,
}

/// Settings for all worker pools.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkersSettings {
    /// SSH access to the worker nodes.
    pub ssh_access: Option<SshAccess>,
}

/// SSH access to the worker nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SshAccess {
    /// Whether sshd is enabled on the nodes (default true).
    pub enabled: bool,
}
