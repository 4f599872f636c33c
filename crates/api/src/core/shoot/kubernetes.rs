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
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Kubernetes {
    /// Legacy (GEP-15 example): whether all authenticated users may use the privileged
    /// PodSecurityPolicy.
    pub allow_privileged_containers: Option<bool>,
    /// Settings of the cluster autoscaler.
    pub cluster_autoscaler: Option<ClusterAutoscaler>,
    /// Settings of the kube-apiserver.
    #[serde(rename = "kubeAPIServer")]
    pub kube_api_server: Option<KubeApiServerConfig>,
    /// Settings of the kube-controller-manager.
    pub kube_controller_manager: Option<KubeControllerManagerConfig>,
    /// Settings of the kube-scheduler.
    pub kube_scheduler: Option<KubeSchedulerConfig>,
    /// Settings of kube-proxy.
    pub kube_proxy: Option<KubeProxyConfig>,
    /// Settings of every kubelet (a worker pool may override them).
    pub kubelet: Option<KubeletConfig>,
    /// The Kubernetes version; may be partial (`1.20`) and is defaulted from the CloudProfile.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Settings of the vertical pod autoscaler in the shoot.
    pub vertical_pod_autoscaler: Option<VerticalPodAutoscaler>,
    /// Whether a kubeconfig with a static token is generated (legacy).
    pub enable_static_token_kubeconfig: Option<bool>,
    /// Settings of the shoot's etcds.
    pub etcd: Option<Etcd>,
}

/// Settings of the cluster autoscaler.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct ClusterAutoscaler {
    /// How long after a scale-up scale-down evaluation resumes (default `1h`).
    pub scale_down_delay_after_add: Option<String>,
    /// How long after a node deletion scale-down evaluation resumes.
    pub scale_down_delay_after_delete: Option<String>,
    /// How long after a scale-down failure scale-down evaluation resumes (default `3m`).
    pub scale_down_delay_after_failure: Option<String>,
    /// How long a node must be unneeded before it is removed (default `30m`).
    pub scale_down_unneeded_time: Option<String>,
    /// Utilization (0.0-1.0) below which a node may be removed (default 0.5).
    pub scale_down_utilization_threshold: Option<f64>,
    /// How often the cluster is re-evaluated (default `10s`).
    pub scan_interval: Option<String>,
    /// The expander choosing the node group to scale up.
    pub expander: Option<ExpanderMode>,
    /// How long to wait for a node to be provisioned (default `20m`).
    pub max_node_provision_time: Option<String>,
    /// Seconds to wait for pod termination when scaling down (default 600).
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
#[serde_with::skip_serializing_none]
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
    pub audit_config: Option<AuditConfig>,
    /// Legacy: whether basic authentication is enabled.
    pub enable_basic_authentication: Option<bool>,
    /// OIDC authentication settings.
    pub oidc_config: Option<OidcConfig>,
    /// API groups/versions to enable or disable (`--runtime-config`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub runtime_config: BTreeMap<String, bool>,
    /// Service account token settings.
    pub service_account_config: Option<ServiceAccountConfig>,
    /// Watch cache sizes.
    pub watch_cache_sizes: Option<WatchCacheSizes>,
    /// Limits of requests in flight.
    pub requests: Option<ApiServerRequests>,
    /// Whether anonymous requests are allowed (`--anonymous-auth`).
    pub enable_anonymous_authentication: Option<bool>,
    /// How long events are kept (default `1h`).
    #[serde(rename = "eventTTL")]
    pub event_ttl: Option<String>,
    /// Log verbosity settings.
    pub logging: Option<ApiServerLogging>,
    /// `--default-not-ready-toleration-seconds`.
    pub default_not_ready_toleration_seconds: Option<i64>,
    /// `--default-unreachable-toleration-seconds`.
    pub default_unreachable_toleration_seconds: Option<i64>,
    /// Resources (besides secrets) to encrypt in etcd.
    pub encryption_config: Option<EncryptionConfig>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// An admission plugin and its configuration.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionPlugin {
    /// The plugin name (for example `PodNodeSelector`).
    pub name: String,
    /// The plugin configuration: an object (reference) or a YAML string (GEP-15 example).
    pub config: Option<AnyJson>,
    /// Disables a plugin the system enables by default.
    pub disabled: Option<bool>,
    /// A Secret with a kubeconfig for the plugin.
    pub kubeconfig_secret_name: Option<String>,
}

/// Audit settings of the kube-apiserver.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditConfig {
    /// The audit policy.
    pub audit_policy: Option<AuditPolicy>,
}

/// Where the audit policy lives.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditPolicy {
    /// A ConfigMap in the shoot's namespace holding the policy.
    pub config_map_ref: Option<ObjectReference>,
}

/// OIDC authentication settings of the kube-apiserver.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OidcConfig {
    /// CA bundle to verify the OIDC issuer.
    pub ca_bundle: Option<String>,
    /// Client settings used for kubeconfig generation (legacy).
    pub client_authentication: Option<OpenIdConnectClientAuthentication>,
    /// The OIDC client ID.
    #[serde(rename = "clientID")]
    pub client_id: Option<String>,
    /// The claim holding the user's groups.
    pub groups_claim: Option<String>,
    /// Prefix added to every group.
    pub groups_prefix: Option<String>,
    /// The issuer URL (https only).
    #[serde(rename = "issuerURL")]
    pub issuer_url: Option<String>,
    /// Claims that must be present in the ID token with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub required_claims: BTreeMap<String, String>,
    /// Allowed signing algorithms: a list, or one comma-separated string (GEP-15 example).
    pub signing_algs: Option<StringOrList>,
    /// The claim used as the user name (default `sub`).
    pub username_claim: Option<String>,
    /// Prefix added to every user name.
    pub username_prefix: Option<String>,
}

/// OIDC client settings for kubeconfig generation.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectClientAuthentication {
    /// Extra auth-provider configuration.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_config: BTreeMap<String, String>,
    /// The client secret.
    pub secret: Option<String>,
}

/// Service account token settings of the kube-apiserver.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccountConfig {
    /// The token issuer (default: the API server's URL).
    pub issuer: Option<String>,
    /// Whether projected tokens are extended during the transition to bound tokens.
    pub extend_token_expiration: Option<bool>,
    /// The longest validity of an issued token.
    pub max_token_expiration: Option<String>,
    /// Further issuers whose tokens are accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_issuers: Vec<String>,
}

/// Watch cache sizes of the kube-apiserver.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WatchCacheSizes {
    /// The default watch cache size.
    pub default: Option<i32>,
    /// Per-resource watch cache sizes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceWatchCacheSize>,
}

/// The watch cache size of one resource.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceWatchCacheSize {
    /// The API group; absent means the core group.
    pub api_group: Option<String>,
    /// The resource (plural, lowercase).
    pub resource: String,
    /// The cache size.
    pub size: i32,
}

/// Limits of requests in flight.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerRequests {
    pub max_non_mutating_inflight: Option<i32>,
    pub max_mutating_inflight: Option<i32>,
}

/// Log verbosity settings of the kube-apiserver.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerLogging {
    pub verbosity: Option<i32>,
    pub http_access_verbosity: Option<i32>,
}

/// Resources (besides secrets) to encrypt in etcd, and the provider that encrypts them.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionConfig {
    /// Resources as `resource` or `resource.group`.
    #[serde(default)]
    pub resources: Vec<String>,
    /// The encryption provider (`aescbc` when unset); a change rotates the etcd encryption key.
    pub provider: Option<EncryptionProvider>,
}

/// The encryption provider of a shoot's etcd data.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EncryptionProvider {
    /// `aescbc` (default), `aesgcm` or `secretbox`.
    #[serde(rename = "type")]
    pub type_: Option<String>,
}

/// Settings of the kube-controller-manager.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct KubeControllerManagerConfig {
    /// Feature gates of the component.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// Settings of the horizontal pod autoscaler.
    pub horizontal_pod_autoscaler: Option<HorizontalPodAutoscalerConfig>,
    /// Mask size of each node's pod CIDR (default 24). Immutable.
    #[serde(rename = "nodeCIDRMaskSize")]
    pub node_cidr_mask_size: Option<i32>,
    /// Grace period for deleting pods on failed nodes (legacy).
    pub pod_eviction_timeout: Option<String>,
    /// Grace period before an unresponsive node is marked unhealthy.
    pub node_monitor_grace_period: Option<String>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// Settings of the horizontal pod autoscaler in the kube-controller-manager.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HorizontalPodAutoscalerConfig {
    pub cpu_initialization_period: Option<String>,
    /// Legacy (Kubernetes < 1.12).
    pub downscale_delay: Option<String>,
    pub downscale_stabilization: Option<String>,
    pub initial_readiness_delay: Option<String>,
    pub sync_period: Option<String>,
    pub tolerance: Option<f64>,
    /// Legacy (Kubernetes < 1.12).
    pub upscale_delay: Option<String>,
}

/// Settings of the kube-scheduler.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct KubeSchedulerConfig {
    /// Feature gates of the component.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// The `KUBE_MAX_PD_VOLS` environment variable.
    #[serde(rename = "kubeMaxPDVols")]
    pub kube_max_pd_vols: Option<String>,
    /// The scheduling profile (default `balanced`).
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
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct KubeProxyConfig {
    /// Feature gates of the component.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// The proxy mode (default `IPTables`).
    pub mode: Option<ProxyMode>,
    /// Whether kube-proxy is deployed (default true).
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
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct VerticalPodAutoscaler {
    /// Whether a VPA is deployed into the shoot.
    pub enabled: bool,
    #[serde(rename = "evictAfterOOMThreshold")]
    pub evict_after_oom_threshold: Option<String>,
    pub eviction_rate_burst: Option<i32>,
    pub eviction_rate_limit: Option<f64>,
    pub eviction_tolerance: Option<f64>,
    pub recommendation_margin_fraction: Option<f64>,
    pub updater_interval: Option<String>,
    pub recommender_interval: Option<String>,
    /// Reference fields not modelled here, kept as-is.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unmodeled: UnmodeledFields,
}

/// Settings of the shoot's etcds.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Etcd {
    pub main: Option<EtcdConfig>,
    pub events: Option<EtcdConfig>,
}

/// Settings of one etcd.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdConfig {
    /// Autoscaling settings.
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
