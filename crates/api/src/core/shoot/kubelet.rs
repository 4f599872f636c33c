//! `spec.kubernetes.kubelet` of a Shoot (and `kubernetes.kubelet` of a worker pool): the kubelet
//! settings. Durations are Go duration strings; fields this crate does not model are preserved.

use crate::core::shared::UnmodeledFields;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Settings of the kubelet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct KubeletConfig {
    /// Feature gates of the component.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// Whether CPU CFS quota is enforced for pods.
    #[serde(rename = "cpuCFSQuota", default, skip_serializing_if = "Option::is_none")]
    pub cpu_cfs_quota: Option<bool>,
    /// The CPU manager policy (default `none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_manager_policy: Option<String>,
    /// Hard eviction thresholds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_hard: Option<KubeletConfigEviction>,
    /// Longest grace period (seconds) for soft evictions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_max_pod_grace_period: Option<i32>,
    /// Amounts reclaimed below the thresholds on eviction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_minimum_reclaim: Option<KubeletConfigEvictionMinimumReclaim>,
    /// How long to wait before leaving an eviction pressure condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_pressure_transition_period: Option<String>,
    /// Soft eviction thresholds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_soft: Option<KubeletConfigEviction>,
    /// Grace periods of the soft eviction thresholds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_soft_grace_period: Option<KubeletConfigEvictionSoftGracePeriod>,
    /// Maximum number of pods per node (default 110).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pods: Option<i32>,
    /// Maximum number of process IDs per pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_pids_limit: Option<i64>,
    /// Legacy: image pull progress deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_progress_deadline: Option<String>,
    /// Whether the kubelet fails to start when swap is on (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_swap_on: Option<bool>,
    /// Resources reserved for Kubernetes node components.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_reserved: Option<KubeletConfigReserved>,
    /// Resources reserved for system processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_reserved: Option<KubeletConfigReserved>,
    /// Disk usage (percent) that triggers image garbage collection.
    #[serde(rename = "imageGCHighThresholdPercent", default, skip_serializing_if = "Option::is_none")]
    pub image_gc_high_threshold_percent: Option<i32>,
    /// Disk usage (percent) image garbage collection frees down to.
    #[serde(rename = "imageGCLowThresholdPercent", default, skip_serializing_if = "Option::is_none")]
    pub image_gc_low_threshold_percent: Option<i32>,
    /// Whether images are pulled one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serialize_image_pulls: Option<bool>,
    /// Registry pulls per second (0 = unlimited).
    #[serde(rename = "registryPullQPS", default, skip_serializing_if = "Option::is_none")]
    pub registry_pull_qps: Option<i32>,
    /// Burst of registry pulls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_burst: Option<i32>,
    /// Whether `RuntimeDefault` is the default seccomp profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp_default: Option<bool>,
    /// Size at which container logs are rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_log_max_size: Option<Quantity>,
    /// How many rotated log files are kept per container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_log_max_files: Option<i32>,
    /// Whether kernel tunables must match the kubelet defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect_kernel_defaults: Option<bool>,
    /// How long a streaming connection may be idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming_connection_idle_timeout: Option<String>,
    /// Swap available to workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_swap: Option<MemorySwapConfiguration>,
    /// Maximum number of parallel image pulls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel_image_pulls: Option<i32>,
    /// Minimum age of an unused image before garbage collection.
    #[serde(rename = "imageMinimumGCAge", default, skip_serializing_if = "Option::is_none")]
    pub image_minimum_gc_age: Option<String>,
    /// Maximum age of an unused image before garbage collection.
    #[serde(rename = "imageMaximumGCAge", default, skip_serializing_if = "Option::is_none")]
    pub image_maximum_gc_age: Option<String>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// A value per kubelet eviction signal: thresholds and soft grace periods (`String`: a
/// quantity, a percentage or a duration) and minimum reclaims (`Quantity`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvictionSignals<T> {
    /// Available memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_available: Option<T>,
    /// Available space on the image filesystem.
    #[serde(rename = "imageFSAvailable", default, skip_serializing_if = "Option::is_none")]
    pub image_fs_available: Option<T>,
    /// Free inodes on the image filesystem.
    #[serde(rename = "imageFSInodesFree", default, skip_serializing_if = "Option::is_none")]
    pub image_fs_inodes_free: Option<T>,
    /// Available space on the node filesystem.
    #[serde(rename = "nodeFSAvailable", default, skip_serializing_if = "Option::is_none")]
    pub node_fs_available: Option<T>,
    /// Free inodes on the node filesystem.
    #[serde(rename = "nodeFSInodesFree", default, skip_serializing_if = "Option::is_none")]
    pub node_fs_inodes_free: Option<T>,
}

/// Kubelet eviction thresholds (a quantity or a percentage each).
pub type KubeletConfigEviction = EvictionSignals<String>;
/// Amounts the kubelet reclaims below the eviction thresholds.
pub type KubeletConfigEvictionMinimumReclaim = EvictionSignals<Quantity>;
/// Grace periods of the kubelet's soft eviction thresholds.
pub type KubeletConfigEvictionSoftGracePeriod = EvictionSignals<String>;

/// Resources reserved on a node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfigReserved {
    /// Reserved CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Quantity>,
    /// Reserved memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Quantity>,
    /// Reserved ephemeral storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_storage: Option<Quantity>,
    /// Reserved process IDs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<Quantity>,
}

/// Swap available to workloads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemorySwapConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_behavior: Option<SwapBehavior>,
}

/// How workloads may use swap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum SwapBehavior {
    NoSwap,
    LimitedSwap,
    UnlimitedSwap,
}
