//! `spec.kubernetes.kubelet` of a Shoot (and `kubernetes.kubelet` of a worker pool): the kubelet
//! settings. Durations are Go duration strings; fields this crate does not model are preserved.

use crate::core::shared::UnmodeledFields;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Settings of the kubelet.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct KubeletConfig {
    /// Feature gates of the component.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// Whether CPU CFS quota is enforced for pods.
    #[serde(rename = "cpuCFSQuota")]
    pub cpu_cfs_quota: Option<bool>,
    /// The CPU manager policy (default `none`).
    pub cpu_manager_policy: Option<String>,
    /// Hard eviction thresholds.
    pub eviction_hard: Option<KubeletConfigEviction>,
    /// Longest grace period (seconds) for soft evictions.
    pub eviction_max_pod_grace_period: Option<i32>,
    /// Amounts reclaimed below the thresholds on eviction.
    pub eviction_minimum_reclaim: Option<KubeletConfigEvictionMinimumReclaim>,
    /// How long to wait before leaving an eviction pressure condition.
    pub eviction_pressure_transition_period: Option<String>,
    /// Soft eviction thresholds.
    pub eviction_soft: Option<KubeletConfigEviction>,
    /// Grace periods of the soft eviction thresholds.
    pub eviction_soft_grace_period: Option<KubeletConfigEvictionSoftGracePeriod>,
    /// Maximum number of pods per node (default 110).
    pub max_pods: Option<i32>,
    /// Maximum number of process IDs per pod.
    pub pod_pids_limit: Option<i64>,
    /// Legacy: image pull progress deadline.
    pub image_pull_progress_deadline: Option<String>,
    /// Whether the kubelet fails to start when swap is on (default true).
    pub fail_swap_on: Option<bool>,
    /// Resources reserved for Kubernetes node components.
    pub kube_reserved: Option<KubeletConfigReserved>,
    /// Resources reserved for system processes.
    pub system_reserved: Option<KubeletConfigReserved>,
    /// Disk usage (percent) that triggers image garbage collection.
    #[serde(rename = "imageGCHighThresholdPercent")]
    pub image_gc_high_threshold_percent: Option<i32>,
    /// Disk usage (percent) image garbage collection frees down to.
    #[serde(rename = "imageGCLowThresholdPercent")]
    pub image_gc_low_threshold_percent: Option<i32>,
    /// Whether images are pulled one at a time.
    pub serialize_image_pulls: Option<bool>,
    /// Registry pulls per second (0 = unlimited).
    #[serde(rename = "registryPullQPS")]
    pub registry_pull_qps: Option<i32>,
    /// Burst of registry pulls.
    pub registry_burst: Option<i32>,
    /// Whether `RuntimeDefault` is the default seccomp profile.
    pub seccomp_default: Option<bool>,
    /// Size at which container logs are rotated.
    pub container_log_max_size: Option<Quantity>,
    /// How many rotated log files are kept per container.
    pub container_log_max_files: Option<i32>,
    /// Whether kernel tunables must match the kubelet defaults.
    pub protect_kernel_defaults: Option<bool>,
    /// How long a streaming connection may be idle.
    pub streaming_connection_idle_timeout: Option<String>,
    /// Swap available to workloads.
    pub memory_swap: Option<MemorySwapConfiguration>,
    /// Maximum number of parallel image pulls.
    pub max_parallel_image_pulls: Option<i32>,
    /// Minimum age of an unused image before garbage collection.
    #[serde(rename = "imageMinimumGCAge")]
    pub image_minimum_gc_age: Option<String>,
    /// Maximum age of an unused image before garbage collection.
    #[serde(rename = "imageMaximumGCAge")]
    pub image_maximum_gc_age: Option<String>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// A value per kubelet eviction signal: thresholds and soft grace periods (`String`: a
/// quantity, a percentage or a duration) and minimum reclaims (`Quantity`).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvictionSignals<T> {
    /// Available memory.
    pub memory_available: Option<T>,
    /// Available space on the image filesystem.
    #[serde(rename = "imageFSAvailable")]
    pub image_fs_available: Option<T>,
    /// Free inodes on the image filesystem.
    #[serde(rename = "imageFSInodesFree")]
    pub image_fs_inodes_free: Option<T>,
    /// Available space on the node filesystem.
    #[serde(rename = "nodeFSAvailable")]
    pub node_fs_available: Option<T>,
    /// Free inodes on the node filesystem.
    #[serde(rename = "nodeFSInodesFree")]
    pub node_fs_inodes_free: Option<T>,
}

/// Kubelet eviction thresholds (a quantity or a percentage each).
pub type KubeletConfigEviction = EvictionSignals<String>;
/// Amounts the kubelet reclaims below the eviction thresholds.
pub type KubeletConfigEvictionMinimumReclaim = EvictionSignals<Quantity>;
/// Grace periods of the kubelet's soft eviction thresholds.
pub type KubeletConfigEvictionSoftGracePeriod = EvictionSignals<String>;

/// Resources reserved on a node.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfigReserved {
    /// Reserved CPU.
    pub cpu: Option<Quantity>,
    /// Reserved memory.
    pub memory: Option<Quantity>,
    /// Reserved ephemeral storage.
    pub ephemeral_storage: Option<Quantity>,
    /// Reserved process IDs.
    pub pid: Option<Quantity>,
}

/// Swap available to workloads.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemorySwapConfiguration {
    pub swap_behavior: Option<SwapBehavior>,
}

/// How workloads may use swap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum SwapBehavior {
    NoSwap,
    LimitedSwap,
    UnlimitedSwap,
}
