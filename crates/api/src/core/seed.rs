//! `Seed`: a cluster that hosts shoot control planes. gardenlet registers and heartbeats its
//! seed; the scheduler picks seeds for shoots by provider, region, labels, taints and capacity.
//!
//! Besides the reference API's fields, the older spellings of the GEP-15 example manifest are
//! accepted (`spec.secretRef`, `spec.blockCIDRs`, `dns.ingressDomain`, `dns.secretName`, a string
//! `dns.provider`, `backup.type`, `backup.secretRef`).

pub use super::shared::DnsIncludeExclude;
use super::shared::{Extension, ExternalTrafficPolicy, IpFamily, any_value_schema};
use crate::common::{Condition, Gardener, LastOperation, NamedResourceReference, ObjectReference, SecretReference};
use crate::opaque::Opaque;
use k8s_openapi::api::core::v1::Toleration as PodToleration;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The condition type gardenlet maintains on its seed.
pub const CONDITION_GARDENLET_READY: &str = "GardenletReady";
/// The taint key that reserves a seed for shoots in the `garden` namespace.
pub const TAINT_PROTECTED: &str = "seed.gardener.cloud/protected";
/// The (legacy) taint key that hides a seed from the scheduler.
pub const TAINT_INVISIBLE: &str = "seed.gardener.cloud/invisible";
/// The capacity/allocatable resource counting shoots on a seed.
pub const RESOURCE_SHOOTS: &str = "shoots";

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "Seed",
    plural = "seeds",
    doc = "A cluster that hosts the control planes of shoots.",
    status = "SeedStatus",
    category = "gardener",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"GardenletReady\")].status",
        description = "Whether gardenlet reports the seed ready"
    ),
    printcolumn(name = "Provider", type_ = "string", json_path = ".spec.provider.type"),
    printcolumn(name = "Region", type_ = "string", json_path = ".spec.provider.region"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct SeedSpec {
    /// Object store for the backups of the seed's shoots (etcd); absent means no backups.
    pub backup: Option<SeedBackup>,
    /// DNS settings of the seed.
    #[serde(default)]
    pub dns: SeedDns,
    /// The seed's own networks, and the defaults for its shoots.
    pub networks: SeedNetworks,
    /// Provider type and region of the seed cluster.
    pub provider: SeedProvider,
    /// Legacy (GEP-15 example): the Secret holding the seed cluster's kubeconfig.
    pub secret_ref: Option<SecretReference>,
    /// Taints of the seed; shoots need matching tolerations to be scheduled onto it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<SeedTaint>,
    /// Legacy (GEP-15 example) place of `networks.blockCIDRs`.
    #[serde(rename = "blockCIDRs", default, skip_serializing_if = "Vec::is_empty")]
    pub block_cidrs: Vec<String>,
    /// Settings for persistent volumes created in the seed.
    pub volume: Option<SeedVolume>,
    /// Feature settings of the seed.
    pub settings: Option<SeedSettings>,
    /// The seed's ingress domain and controller. Immutable.
    pub ingress: Option<Ingress>,
    /// Extensions enabled for the seed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Extension>,
    /// Resources that extension configs refer to by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<NamedResourceReference>,
}

impl SeedSpec {
    /// Whether the seed carries a taint with this key.
    pub fn has_taint(&self, key: &str) -> bool {
        self.taints.iter().any(|t| t.key == key)
    }

    /// The seed's ingress domain: `spec.ingress.domain`, or the legacy `spec.dns.ingressDomain`.
    pub fn ingress_domain(&self) -> Option<&str> {
        self.ingress.as_ref().map(|i| i.domain.as_str()).or(self.dns.ingress_domain.as_deref())
    }
}

/// Object store configuration for the backups of a seed's shoots.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedBackup {
    /// The provider of the object store (reference spelling). Immutable.
    pub provider: Option<String>,
    /// Legacy (GEP-15 example) spelling of `provider`.
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// Configuration passed to the BackupBucket.
    pub provider_config: Option<Opaque>,
    /// The region of the object store; absent means the seed's region. Immutable.
    pub region: Option<String>,
    /// The Secret with the object store credentials.
    pub secret_ref: Option<SecretReference>,
    /// The resource (Secret or WorkloadIdentity) with the object store credentials.
    pub credentials_ref: Option<ObjectReference>,
}

impl SeedBackup {
    /// The object store provider, whichever spelling was used.
    pub fn provider_type(&self) -> Option<&str> {
        self.provider.as_deref().or(self.type_.as_deref())
    }
}

/// DNS settings of a seed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedDns {
    /// Legacy: the seed's ingress domain (now `spec.ingress.domain`).
    pub ingress_domain: Option<String>,
    /// The DNS provider for the seed's records: an object (reference) or a provider type name
    /// (GEP-15 example).
    // `default` keeps the field optional in the schema: behind `schema_with`, schemars does not see the `Option`.
    #[serde(default)]
    #[schemars(schema_with = "any_value_schema")]
    pub provider: Option<SeedDnsProviderRef>,
    /// Legacy (GEP-15 example): the Secret in the `garden` namespace with the DNS credentials.
    pub secret_name: Option<String>,
    /// DNS settings for the seed's internal domain.
    pub internal: Option<SeedDnsProviderConfig>,
    /// DNS settings for the seed's default domains, first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defaults: Vec<SeedDnsProviderConfig>,
}

/// The DNS provider of a seed: a provider type name (GEP-15 example) or the reference API's object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SeedDnsProviderRef {
    Type(String),
    Provider(Box<SeedDnsProvider>),
}

impl SeedDnsProviderRef {
    /// The provider type.
    pub fn type_(&self) -> &str {
        match self {
            Self::Type(t) => t,
            Self::Provider(p) => &p.type_,
        }
    }
}

/// A DNS provider for a seed's records.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedDnsProvider {
    /// The provider type (for example `aws-route53`).
    #[serde(rename = "type")]
    pub type_: String,
    /// The Secret with the DNS credentials.
    pub secret_ref: Option<SecretReference>,
    /// The resource with the DNS credentials.
    pub credentials_ref: Option<ObjectReference>,
    /// Domains to include or exclude.
    pub domains: Option<DnsIncludeExclude>,
    /// Hosted zones to include or exclude.
    pub zones: Option<DnsIncludeExclude>,
}

/// A DNS provider configuration for a domain.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedDnsProviderConfig {
    /// The provider type.
    #[serde(rename = "type")]
    pub type_: String,
    /// The domain the provider manages.
    pub domain: String,
    /// The hosted zone of the domain.
    pub zone: Option<String>,
    /// The resource with the DNS credentials.
    pub credentials_ref: ObjectReference,
}

/// The seed's ingress domain and the controller serving it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Ingress {
    /// The ingress domain of the seed.
    pub domain: String,
    /// The ingress controller the system deploys for the domain.
    pub controller: IngressController,
}

/// An ingress controller deployed by the system.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IngressController {
    /// The controller kind; only `nginx` exists.
    pub kind: String,
    /// Provider-specific configuration of the controller.
    pub provider_config: Option<Opaque>,
}

/// The networks of a seed cluster. Seed and shoot networks must be disjoint.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedNetworks {
    /// CIDR of the seed's node network. Immutable.
    pub nodes: Option<String>,
    /// CIDR of the seed's pod network. Immutable.
    pub pods: String,
    /// CIDR of the seed's service network. Immutable.
    pub services: String,
    /// Default networks for shoots scheduled onto this seed.
    pub shoot_defaults: Option<ShootNetworks>,
    /// Addresses that shoot control plane components in the seed must not reach.
    #[serde(rename = "blockCIDRs", default, skip_serializing_if = "Vec::is_empty")]
    pub block_cidrs: Vec<String>,
    /// The IP families of the seed's networks. Immutable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_families: Vec<IpFamily>,
}

/// Default networks for shoots.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShootNetworks {
    /// Default CIDR of a shoot's pod network.
    pub pods: Option<String>,
    /// Default CIDR of a shoot's service network.
    pub services: Option<String>,
}

/// Provider type and region of a seed cluster.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedProvider {
    /// The provider type (for example `local`).
    #[serde(rename = "type")]
    pub type_: String,
    /// Provider-specific configuration of the seed.
    pub provider_config: Option<Opaque>,
    /// The region of the seed cluster.
    pub region: String,
    /// The availability zones the seed cluster spans.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
}

/// A taint on a seed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedTaint {
    /// The taint key (for example `seed.gardener.cloud/protected`).
    pub key: String,
    /// The taint value.
    pub value: Option<String>,
}

/// Settings for persistent volumes created in the seed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedVolume {
    /// The minimum size of persistent volume claims in the seed.
    pub minimum_size: Option<Quantity>,
    /// Storage class provisioners of the seed, by purpose.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<SeedVolumeProvider>,
}

/// A storage class provisioner of a seed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedVolumeProvider {
    /// What the provisioner is used for (for example `etcd-main`).
    pub purpose: String,
    /// The provisioner name.
    pub name: String,
}

/// Feature settings of a seed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedSettings {
    /// Excess capacity reservation for shoot control planes.
    pub excess_capacity_reservation: Option<SeedSettingExcessCapacityReservation>,
    /// Scheduling settings.
    pub scheduling: Option<SeedSettingScheduling>,
    /// Whether shoot DNS records are managed by the seed (legacy).
    #[serde(rename = "shootDNS")]
    pub shoot_dns: Option<SeedSettingEnabled>,
    /// Settings for load balancer services in the seed.
    pub load_balancer_services: Option<SeedSettingLoadBalancerServices>,
    /// Settings for the vertical pod autoscaler of the seed.
    pub vertical_pod_autoscaler: Option<SeedSettingVerticalPodAutoscaler>,
    /// Whether shoot reconciliation checks the owner DNS record (legacy).
    pub owner_checks: Option<SeedSettingEnabled>,
    /// Settings for dependency-watchdog.
    pub dependency_watchdog: Option<SeedSettingDependencyWatchdog>,
    /// Settings for topology-aware routing in the seed.
    pub topology_aware_routing: Option<SeedSettingEnabled>,
}

impl SeedSettings {
    /// Whether the scheduler may place shoots onto the seed (default true).
    pub fn scheduling_visible(&self) -> bool {
        self.scheduling.as_ref().is_none_or(|s| s.visible)
    }
}

/// A setting that is switched on or off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedSettingEnabled {
    pub enabled: bool,
}

/// Scheduling settings of a seed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedSettingScheduling {
    /// Whether the scheduler considers this seed.
    pub visible: bool,
}

/// Excess capacity reservation for shoot control planes.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedSettingExcessCapacityReservation {
    /// Whether the default reservation is deployed (default true).
    pub enabled: Option<bool>,
    /// Reservation deployments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<SeedSettingExcessCapacityReservationConfig>,
}

/// One excess capacity reservation deployment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedSettingExcessCapacityReservationConfig {
    /// Resource requests of the reservation pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: BTreeMap<String, Quantity>,
    /// Node selector of the reservation pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations of the reservation pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<PodToleration>,
}

/// Settings for load balancer services in the seed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedSettingLoadBalancerServices {
    /// Annotations merged into every load balancer service.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The external traffic policy of the services (default `Cluster`).
    pub external_traffic_policy: Option<ExternalTrafficPolicy>,
    /// Per-zone settings in multi-zonal seeds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<SeedSettingLoadBalancerServicesZone>,
    /// Whether PROXY protocol is allowed.
    pub proxy_protocol: Option<LoadBalancerServicesProxyProtocol>,
    /// The `loadBalancerClass` of the services.
    pub class: Option<String>,
}

/// Load balancer settings for one zone.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedSettingLoadBalancerServicesZone {
    /// The zone (one of `spec.provider.zones`).
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    pub external_traffic_policy: Option<ExternalTrafficPolicy>,
    pub proxy_protocol: Option<LoadBalancerServicesProxyProtocol>,
}

/// Whether PROXY protocol is allowed for load balancer services.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerServicesProxyProtocol {
    pub allowed: bool,
}

/// Settings for the vertical pod autoscaler of a seed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedSettingVerticalPodAutoscaler {
    /// Whether the system deploys a VPA into the seed.
    pub enabled: bool,
    /// Feature gates of the VPA components.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// The most the VPA recommender may recommend for a container.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub max_allowed: BTreeMap<String, Quantity>,
}

/// Settings for dependency-watchdog.
#[serde_with::skip_serializing_none]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedSettingDependencyWatchdog {
    /// Legacy name of `weeder`.
    pub endpoint: Option<SeedSettingEnabled>,
    /// Legacy name of `prober`.
    pub probe: Option<SeedSettingEnabled>,
    /// Restarts crash-looping pods once their dependencies are back.
    pub weeder: Option<SeedSettingEnabled>,
    /// Scales down controllers of shoots whose API server is unreachable.
    pub prober: Option<SeedSettingEnabled>,
}

/// The observed state of a seed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedStatus {
    /// The gardenlet that last wrote the status.
    pub gardener: Option<Gardener>,
    /// The Kubernetes version of the seed cluster.
    pub kubernetes_version: Option<String>,
    /// Observations of the seed's state (`GardenletReady`, `BackupBucketsReady`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The generation of the spec last acted on.
    pub observed_generation: Option<i64>,
    /// The identity of the seed cluster. Immutable.
    pub cluster_identity: Option<String>,
    /// Total resources of the seed (for example `shoots`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, Quantity>,
    /// Resources of the seed available for scheduling; defaults to `capacity`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, Quantity>,
    /// When gardenlet's client certificate expires.
    pub client_certificate_expiration_timestamp: Option<Time>,
    /// Conditions that constrain operations on the seed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<Condition>,
    /// The last operation on the seed.
    pub last_operation: Option<LastOperation>,
}

impl SeedStatus {
    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}
