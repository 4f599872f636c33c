//! The KubeletConfiguration of one worker pool (`kubelet.config.k8s.io/v1beta1`), the file
//! `/var/lib/kubelet/config/kubelet` of the pool's OperatingSystemConfig. Pure.
//!
//! Three layers, later ones win:
//! 1. this system's base ([`base`]): what a nested machine needs (webhook authentication and
//!    authorization, rotated client certificates, cgroupfs, the shoot's cluster DNS, no swap
//!    check, eviction thresholds of 1 % since the machine shares its host's disk, image GC off
//!    since the images a machine carries cannot always be pulled again, parallel pulls);
//! 2. the shoot's `spec.kubernetes.kubelet`, or, for a pool that has its own
//!    `spec.provider.workers[].kubernetes.kubelet`, the pool's instead ([`effective`]). The pool's
//!    settings replace the shoot's as a whole, as in Gardener
//!    (`CalculateEffectiveKubeletConfiguration`; its API reference: "If set, all
//!    `spec.kubernetes.kubelet` settings will be overwritten for this worker pool (no merge of
//!    settings)");
//! 3. per field: a setting overrides the base's field; the eviction maps and the reserved
//!    resources are merged per signal and per resource.
//!
//! Two fields need the kubelet's own defaults rather than the base's: the image GC thresholds are
//! one setting (a pool that sets one of them gets the kubelet's default, 85 % and 80 %, for the
//! other, since the base's 100/99 would make almost any value of the other invalid), and a soft
//! eviction threshold without a grace period gets Gardener's default grace period (1m30s; the
//! kubelet refuses to start without one). Admission (`crates/admission/src/shoot/kubelet.rs`)
//! refuses what the kubelet cannot run or what cannot take effect on this system's machines, so
//! every value that reaches this module is mapped as it is.

use crate::shoot::operation::values::ShootValues;
use api::core::Shoot;
use api::core::shoot::kubelet::{EvictionSignals, KubeletConfig, KubeletConfigReserved, SwapBehavior};
use api::core::shoot::provider::Worker;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The grace period of a soft eviction threshold that has none (Gardener's default for every
/// signal).
pub const DEFAULT_SOFT_GRACE_PERIOD: &str = "1m30s";

/// Where the kubelet's configuration file lives on a machine (Gardener's path).
pub const KUBELET_CONFIG_PATH: &str = "/var/lib/kubelet/config/kubelet";
/// The CA bundle the kubelet checks client certificates against (`ca-kubelet`, which signs the
/// API server's kubelet client certificate).
pub const KUBELET_CLIENT_CA_PATH: &str = "/var/lib/kubelet/ca-kubelet.crt";

/// The shoot's cluster DNS address: the tenth address of the service network, as Gardener
/// picks it.
pub fn cluster_dns(v: &ShootValues) -> std::net::IpAddr {
    v.services.hosts().nth(9).unwrap_or_else(|| v.services.network())
}

/// The fields of `KubeletConfiguration` this system writes. Unset options are left out, so the
/// kubelet's own defaults apply.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfiguration {
    pub api_version: String,
    pub kind: String,
    pub authentication: Authentication,
    pub authorization: Authorization,
    pub rotate_certificates: bool,
    pub cgroup_driver: String,
    pub fail_swap_on: bool,
    pub read_only_port: u16,
    pub cluster_domain: String,
    #[serde(rename = "clusterDNS")]
    pub cluster_dns: Vec<String>,
    /// Signal (`memory.available`) → threshold.
    pub eviction_hard: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub eviction_soft: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub eviction_soft_grace_period: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub eviction_minimum_reclaim: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_pressure_transition_period: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_max_pod_grace_period: Option<i32>,
    #[serde(rename = "imageGCHighThresholdPercent", default, skip_serializing_if = "Option::is_none")]
    pub image_gc_high_threshold_percent: Option<i32>,
    #[serde(rename = "imageGCLowThresholdPercent", default, skip_serializing_if = "Option::is_none")]
    pub image_gc_low_threshold_percent: Option<i32>,
    #[serde(rename = "imageMinimumGCAge", default, skip_serializing_if = "Option::is_none")]
    pub image_minimum_gc_age: Option<String>,
    #[serde(rename = "imageMaximumGCAge", default, skip_serializing_if = "Option::is_none")]
    pub image_maximum_gc_age: Option<String>,
    pub serialize_image_pulls: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel_image_pulls: Option<i32>,
    pub max_pods: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_pids_limit: Option<i64>,
    #[serde(rename = "cpuCFSQuota", default, skip_serializing_if = "Option::is_none")]
    pub cpu_cfs_quota: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_manager_policy: Option<String>,
    /// Resource (`cpu`, `memory`, `ephemeral-storage`, `pid`) → quantity.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kube_reserved: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub system_reserved: BTreeMap<String, String>,
    #[serde(rename = "registryPullQPS", default, skip_serializing_if = "Option::is_none")]
    pub registry_pull_qps: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_burst: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect_kernel_defaults: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming_connection_idle_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_log_max_size: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_log_max_files: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp_default: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_swap: Option<MemorySwap>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Authentication {
    pub anonymous: Enabled,
    pub webhook: Enabled,
    pub x509: X509,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Enabled {
    pub enabled: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct X509 {
    #[serde(rename = "clientCAFile")]
    pub client_ca_file: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Authorization {
    pub mode: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemorySwap {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_behavior: Option<String>,
}

/// The kubelet settings that apply to `pool`: its own when it has any, else the shoot's.
pub fn effective<'a>(shoot: &'a Shoot, pool: &'a Worker) -> Option<&'a KubeletConfig> {
    pool.kubernetes.as_ref().and_then(|k| k.kubelet.as_ref()).or(shoot.spec.kubernetes.kubelet.as_ref())
}

/// This system's base configuration: what works on a nested machine when nobody asks for more.
pub fn base(v: &ShootValues) -> KubeletConfiguration {
    let eviction_hard = [
        ("memory.available", "100Mi"),
        ("nodefs.available", "1%"),
        ("nodefs.inodesFree", "1%"),
        ("imagefs.available", "1%"),
    ];
    KubeletConfiguration {
        api_version: "kubelet.config.k8s.io/v1beta1".into(),
        kind: "KubeletConfiguration".into(),
        authentication: Authentication {
            anonymous: Enabled { enabled: false },
            webhook: Enabled { enabled: true },
            x509: X509 { client_ca_file: KUBELET_CLIENT_CA_PATH.into() },
        },
        authorization: Authorization { mode: "Webhook".into() },
        rotate_certificates: true,
        cgroup_driver: "cgroupfs".into(),
        fail_swap_on: false,
        read_only_port: 0,
        cluster_domain: "cluster.local".into(),
        cluster_dns: vec![cluster_dns(v).to_string()],
        eviction_hard: eviction_hard.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        image_gc_high_threshold_percent: Some(100),
        image_gc_low_threshold_percent: Some(99),
        serialize_image_pulls: false,
        max_pods: 110,
        ..Default::default()
    }
}

/// The kubelet's names of the eviction signals, with the values `signals` sets.
fn signals<T>(signals: &EvictionSignals<T>) -> [(&'static str, Option<&T>); 5] {
    [
        ("memory.available", signals.memory_available.as_ref()),
        ("imagefs.available", signals.image_fs_available.as_ref()),
        ("imagefs.inodesFree", signals.image_fs_inodes_free.as_ref()),
        ("nodefs.available", signals.node_fs_available.as_ref()),
        ("nodefs.inodesFree", signals.node_fs_inodes_free.as_ref()),
    ]
}

fn merge_signals<T>(
    into: &mut BTreeMap<String, String>,
    from: Option<&EvictionSignals<T>>,
    text: impl Fn(&T) -> String,
) {
    for (signal, value) in from.map(signals).into_iter().flatten() {
        if let Some(value) = value {
            into.insert(signal.to_string(), text(value));
        }
    }
}

fn merge_reserved(into: &mut BTreeMap<String, String>, from: Option<&KubeletConfigReserved>) {
    let Some(r) = from else { return };
    for (resource, value) in
        [("cpu", &r.cpu), ("memory", &r.memory), ("ephemeral-storage", &r.ephemeral_storage), ("pid", &r.pid)]
    {
        if let Some(q) = value {
            into.insert(resource.to_string(), q.0.clone());
        }
    }
}

/// Sets what `k` sets on top of `config` (the mapping of Gardener's
/// `KubeletConfigParametersFromCoreV1beta1KubeletConfig`).
pub fn apply(config: &mut KubeletConfiguration, k: &KubeletConfig) {
    merge_signals(&mut config.eviction_hard, k.eviction_hard.as_ref(), String::clone);
    merge_signals(&mut config.eviction_soft, k.eviction_soft.as_ref(), String::clone);
    merge_signals(&mut config.eviction_soft_grace_period, k.eviction_soft_grace_period.as_ref(), String::clone);
    merge_signals(&mut config.eviction_minimum_reclaim, k.eviction_minimum_reclaim.as_ref(), |q| q.0.clone());
    for signal in config.eviction_soft.keys() {
        config
            .eviction_soft_grace_period
            .entry(signal.clone())
            .or_insert_with(|| DEFAULT_SOFT_GRACE_PERIOD.to_string());
    }
    set(&mut config.eviction_pressure_transition_period, &k.eviction_pressure_transition_period);
    set(&mut config.eviction_max_pod_grace_period, &k.eviction_max_pod_grace_period);
    if k.image_gc_high_threshold_percent.is_some() || k.image_gc_low_threshold_percent.is_some() {
        config.image_gc_high_threshold_percent = k.image_gc_high_threshold_percent;
        config.image_gc_low_threshold_percent = k.image_gc_low_threshold_percent;
    }
    set(&mut config.image_minimum_gc_age, &k.image_minimum_gc_age);
    set(&mut config.image_maximum_gc_age, &k.image_maximum_gc_age);
    if let Some(serialize) = k.serialize_image_pulls {
        config.serialize_image_pulls = serialize;
    }
    set(&mut config.max_parallel_image_pulls, &k.max_parallel_image_pulls);
    if let Some(max) = k.max_pods {
        config.max_pods = max;
    }
    set(&mut config.pod_pids_limit, &k.pod_pids_limit);
    set(&mut config.cpu_cfs_quota, &k.cpu_cfs_quota);
    set(&mut config.cpu_manager_policy, &k.cpu_manager_policy);
    merge_reserved(&mut config.kube_reserved, k.kube_reserved.as_ref());
    merge_reserved(&mut config.system_reserved, k.system_reserved.as_ref());
    set(&mut config.registry_pull_qps, &k.registry_pull_qps);
    set(&mut config.registry_burst, &k.registry_burst);
    set(&mut config.protect_kernel_defaults, &k.protect_kernel_defaults);
    set(&mut config.streaming_connection_idle_timeout, &k.streaming_connection_idle_timeout);
    if let Some(size) = &k.container_log_max_size {
        config.container_log_max_size = Some(size.0.clone());
    }
    set(&mut config.container_log_max_files, &k.container_log_max_files);
    if let Some(fail) = k.fail_swap_on {
        config.fail_swap_on = fail;
    }
    set(&mut config.seccomp_default, &k.seccomp_default);
    if let Some(behavior) = k.memory_swap.as_ref().and_then(|m| m.swap_behavior) {
        let name = match behavior {
            SwapBehavior::NoSwap => "NoSwap",
            SwapBehavior::LimitedSwap => "LimitedSwap",
            SwapBehavior::UnlimitedSwap => "UnlimitedSwap",
        };
        config.memory_swap = Some(MemorySwap { swap_behavior: Some(name.into()) });
    }
    config.feature_gates.extend(k.feature_gates.iter().map(|(gate, on)| (gate.clone(), *on)));
}

fn set<T: Clone>(field: &mut Option<T>, value: &Option<T>) {
    if value.is_some() {
        field.clone_from(value);
    }
}

/// The configuration of a kubelet with `settings` (`None`: the base alone).
pub fn configuration(v: &ShootValues, settings: Option<&KubeletConfig>) -> KubeletConfiguration {
    let mut config = base(v);
    if let Some(k) = settings {
        apply(&mut config, k);
    }
    config
}

/// [`configuration`] as the YAML file the kubelet reads.
pub fn render(v: &ShootValues, settings: Option<&KubeletConfig>) -> String {
    // Strings, numbers, booleans and string-keyed maps only: serializing cannot fail.
    serde_yaml::to_string(&configuration(v, settings))
        .unwrap_or_else(|e| format!("# the kubelet configuration could not be rendered: {e}\n"))
}

/// The kubelet configuration of a pool without settings of its own or of the shoot: client
/// certificates rotated through CSRs, webhook authentication and authorization against the
/// shoot's API server, the shoot's cluster DNS, cgroupfs, and eviction thresholds low enough for
/// a machine sharing its host's disk ([`base`]; a pool's own file is [`pool_config`]).
pub fn kubelet_config(v: &ShootValues) -> String {
    render(v, None)
}

/// The file of `pool`'s kubelet: the base with the settings [`effective`] for the pool.
pub fn pool_config(v: &ShootValues, shoot: &Shoot, pool: &Worker) -> String {
    render(v, effective(shoot, pool))
}

#[cfg(test)]
mod tests;
