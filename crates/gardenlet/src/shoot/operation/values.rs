//! Everything gardenlet derives from a Shoot (and its Seed) before touching a cluster: the
//! technical ID, domains, networks, the service IP, and the inputs of the PKI and the
//! control-plane builders. Pure.

use crate::components::common::{ControllerManagerSettings, SchedulerSettings};
use crate::components::{ApiServerSettings, ControlPlaneValues, Images};
use api::core::shoot::kubernetes::KubeApiServerConfig;
use api::core::shoot::kubernetes::{KubeControllerManagerConfig, KubeSchedulerConfig, SchedulingProfile};
use api::core::{Seed, Shoot};
use api::helpers::names::{NameError, TechnicalId, project_of_namespace};
use ipnet::IpNet;
use std::net::IpAddr;

/// A shoot's values that every task needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ShootValues {
    pub name: String,
    pub project: String,
    /// The garden namespace of the shoot (`garden-<project>`).
    pub garden_namespace: String,
    pub technical_id: TechnicalId,
    pub kubernetes_version: String,
    pub provider_type: String,
    pub region: String,
    pub pods: Option<IpNet>,
    pub services: IpNet,
    pub nodes: Option<IpNet>,
    /// The shoot has worker pools (a workerless shoot has no nodes to tunnel to).
    pub workers: bool,
    /// The first address of the service range: the in-cluster `kubernetes` Service.
    pub service_ip: IpAddr,
    /// `api.<name>.<project>.internal.<seed ingress domain>`.
    pub internal_domain: String,
    /// `api.<spec.dns.domain>` when the shoot has a domain.
    pub external_domain: Option<String>,
    pub hibernated: bool,
    /// The beginning of the maintenance window, in seconds of the UTC day (the daily full etcd
    /// snapshot is taken then).
    pub maintenance_begin: Option<i64>,
    pub apiserver: ApiServerSettings,
    /// `spec.kubernetes.kubeControllerManager` ([`controller_manager_settings`]).
    pub controller_manager: ControllerManagerSettings,
    /// `spec.kubernetes.kubeScheduler` ([`scheduler_settings`]).
    pub scheduler: SchedulerSettings,
    /// `spec.controlPlane.highAvailability.failureTolerance.type`.
    pub failure_tolerance: Option<crate::components::common::FailureToleranceType>,
}

/// The kube-controller-manager settings of `spec.kubernetes.kubeControllerManager` (admission
/// refused `podEvictionTimeout` and the pre-1.12 autoscaler delays).
pub fn controller_manager_settings(k: Option<&KubeControllerManagerConfig>) -> ControllerManagerSettings {
    let Some(k) = k else { return ControllerManagerSettings::default() };
    ControllerManagerSettings {
        node_cidr_mask_size: k.node_cidr_mask_size,
        horizontal_pod_autoscaler: k.horizontal_pod_autoscaler.clone().unwrap_or_default(),
        node_monitor_grace_period: k.node_monitor_grace_period.clone(),
        feature_gates: k.feature_gates.clone(),
    }
}

/// The kube-scheduler settings of `spec.kubernetes.kubeScheduler`.
pub fn scheduler_settings(k: Option<&KubeSchedulerConfig>) -> SchedulerSettings {
    let Some(k) = k else { return SchedulerSettings::default() };
    SchedulerSettings {
        bin_packing: k.profile == Some(SchedulingProfile::BinPacking),
        kube_max_pd_vols: k.kube_max_pd_vols.clone(),
        feature_gates: k.feature_gates.clone(),
    }
}

/// Why a Shoot cannot be turned into values. Each names the field.
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    #[error("shoot {shoot}: metadata.namespace {namespace:?} is not a project namespace (garden-<project>)")]
    NotAProjectNamespace { shoot: String, namespace: String },
    #[error("shoot {shoot}: {source}")]
    Name {
        shoot: String,
        #[source]
        source: NameError,
    },
    #[error("shoot {shoot}: {field} {value:?} is not a CIDR: {problem}")]
    Cidr { shoot: String, field: &'static str, value: String, problem: String },
    #[error("shoot {shoot}: {field} is required")]
    Missing { shoot: String, field: &'static str },
    #[error("shoot {shoot}: {field}: {problem}")]
    Invalid { shoot: String, field: String, problem: String },
}

/// A plugin's `config` as the object the AdmissionConfiguration embeds: an object as is, a
/// string parsed as YAML (the GEP-15 example writes it so).
fn plugin_config(config: &serde_json::Value) -> Result<serde_json::Value, String> {
    match config {
        serde_json::Value::String(text) => serde_yaml::from_str(text).map_err(|e| format!("not YAML: {e}")),
        other => Ok(other.clone()),
    }
}

/// The kube-apiserver settings of `spec.kubernetes.kubeAPIServer`: plugins split into enabled
/// and disabled (`disabled: true`), their configurations, and the flag-shaped settings as
/// they are. The audit policy itself is read from the garden by the reconcile flow.
pub fn apiserver_settings(shoot: &str, k: &KubeApiServerConfig) -> Result<ApiServerSettings, ValuesError> {
    let mut out = ApiServerSettings {
        feature_gates: k.feature_gates.clone(),
        runtime_config: k.runtime_config.clone(),
        anonymous_auth: k.enable_anonymous_authentication,
        api_audiences: k.api_audiences.clone(),
        event_ttl: k.event_ttl.clone(),
        requests: k.requests.clone().unwrap_or_default(),
        watch_cache_sizes: k.watch_cache_sizes.clone().unwrap_or_default(),
        logging: k.logging.clone().unwrap_or_default(),
        default_not_ready_toleration_seconds: k.default_not_ready_toleration_seconds,
        default_unreachable_toleration_seconds: k.default_unreachable_toleration_seconds,
        oidc: k.oidc_config.clone(),
        service_account: k.service_account_config.clone().unwrap_or_default(),
        audit_policy_config_map: k
            .audit_config
            .as_ref()
            .and_then(|a| a.audit_policy.as_ref())
            .and_then(|p| p.config_map_ref.as_ref())
            .map(|r| r.name.clone())
            .filter(|n| !n.is_empty()),
        encrypted_resources: k.encryption_config.as_ref().map(|e| e.resources.clone()).unwrap_or_default(),
        ..Default::default()
    };
    for (i, plugin) in k.admission_plugins.iter().enumerate() {
        if plugin.disabled == Some(true) {
            if !out.disabled_admission_plugins.contains(&plugin.name) {
                out.disabled_admission_plugins.push(plugin.name.clone());
            }
            continue;
        }
        if !out.admission_plugins.contains(&plugin.name) {
            out.admission_plugins.push(plugin.name.clone());
        }
        if let Some(config) = &plugin.config {
            let config = plugin_config(&config.0).map_err(|problem| ValuesError::Invalid {
                shoot: shoot.to_string(),
                field: format!("spec.kubernetes.kubeAPIServer.admissionPlugins[{i}].config"),
                problem,
            })?;
            out.admission_plugin_configs.insert(plugin.name.clone(), config);
        }
    }
    Ok(out)
}

const DEFAULT_INTERNAL_SUFFIX: &str = "internal.local";

fn cidr(shoot: &str, field: &'static str, value: &str) -> Result<IpNet, ValuesError> {
    value.parse::<IpNet>().map_err(|e| ValuesError::Cidr {
        shoot: shoot.to_string(),
        field,
        value: value.to_string(),
        problem: e.to_string(),
    })
}

/// The first usable address of a range (network address + 1).
pub fn first_address(net: &IpNet) -> IpAddr {
    match net.network() {
        IpAddr::V4(v4) => IpAddr::V4(std::net::Ipv4Addr::from(u32::from(v4).wrapping_add(1))),
        IpAddr::V6(v6) => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6).wrapping_add(1))),
    }
}

impl ShootValues {
    /// Derives the values; the Seed provides the internal domain suffix and default networks.
    pub fn new(shoot: &Shoot, seed: Option<&Seed>) -> Result<Self, ValuesError> {
        let name = shoot.metadata.name.clone().unwrap_or_default();
        let namespace = shoot.metadata.namespace.clone().unwrap_or_default();
        let project = project_of_namespace(&namespace)
            .ok_or_else(|| ValuesError::NotAProjectNamespace { shoot: name.clone(), namespace: namespace.clone() })?
            .to_string();
        let technical_id =
            TechnicalId::new(&project, &name).map_err(|source| ValuesError::Name { shoot: name.clone(), source })?;
        let networking = shoot.spec.networking.clone().unwrap_or_default();
        let seed_defaults = seed.and_then(|s| s.spec.networks.shoot_defaults.clone());
        let services_text = networking
            .services
            .clone()
            .or_else(|| seed_defaults.as_ref().and_then(|d| d.services.clone()))
            .ok_or(ValuesError::Missing { shoot: name.clone(), field: "spec.networking.services" })?;
        let services = cidr(&name, "spec.networking.services", &services_text)?;
        let pods_text = networking.pods.clone().or_else(|| seed_defaults.as_ref().and_then(|d| d.pods.clone()));
        let pods = pods_text.map(|p| cidr(&name, "spec.networking.pods", &p)).transpose()?;
        let nodes = networking.nodes.as_deref().map(|n| cidr(&name, "spec.networking.nodes", n)).transpose()?;
        let suffix = seed
            .and_then(|s| s.spec.ingress_domain())
            .map(|d| format!("internal.{d}"))
            .unwrap_or_else(|| DEFAULT_INTERNAL_SUFFIX.to_string());
        let kube_apiserver = shoot.spec.kubernetes.kube_api_server.clone().unwrap_or_default();
        Ok(Self {
            garden_namespace: namespace,
            technical_id,
            kubernetes_version: shoot.spec.kubernetes.version.clone(),
            provider_type: shoot.spec.provider.type_.clone(),
            region: shoot.spec.region.clone(),
            service_ip: first_address(&services),
            pods,
            services,
            nodes,
            workers: !shoot.spec.provider.workers.is_empty(),
            internal_domain: format!("api.{name}.{project}.{suffix}"),
            external_domain: shoot.spec.dns.as_ref().and_then(|d| d.domain.as_ref()).map(|d| format!("api.{d}")),
            hibernated: shoot.spec.hibernation_enabled(),
            maintenance_begin: shoot
                .spec
                .maintenance
                .as_ref()
                .and_then(|m| m.time_window.as_ref())
                .and_then(|w| api::helpers::maintenance::utc_seconds_of_day(&w.begin)),
            apiserver: ApiServerSettings {
                encryption_provider: api::helpers::encryption::wanted(shoot).to_string(),
                previous_encryption_provider: api::helpers::encryption::previous(shoot).to_string(),
                ..apiserver_settings(&name, &kube_apiserver)?
            },
            controller_manager: controller_manager_settings(shoot.spec.kubernetes.kube_controller_manager.as_ref()),
            scheduler: scheduler_settings(shoot.spec.kubernetes.kube_scheduler.as_ref()),
            failure_tolerance: shoot
                .spec
                .control_plane
                .as_ref()
                .and_then(|c| c.high_availability.as_ref())
                .map(|h| h.failure_tolerance.type_),
            name,
            project,
        })
    }

    /// The seed namespace of the shoot's control plane.
    pub fn namespace(&self) -> &str {
        self.technical_id.as_str()
    }

    /// The host clients use: the external domain when there is one.
    pub fn advertised_host(&self) -> &str {
        self.external_domain.as_deref().unwrap_or(&self.internal_domain)
    }

    /// PKI inputs; `service_address` (the kube-apiserver Service's address in the seed) becomes
    /// a SAN and the server of the admin kubeconfig.
    pub fn pki_inputs(&self, service_address: Option<&str>) -> pki::shoot_set::ShootInputs {
        let mut inputs = pki::shoot_set::ShootInputs::new(self.namespace(), &self.internal_domain, self.service_ip);
        inputs.external_domain = self.external_domain.clone();
        if let Some(address) = service_address {
            inputs.extra_sans.push(address.to_string());
            inputs.admin_server = Some(format!("https://{address}"));
        }
        inputs
    }

    /// Values of the control-plane builders.
    pub fn control_plane(&self, images: &Images, running: bool, requests_percent: u32) -> ControlPlaneValues {
        let up = i32::from(running && !self.hibernated);
        let replicas =
            up * if self.failure_tolerance.is_some() { crate::components::availability::HA_REPLICAS } else { 1 };
        let mut values = ControlPlaneValues {
            namespace: self.namespace().to_string(),
            kubernetes_version: self.kubernetes_version.clone(),
            replicas,
            etcd_replicas: up,
            failure_tolerance: self.failure_tolerance,
            service_cidr: self.services.to_string(),
            pod_cidr: self.pods.map(|p| p.to_string()),
            tunnel: self.workers,
            cluster_domain: "cluster.local".to_string(),
            advertised_host: self.advertised_host().to_string(),
            images: images.clone(),
            owner: None,
            apiserver: self.apiserver.clone(),
            controller_manager: self.controller_manager.clone(),
            scheduler: self.scheduler.clone(),
            secret_checksums: Default::default(),
            etcd_backup: None,
            etcd_defragmentation_schedule: crate::components::etcd_backup::defragmentation_schedule(
                self.maintenance_begin,
            ),
            requests_percent,
        };
        values.etcd_replicas = up * values.etcd_members();
        values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shoot(yaml: &str) -> Shoot {
        serde_yaml::from_str(yaml).unwrap()
    }

    const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: demo\n  namespace: garden-dev\nspec:\n  region: local\n  provider:\n    type: local\n  kubernetes:\n    version: 1.20.2\n  networking:\n    pods: 10.96.0.0/11\n    services: 10.112.0.0/13\n  dns:\n    domain: demo.dev.example.com\n";

    #[test]
    fn derives_ids_domains_and_networks() {
        let v = ShootValues::new(&shoot(SHOOT), None).unwrap();
        assert_eq!(v.namespace(), "shoot--dev--demo");
        assert_eq!(v.project, "dev");
        assert_eq!(v.service_ip.to_string(), "10.112.0.1");
        assert_eq!(v.internal_domain, "api.demo.dev.internal.local");
        assert_eq!(v.advertised_host(), "api.demo.dev.example.com");
        let inputs = v.pki_inputs(Some("127.0.0.9"));
        assert!(inputs.kube_apiserver_sans().contains(&"127.0.0.9".to_string()));
        assert_eq!(inputs.admin_server(), "https://127.0.0.9");
        assert_eq!(v.control_plane(&Images::default(), true, 100).replicas, 1);
    }

    #[test]
    fn hibernation_scales_to_zero() {
        let mut s = shoot(SHOOT);
        s.spec.hibernation = Some(serde_json::from_value(serde_json::json!({"enabled": true})).unwrap());
        let v = ShootValues::new(&s, None).unwrap();
        assert_eq!(v.control_plane(&Images::default(), true, 100).replicas, 0);
    }

    #[test]
    fn a_failure_tolerance_gives_etcd_three_members_and_hibernation_none() {
        let mut s = shoot(SHOOT);
        s.spec.control_plane = Some(
            serde_json::from_value(serde_json::json!({"highAvailability": {"failureTolerance": {"type": "zone"}}}))
                .unwrap(),
        );
        let v = ShootValues::new(&s, None).unwrap();
        let running = v.control_plane(&Images::default(), true, 100);
        assert_eq!(running.failure_tolerance, Some(crate::components::common::FailureToleranceType::Zone));
        assert_eq!((running.etcd_members(), running.etcd_replicas, running.replicas), (3, 3, 2));
        s.spec.hibernation = Some(serde_json::from_value(serde_json::json!({"enabled": true})).unwrap());
        let hibernated = ShootValues::new(&s, None).unwrap().control_plane(&Images::default(), true, 100);
        assert_eq!((hibernated.etcd_members(), hibernated.etcd_replicas, hibernated.replicas), (3, 0, 0));
        let plain = ShootValues::new(&shoot(SHOOT), None).unwrap().control_plane(&Images::default(), true, 100);
        assert_eq!((plain.etcd_members(), plain.etcd_replicas, plain.replicas), (1, 1, 1));
    }

    #[test]
    fn bad_input_names_the_field() {
        let s = shoot(&SHOOT.replace("10.112.0.0/13", "10.112.0.0/99"));
        let err = ShootValues::new(&s, None).unwrap_err().to_string();
        assert!(err.starts_with("shoot demo: spec.networking.services \"10.112.0.0/99\" is not a CIDR"), "{err}");
        let s = shoot(&SHOOT.replace("garden-dev", "default"));
        let err = ShootValues::new(&s, None).unwrap_err().to_string();
        assert!(err.contains("not a project namespace"), "{err}");
        let s = shoot(&SHOOT.replace("    services: 10.112.0.0/13\n", ""));
        let err = ShootValues::new(&s, None).unwrap_err().to_string();
        assert_eq!(err, "shoot demo: spec.networking.services is required");
    }

    #[test]
    fn component_settings_reach_the_control_plane_values() {
        let yaml = SHOOT.replace(
            "    version: 1.20.2\n",
            "    version: 1.20.2\n    kubeControllerManager:\n      nodeCIDRMaskSize: 25\n      nodeMonitorGracePeriod: 50s\n      featureGates:\n        HPAScaleToZero: true\n      horizontalPodAutoscaler:\n        tolerance: 0.3\n        syncPeriod: 20s\n    kubeScheduler:\n      profile: bin-packing\n      kubeMaxPDVols: \"30\"\n",
        );
        let v = ShootValues::new(&shoot(&yaml), None).unwrap().control_plane(&Images::default(), true, 100);
        let kcm = &v.controller_manager;
        assert_eq!(kcm.node_cidr_mask_size, Some(25));
        assert_eq!(kcm.node_monitor_grace_period.as_deref(), Some("50s"));
        assert_eq!(kcm.feature_gates.get("HPAScaleToZero"), Some(&true));
        assert_eq!(kcm.horizontal_pod_autoscaler.tolerance, Some(0.3));
        assert_eq!(kcm.horizontal_pod_autoscaler.sync_period.as_deref(), Some("20s"));
        assert!(v.scheduler.bin_packing);
        assert_eq!(v.scheduler.kube_max_pd_vols.as_deref(), Some("30"));
        let plain = ShootValues::new(&shoot(SHOOT), None).unwrap().control_plane(&Images::default(), true, 100);
        assert_eq!(plain.controller_manager, ControllerManagerSettings::default());
        assert_eq!(plain.scheduler, SchedulerSettings::default());
    }

    #[test]
    fn first_address_of_v4_and_v6_ranges() {
        assert_eq!(first_address(&"10.0.0.0/24".parse().unwrap()).to_string(), "10.0.0.1");
        assert_eq!(first_address(&"fd00::/108".parse().unwrap()).to_string(), "fd00::1");
    }
}
