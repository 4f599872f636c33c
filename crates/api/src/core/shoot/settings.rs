//! The smaller parts of a Shoot's spec: addons, DNS, hibernation, maintenance, networking,
//! monitoring, system components and control plane settings.

pub use crate::core::shared::DnsIncludeExclude;
use crate::core::shared::{ExternalTrafficPolicy, IpFamily};
use crate::opaque::Opaque;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Addons the system deploys into a shoot.
///
/// The reference API spells the keys `kubernetesDashboard`/`nginxIngress`; the GEP-15 example
/// `kubernetes-dashboard`/`nginx-ingress`. Both are accepted and kept as written; use
/// [`Addons::kubernetes_dashboard`] and [`Addons::nginx_ingress`] to read either.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Addons {
    /// The Kubernetes dashboard.
    #[serde(rename = "kubernetesDashboard")]
    pub kubernetes_dashboard: Option<KubernetesDashboard>,
    /// The nginx ingress controller.
    #[serde(rename = "nginxIngress")]
    pub nginx_ingress: Option<NginxIngress>,
    /// Legacy (GEP-15 example) spelling of `kubernetesDashboard`.
    #[serde(rename = "kubernetes-dashboard")]
    pub kubernetes_dashboard_legacy: Option<KubernetesDashboard>,
    /// Legacy (GEP-15 example) spelling of `nginxIngress`.
    #[serde(rename = "nginx-ingress")]
    pub nginx_ingress_legacy: Option<NginxIngress>,
}

impl Addons {
    /// The dashboard settings, whichever spelling was used.
    pub fn kubernetes_dashboard(&self) -> Option<&KubernetesDashboard> {
        self.kubernetes_dashboard.as_ref().or(self.kubernetes_dashboard_legacy.as_ref())
    }

    /// The nginx ingress settings, whichever spelling was used.
    pub fn nginx_ingress(&self) -> Option<&NginxIngress> {
        self.nginx_ingress.as_ref().or(self.nginx_ingress_legacy.as_ref())
    }
}

/// The Kubernetes dashboard addon.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesDashboard {
    /// Whether the addon is deployed.
    pub enabled: bool,
    /// The dashboard's authentication mode (`token`; legacy `basic`).
    pub authentication_mode: Option<String>,
}

/// The nginx ingress addon.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NginxIngress {
    /// Whether the addon is deployed.
    pub enabled: bool,
    /// Source ranges allowed to reach the ingress load balancer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_balancer_source_ranges: Vec<String>,
    /// nginx-ingress-controller configuration.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, String>,
    /// The external traffic policy of the ingress service.
    pub external_traffic_policy: Option<ExternalTrafficPolicy>,
}

/// DNS settings of a shoot.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dns {
    /// The shoot's external domain, used in the kubeconfigs handed out. Immutable.
    pub domain: Option<String>,
    /// DNS providers for the shoot's domains (needed when not using a default domain).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<DnsProvider>,
}

/// A DNS provider of a shoot.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DnsProvider {
    /// Domains to include or exclude.
    pub domains: Option<DnsIncludeExclude>,
    /// Whether this provider serves the shoot's own domain.
    pub primary: Option<bool>,
    /// A Secret in the project namespace with the provider credentials.
    pub secret_name: Option<String>,
    /// The provider type (for example `aws-route53`).
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// Hosted zones to include or exclude.
    pub zones: Option<DnsIncludeExclude>,
}

/// Whether and when a shoot is hibernated.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hibernation {
    /// Whether the shoot should be hibernated now.
    pub enabled: Option<bool>,
    /// Cron schedules that set `enabled`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<HibernationSchedule>,
}

/// A hibernation schedule: hibernate at `start`, wake up at `end` (at least one of them).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HibernationSchedule {
    /// Cron spec of the hibernation times.
    pub start: Option<String>,
    /// Cron spec of the wake-up times.
    pub end: Option<String>,
    /// Time zone location the cron specs are evaluated in (for example `Europe/Berlin`).
    pub location: Option<String>,
}

/// Networking of a shoot.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Networking {
    /// The network plugin type (for example `calico`). Immutable.
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// Configuration of the network plugin.
    pub provider_config: Option<Opaque>,
    /// CIDR of the pod network. Immutable.
    pub pods: Option<String>,
    /// CIDR of the node network.
    pub nodes: Option<String>,
    /// CIDR of the service network. Immutable.
    pub services: Option<String>,
    /// IP families of the networks. Immutable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_families: Vec<IpFamily>,
}

/// Maintenance time window and automatic updates of a shoot.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Maintenance {
    /// Which versions are updated automatically.
    pub auto_update: Option<MaintenanceAutoUpdate>,
    /// The daily maintenance time window.
    pub time_window: Option<MaintenanceTimeWindow>,
    /// Whether spec changes wait for the maintenance window (hibernation changes excepted).
    pub confine_spec_update_rollout: Option<bool>,
}

/// Which versions are updated automatically during maintenance.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceAutoUpdate {
    /// Whether the Kubernetes patch version is updated (default true).
    pub kubernetes_version: bool,
    /// Whether machine image versions are updated (default true).
    pub machine_image_version: Option<bool>,
}

/// A daily time window, `HHMMSS+ZZZZ` (for example `220000+0100`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceTimeWindow {
    /// Start of the window.
    pub begin: String,
    /// End of the window.
    pub end: String,
}

/// Monitoring settings of a shoot.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Monitoring {
    /// Who receives alerts.
    pub alerting: Option<Alerting>,
}

/// Who receives a shoot's alerts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Alerting {
    /// E-mail recipients of alerts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub email_receivers: Vec<String>,
}

/// Settings of system components in a shoot.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemComponents {
    /// CoreDNS settings.
    #[serde(rename = "coreDNS")]
    pub core_dns: Option<CoreDns>,
    /// Node-local DNS settings.
    #[serde(rename = "nodeLocalDNS")]
    pub node_local_dns: Option<NodeLocalDns>,
}

/// CoreDNS settings.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoreDns {
    /// How CoreDNS is scaled.
    pub autoscaling: Option<CoreDnsAutoscaling>,
    /// Rewriting of queries that wrongly had the search path applied.
    pub rewriting: Option<CoreDnsRewriting>,
}

/// How CoreDNS is scaled.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoreDnsAutoscaling {
    pub mode: CoreDnsAutoscalingMode,
}

/// A CoreDNS autoscaling mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CoreDnsAutoscalingMode {
    #[default]
    Horizontal,
    ClusterProportional,
}

/// Rewriting of DNS queries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoreDnsRewriting {
    /// Suffixes of fully qualified names to rewrite.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub common_suffixes: Vec<String>,
}

/// Node-local DNS settings.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeLocalDns {
    /// Whether node-local DNS is deployed.
    pub enabled: bool,
    #[serde(rename = "forceTCPToClusterDNS")]
    pub force_tcp_to_cluster_dns: Option<bool>,
    #[serde(rename = "forceTCPToUpstreamDNS")]
    pub force_tcp_to_upstream_dns: Option<bool>,
    #[serde(rename = "disableForwardToUpstreamDNS")]
    pub disable_forward_to_upstream_dns: Option<bool>,
}

/// General control plane settings of a shoot.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlane {
    /// High availability of the control plane.
    pub high_availability: Option<HighAvailability>,
}

/// High availability of a control plane.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HighAvailability {
    /// Which failures the control plane tolerates.
    pub failure_tolerance: FailureTolerance,
}

/// Which failures a control plane tolerates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailureTolerance {
    /// `node` or `zone`.
    #[serde(rename = "type")]
    pub type_: FailureToleranceType,
}

/// The failure domain a control plane tolerates losing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FailureToleranceType {
    #[default]
    Node,
    Zone,
}
