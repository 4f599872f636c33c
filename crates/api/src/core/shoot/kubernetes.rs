//! `spec.kubernetes` of a Shoot: the Kubernetes version and the settings of the control plane
//! components, kube-proxy, and the cluster and vertical pod autoscalers (the kubelet is in
//! [`super::kubelet`]).
//!
//! Durations are kept as the Go duration strings the reference API uses (`30s`, `1m0s`).
//! The component settings structs preserve fields this crate does not model
//! ([`UnmodeledFields`]) so a manifest for a newer reference version loses nothing.

use super::kubelet::KubeletConfig;
use crate::common::ObjectReference;
use crate::core::shared::{StringOrList, UnmodeledFields};
use crate::opaque::AnyJson;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Kubernetes version and component settings of a shoot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Kubernetes {
    /// Legacy (GEP-15 example): whether all authenticated users may use the privileged
    /// PodSecurityPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_privileged_containers: Option<bool>,
    /// Settings of the cluster autoscaler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_autoscaler: Option<ClusterAutoscaler>,
    /// Settings of the kube-apiserver.
    #[serde(rename = "kubeAPIServer", default, skip_serializing_if = "Option::is_none")]
    pub kube_api_server: Option<KubeApiServerConfig>,
    /// Settings of the kube-controller-manager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_controller_manager: Option<KubeControllerManagerConfig>,
    /// Settings of the kube-scheduler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_scheduler: Option<KubeSchedulerConfig>,
    /// Settings of kube-proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_proxy: Option<KubeProxyConfig>,
    /// Settings of every kubelet (a worker pool may override them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet: Option<KubeletConfig>,
    /// The Kubernetes version; may be partial (`1.20`) and is defaulted from the CloudProfile.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Settings of the vertical pod autoscaler in the shoot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vertical_pod_autoscaler: Option<VerticalPodAutoscaler>,
    /// Whether a kubeconfig with a static token is generated (legacy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_static_token_kubeconfig: Option<bool>,
    /// Settings of the shoot's etcds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd: Option<Etcd>,
}

/// Settings of the cluster autoscaler.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct ClusterAutoscaler {
    /// How long after a scale-up scale-down evaluation resumes (default `1h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_delay_after_add: Option<String>,
    /// How long after a node deletion scale-down evaluation resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_delay_after_delete: Option<String>,
    /// How long after a scale-down failure scale-down evaluation resumes (default `3m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_delay_after_failure: Option<String>,
    /// How long a node must be unneeded before it is removed (default `30m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_unneeded_time: Option<String>,
    /// Utilization (0.0-1.0) below which a node may be removed (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_utilization_threshold: Option<f64>,
    /// How often the cluster is re-evaluated (default `10s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan_interval: Option<String>,
    /// The expander choosing the node group to scale up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expander: Option<ExpanderMode>,
    /// How long to wait for a node to be provisioned (default `20m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_node_provision_time: Option<String>,
    /// Seconds to wait for pod termination when scaling down (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_graceful_termination_seconds: Option<i32>,
    /// Taint keys ignored in node templates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_taints: Vec<String>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// The cluster autoscaler's scale-up strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExpanderMode {
    LeastWaste,
    MostPods,
    Priority,
    Random,
}

/// Settings of the kube-apiserver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct KubeApiServerConfig {
    /// Feature gates of the component.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// Admission plugins in addition to the system's, with their configuration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admission_plugins: Vec<AdmissionPlugin>,
    /// Audiences of service account tokens (default `kubernetes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_audiences: Vec<String>,
    /// Audit settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_config: Option<AuditConfig>,
    /// Legacy: whether basic authentication is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_basic_authentication: Option<bool>,
    /// OIDC authentication settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc_config: Option<OidcConfig>,
    /// API groups/versions to enable or disable (`--runtime-config`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub runtime_config: BTreeMap<String, bool>,
    /// Service account token settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_config: Option<ServiceAccountConfig>,
    /// Watch cache sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_cache_sizes: Option<WatchCacheSizes>,
    /// Limits of requests in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ApiServerRequests>,
    /// Whether anonymous requests are allowed (`--anonymous-auth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_anonymous_authentication: Option<bool>,
    /// How long events are kept (default `1h`).
    #[serde(rename = "eventTTL", default, skip_serializing_if = "Option::is_none")]
    pub event_ttl: Option<String>,
    /// Log verbosity settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<ApiServerLogging>,
    /// `--default-not-ready-toleration-seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_not_ready_toleration_seconds: Option<i64>,
    /// `--default-unreachable-toleration-seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_unreachable_toleration_seconds: Option<i64>,
    /// Resources (besides secrets) to encrypt in etcd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption_config: Option<EncryptionConfig>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// An admission plugin and its configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionPlugin {
    /// The plugin name (for example `PodNodeSelector`).
    pub name: String,
    /// The plugin configuration: an object (reference) or a YAML string (GEP-15 example).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<AnyJson>,
    /// Disables a plugin the system enables by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// A Secret with a kubeconfig for the plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_name: Option<String>,
}

/// Audit settings of the kube-apiserver.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditConfig {
    /// The audit policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_policy: Option<AuditPolicy>,
}

/// Where the audit policy lives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditPolicy {
    /// A ConfigMap in the shoot's namespace holding the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<ObjectReference>,
}

/// OIDC authentication settings of the kube-apiserver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OidcConfig {
    /// CA bundle to verify the OIDC issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
    /// Client settings used for kubeconfig generation (legacy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_authentication: Option<OpenIdConnectClientAuthentication>,
    /// The OIDC client ID.
    #[serde(rename = "clientID", default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The claim holding the user's groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups_claim: Option<String>,
    /// Prefix added to every group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups_prefix: Option<String>,
    /// The issuer URL (https only).
    #[serde(rename = "issuerURL", default, skip_serializing_if = "Option::is_none")]
    pub issuer_url: Option<String>,
    /// Claims that must be present in the ID token with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub required_claims: BTreeMap<String, String>,
    /// Allowed signing algorithms: a list, or one comma-separated string (GEP-15 example).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_algs: Option<StringOrList>,
    /// The claim used as the user name (default `sub`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username_claim: Option<String>,
    /// Prefix added to every user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username_prefix: Option<String>,
}

/// OIDC client settings for kubeconfig generation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectClientAuthentication {
    /// Extra auth-provider configuration.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_config: BTreeMap<String, String>,
    /// The client secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// Service account token settings of the kube-apiserver.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccountConfig {
    /// The token issuer (default: the API server's URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// Whether projected tokens are extended during the transition to bound tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extend_token_expiration: Option<bool>,
    /// The longest validity of an issued token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_token_expiration: Option<String>,
    /// Further issuers whose tokens are accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_issuers: Vec<String>,
}

/// Watch cache sizes of the kube-apiserver.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WatchCacheSizes {
    /// The default watch cache size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<i32>,
    /// Per-resource watch cache sizes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceWatchCacheSize>,
}

/// The watch cache size of one resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceWatchCacheSize {
    /// The API group; absent means the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_group: Option<String>,
    /// The resource (plural, lowercase).
    pub resource: String,
    /// The cache size.
    pub size: i32,
}

/// Limits of requests in flight.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerRequests {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_non_mutating_inflight: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mutating_inflight: Option<i32>,
}

/// Log verbosity settings of the kube-apiserver.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerLogging {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_access_verbosity: Option<i32>,
}

/// Resources (besides secrets) to encrypt in etcd.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionConfig {
    /// Resources as `resource` or `resource.group`.
    #[serde(default)]
    pub resources: Vec<String>,
}

/// Settings of the kube-controller-manager.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct KubeControllerManagerConfig {
    /// Feature gates of the component.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// Settings of the horizontal pod autoscaler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub horizontal_pod_autoscaler: Option<HorizontalPodAutoscalerConfig>,
    /// Mask size of each node's pod CIDR (default 24). Immutable.
    #[serde(rename = "nodeCIDRMaskSize", default, skip_serializing_if = "Option::is_none")]
    pub node_cidr_mask_size: Option<i32>,
    /// Grace period for deleting pods on failed nodes (legacy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_eviction_timeout: Option<String>,
    /// Grace period before an unresponsive node is marked unhealthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_monitor_grace_period: Option<String>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// Settings of the horizontal pod autoscaler in the kube-controller-manager.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HorizontalPodAutoscalerConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_initialization_period: Option<String>,
    /// Legacy (Kubernetes < 1.12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downscale_delay: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downscale_stabilization: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_readiness_delay: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_period: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// Legacy (Kubernetes < 1.12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upscale_delay: Option<String>,
}

/// Settings of the kube-scheduler.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct KubeSchedulerConfig {
    /// Feature gates of the component.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// The `KUBE_MAX_PD_VOLS` environment variable.
    #[serde(rename = "kubeMaxPDVols", default, skip_serializing_if = "Option::is_none")]
    pub kube_max_pd_vols: Option<String>,
    /// The scheduling profile (default `balanced`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<SchedulingProfile>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// A kube-scheduler profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulingProfile {
    Balanced,
    BinPacking,
}

/// Settings of kube-proxy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct KubeProxyConfig {
    /// Feature gates of the component.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// The proxy mode (default `IPTables`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ProxyMode>,
    /// Whether kube-proxy is deployed (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// The kube-proxy mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ProxyMode {
    IPTables,
    IPVS,
}

/// Settings of the vertical pod autoscaler in the shoot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct VerticalPodAutoscaler {
    /// Whether a VPA is deployed into the shoot.
    pub enabled: bool,
    #[serde(rename = "evictAfterOOMThreshold", default, skip_serializing_if = "Option::is_none")]
    pub evict_after_oom_threshold: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_rate_burst: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_rate_limit: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_tolerance: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendation_margin_fraction: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updater_interval: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommender_interval: Option<String>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// Settings of the shoot's etcds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Etcd {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main: Option<EtcdConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<EtcdConfig>,
}

/// Settings of one etcd.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdConfig {
    /// Autoscaling settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<ControlPlaneAutoscaling>,
}

/// Autoscaling settings of a control plane component.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneAutoscaling {
    /// Minimum resource requests the vertical pod autoscaler may set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub min_allowed: BTreeMap<String, Quantity>,
}
