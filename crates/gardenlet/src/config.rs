//! gardenlet's configuration file.

use crate::components::Images;
use api::core::SeedSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GardenletConfig {
    /// The seed this gardenlet is responsible for.
    pub seed: SeedConfig,
    /// Kubeconfig of the garden cluster; absent: in-cluster configuration.
    #[serde(default)]
    pub garden_kubeconfig: Option<PathBuf>,
    /// Kubeconfig of the seed cluster; absent: the garden kubeconfig (garden and seed are the
    /// same cluster, as in local setups), or with `gardenClientConnection` the in-cluster
    /// configuration (`--kubeconfig`).
    #[serde(default)]
    pub seed_kubeconfig: Option<PathBuf>,
    /// The garden identity by CSR (Gardener's field names): a client certificate for user
    /// `gardener.cloud:system:seed:<seed>`, bootstrapped with `bootstrapKubeconfig` and kept in
    /// `kubeconfigSecret` in the seed (crate::bootstrap). Excludes `gardenKubeconfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub garden_client_connection: Option<GardenClientConnection>,
    #[serde(default)]
    pub controllers: ControllerSettings,
    #[serde(default)]
    pub images: Images,
    /// How kube-apiservers of shoots are exposed in this seed.
    #[serde(default = "default_service_type")]
    pub kube_apiserver_service_type: ServiceType,
    /// The share (in percent, 1 to 100) of the default resource requests that shoot control-plane
    /// components ask for: a small seed that hosts many idle control planes sets it lower, so
    /// that requests follow what the components use (docs/gardenlet.md).
    #[serde(default = "default_requests_percent")]
    pub control_plane_requests_percent: u32,
    /// The ExposureClass handlers this seed offers: a shoot whose ExposureClass names handler
    /// `name` gets that handler's settings on its kube-apiserver Service (docs/gardenlet.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exposure_class_handlers: Vec<ExposureClassHandler>,
    /// How this gardenlet deploys gardenlets into the shoots of ManagedSeeds it hosts.
    #[serde(default, skip_serializing_if = "ManagedSeedSettings::is_default")]
    pub managed_seeds: ManagedSeedSettings,
    /// How shoots' etcd is backed up when the seed has backups (docs/backup.md).
    #[serde(default)]
    pub etcd_backup: crate::components::etcd_backup::EtcdBackupSettings,
}

/// How gardenlet gets its garden identity by CSR (docs/gardenlet.md, "Garden identity").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GardenClientConnection {
    /// A kubeconfig file of an identity that may create `certificatesigningrequests/seedclient`
    /// named after the seed (and create and watch CSRs); used only to obtain the certificate.
    pub bootstrap_kubeconfig: PathBuf,
    /// The Secret in the seed cluster (key `kubeconfig`) that holds the certificate's kubeconfig.
    pub kubeconfig_secret: SecretRef,
}

/// A Secret by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

/// Settings of the ManagedSeed controller (docs/gardenlet.md, ManagedSeeds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ManagedSeedSettings {
    /// The garden's API server address as a gardenlet inside a shoot reaches it (Gardener's
    /// `gardenClientConnection.gardenClusterAddress`); absent: the address this gardenlet uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub garden_cluster_address: Option<String>,
    /// A PEM file with the CA that signed the garden's serving certificate; absent: the CA this
    /// gardenlet trusts the garden with.
    #[serde(rename = "gardenClusterCAFile", skip_serializing_if = "Option::is_none")]
    pub garden_cluster_ca_file: Option<PathBuf>,
    /// The image of the gardenlets deployed into managed seeds; absent:
    /// `gardener-rs.local/gardenlet:v<this gardenlet's version>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gardenlet_image: Option<String>,
    /// ManagedSeeds reconciled at once (default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrent_syncs: Option<u16>,
    /// Pod volumes (core/v1 Volume) every managed gardenlet gets, before the ManagedSeed's own
    /// `spec.gardenlet.deployment.additionalVolumes`: what the seeds' machines share with this
    /// one (the local garden's backup store, docs/migration.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub additional_volumes: Vec<serde_json::Value>,
    /// Their mounts (core/v1 VolumeMount) in the gardenlet container.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub additional_volume_mounts: Vec<serde_json::Value>,
}

impl ManagedSeedSettings {
    fn is_default(&self) -> bool {
        self == &Self::default()
    }

    /// The image of managed gardenlets.
    pub fn gardenlet_image(&self) -> String {
        self.gardenlet_image
            .clone()
            .unwrap_or_else(|| format!("gardener-rs.local/gardenlet:v{}", env!("CARGO_PKG_VERSION")))
    }

    pub fn concurrent_syncs(&self) -> u16 {
        self.concurrent_syncs.unwrap_or(2)
    }
}

/// How the API server is exposed: a LoadBalancer where the seed has a load-balancer
/// implementation, a ClusterIP otherwise (local seeds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum ServiceType {
    LoadBalancer,
    ClusterIP,
}

/// One ExposureClass handler, as in Gardener's gardenlet configuration, limited to what a seed
/// here can honour: the load-balancer Service's metadata. (Gardener's `sni` settings configure
/// an Istio ingress gateway, which this system does not have; they are refused at start.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExposureClassHandler {
    /// The handler name ExposureClasses refer to (`handler`).
    pub name: String,
    #[serde(default)]
    pub load_balancer_service: LoadBalancerServiceConfig,
    /// Accepted only to refuse it with a clear message (see [`GardenletConfig::validate`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sni: Option<serde_json::Value>,
}

/// Metadata added to the kube-apiserver Service of shoots using the handler.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoadBalancerServiceConfig {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

fn default_requests_percent() -> u32 {
    100
}

fn default_service_type() -> ServiceType {
    ServiceType::LoadBalancer
}

/// The Seed object gardenlet registers, and its resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeedConfig {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    pub spec: SeedSpec,
    /// How many shoots the seed can host.
    #[serde(default = "default_capacity")]
    pub capacity_shoots: i64,
    /// Shoots held back from scheduling (e.g. for the seed's own system shoots).
    #[serde(default)]
    pub reserved_shoots: i64,
}

fn default_capacity() -> i64 {
    SeedConfig::DEFAULT_CAPACITY
}

impl SeedConfig {
    /// Shoots a seed hosts when its configuration does not say.
    pub const DEFAULT_CAPACITY: i64 = 250;
}

/// Settings of gardenlet's controllers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ControllerSettings {
    /// How often the seed's status and heartbeat Lease are renewed, in seconds.
    pub seed_heartbeat_seconds: u64,
    /// Shoots reconciled at once.
    pub shoot_concurrent_syncs: u16,
    /// Regular resync of each shoot, in seconds (spread per shoot).
    pub shoot_sync_period_seconds: u64,
    /// How long failed operations are retried before the shoot is marked Failed, in seconds.
    pub shoot_retry_window_seconds: u64,
    /// ControllerInstallations reconciled at once.
    pub controller_installation_concurrent_syncs: u16,
    /// Bastions reconciled at once.
    pub bastion_concurrent_syncs: u16,
    /// How often the care controller refreshes every shoot's conditions, in seconds.
    pub shoot_care_period_seconds: u64,
    /// How long a failing condition is `Progressing` before it turns `False`, in seconds (0:
    /// `False` at once).
    pub shoot_care_threshold_seconds: u64,
    /// Shoots the care controller checks at once.
    pub shoot_care_concurrent_syncs: u16,
    /// How long the backups of a deleted shoot are kept (its garden BackupEntry stays until
    /// then), in seconds; Gardener's `backupEntry.deletionGracePeriodHours` (default 0: deleted
    /// with the shoot).
    pub backup_entry_deletion_grace_period_seconds: u64,
    /// Garden BackupEntries looked after at once.
    pub backup_entry_concurrent_syncs: u16,
}

impl Default for ControllerSettings {
    fn default() -> Self {
        Self {
            seed_heartbeat_seconds: 30,
            shoot_concurrent_syncs: 5,
            shoot_sync_period_seconds: 3600,
            shoot_retry_window_seconds: 12 * 3600,
            controller_installation_concurrent_syncs: 2,
            bastion_concurrent_syncs: 5,
            shoot_care_period_seconds: 60,
            shoot_care_threshold_seconds: 60,
            shoot_care_concurrent_syncs: 5,
            backup_entry_deletion_grace_period_seconds: 0,
            backup_entry_concurrent_syncs: 5,
        }
    }
}

impl ControllerSettings {
    pub fn seed_heartbeat(&self) -> Duration {
        Duration::from_secs(self.seed_heartbeat_seconds)
    }

    pub fn shoot_care_threshold(&self) -> Duration {
        Duration::from_secs(self.shoot_care_threshold_seconds)
    }

    pub fn backup_entry_deletion_grace_period(&self) -> Duration {
        Duration::from_secs(self.backup_entry_deletion_grace_period_seconds)
    }
}

/// Why the configuration file cannot be used (the runtime's, naming the file and the field).
pub use runtime::config::ConfigError;

impl runtime::config::ConfigFile for GardenletConfig {
    fn check(&self) -> Result<(), runtime::config::Invalid> {
        self.validate().map_err(Into::into)
    }
}

impl GardenletConfig {
    /// Reads and validates a YAML configuration file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        runtime::config::load(path)
    }

    /// Checks the values serde cannot: returns the offending field and the problem.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.seed.name.is_empty() {
            return Err(("seed.name", "must not be empty".into()));
        }
        if self.seed.capacity_shoots < 0 {
            return Err(("seed.capacityShoots", format!("must not be negative, is {}", self.seed.capacity_shoots)));
        }
        if self.seed.reserved_shoots < 0 || self.seed.reserved_shoots > self.seed.capacity_shoots {
            return Err((
                "seed.reservedShoots",
                format!(
                    "must be between 0 and capacityShoots ({}), is {}",
                    self.seed.capacity_shoots, self.seed.reserved_shoots
                ),
            ));
        }
        if self.controllers.seed_heartbeat_seconds == 0 {
            return Err(("controllers.seedHeartbeatSeconds", "must be at least 1".into()));
        }
        if self.controllers.shoot_concurrent_syncs == 0 {
            return Err(("controllers.shootConcurrentSyncs", "must be at least 1".into()));
        }
        if self.controllers.controller_installation_concurrent_syncs == 0 {
            return Err(("controllers.controllerInstallationConcurrentSyncs", "must be at least 1".into()));
        }
        if self.controllers.bastion_concurrent_syncs == 0 {
            return Err(("controllers.bastionConcurrentSyncs", "must be at least 1".into()));
        }
        if self.controllers.shoot_care_period_seconds == 0 {
            return Err(("controllers.shootCarePeriodSeconds", "must be at least 1".into()));
        }
        if self.controllers.shoot_care_concurrent_syncs == 0 {
            return Err(("controllers.shootCareConcurrentSyncs", "must be at least 1".into()));
        }
        let mut handler_names = std::collections::BTreeSet::new();
        for (i, h) in self.exposure_class_handlers.iter().enumerate() {
            if h.name.is_empty() {
                return Err(("exposureClassHandlers", format!("[{i}].name must not be empty")));
            }
            if !handler_names.insert(h.name.as_str()) {
                return Err(("exposureClassHandlers", format!("[{i}].name {:?} is given twice", h.name)));
            }
            if h.sni.is_some() {
                return Err((
                    "exposureClassHandlers",
                    format!(
                        "[{i}] ({}): sni is not supported (there is no SNI ingress gateway in this system); use loadBalancerService",
                        h.name
                    ),
                ));
            }
        }
        if let Some(conn) = &self.garden_client_connection {
            if self.garden_kubeconfig.is_some() {
                return Err((
                    "gardenClientConnection",
                    "excludes gardenKubeconfig (the garden client is the bootstrapped certificate)".into(),
                ));
            }
            if conn.bootstrap_kubeconfig.as_os_str().is_empty() {
                return Err(("gardenClientConnection.bootstrapKubeconfig", "must not be empty".into()));
            }
            if conn.kubeconfig_secret.namespace.is_empty() || conn.kubeconfig_secret.name.is_empty() {
                return Err(("gardenClientConnection.kubeconfigSecret", "needs a namespace and a name".into()));
            }
        }
        if self.managed_seeds.concurrent_syncs == Some(0) {
            return Err(("managedSeeds.concurrentSyncs", "must be at least 1".into()));
        }
        if let Some((field, problem)) = self.etcd_backup.problem() {
            return Err((field, problem));
        }
        if !(1..=100).contains(&self.control_plane_requests_percent) {
            return Err((
                "controlPlaneRequestsPercent",
                format!("must be between 1 and 100, is {}", self.control_plane_requests_percent),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "seed:\n  name: local\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n";

    #[test]
    fn minimal_file_gets_defaults() {
        let c: GardenletConfig = serde_yaml::from_str(MINIMAL).unwrap();
        c.validate().unwrap();
        assert_eq!(c.seed.capacity_shoots, 250);
        assert_eq!(c.controllers.seed_heartbeat(), Duration::from_secs(30));
        assert_eq!(c.kube_apiserver_service_type, ServiceType::LoadBalancer);
        assert_eq!(c.control_plane_requests_percent, 100);
        assert!(c.exposure_class_handlers.is_empty());
    }

    #[test]
    fn exposure_class_handlers() {
        let text = format!(
            "{MINIMAL}exposureClassHandlers:\n- name: internet\n  loadBalancerService:\n    annotations: {{lb.example/zone: public}}\n    labels: {{exposure: internet}}\n- name: internal\n"
        );
        let c: GardenletConfig = serde_yaml::from_str(&text).unwrap();
        c.validate().unwrap();
        assert_eq!(c.exposure_class_handlers[0].load_balancer_service.annotations["lb.example/zone"], "public");
        assert_eq!(c.exposure_class_handlers[1].load_balancer_service, LoadBalancerServiceConfig::default());
        let typo = format!("{MINIMAL}exposureClassHandlers:\n- name: x\n  loadBalancerServise: {{}}\n");
        let err = serde_yaml::from_str::<GardenletConfig>(&typo).unwrap_err().to_string();
        assert!(err.contains("loadBalancerServise"), "{err}");
    }

    #[test]
    fn bad_values_name_the_field() {
        let mut c: GardenletConfig = serde_yaml::from_str(MINIMAL).unwrap();
        c.seed.reserved_shoots = 300;
        let (field, problem) = c.validate().unwrap_err();
        assert_eq!(field, "seed.reservedShoots");
        assert!(problem.contains("between 0 and capacityShoots (250)"), "{problem}");
        let mut c: GardenletConfig = serde_yaml::from_str(MINIMAL).unwrap();
        c.control_plane_requests_percent = 0;
        assert_eq!(c.validate().unwrap_err().0, "controlPlaneRequestsPercent");
        for (handlers, want) in [
            ("- name: a\n- name: a\n", "[1].name \"a\" is given twice"),
            ("- name: ''\n", "[0].name must not be empty"),
            ("- name: a\n  sni: {ingress: {namespace: istio}}\n", "[0] (a): sni is not supported"),
        ] {
            let c: GardenletConfig =
                serde_yaml::from_str(&format!("{MINIMAL}exposureClassHandlers:\n{handlers}")).unwrap();
            let (field, problem) = c.validate().unwrap_err();
            assert_eq!(field, "exposureClassHandlers");
            assert!(problem.starts_with(want), "{problem}");
        }
        let connection = "gardenClientConnection:\n  bootstrapKubeconfig: /etc/gardenlet/bootstrap/kubeconfig\n  kubeconfigSecret: {namespace: garden, name: gardenlet-kubeconfig}\n";
        let c: GardenletConfig = serde_yaml::from_str(&format!("{MINIMAL}{connection}")).unwrap();
        c.validate().unwrap();
        let conn = c.garden_client_connection.as_ref().unwrap();
        assert_eq!(
            conn.kubeconfig_secret,
            SecretRef { namespace: "garden".into(), name: "gardenlet-kubeconfig".into() }
        );
        let both: GardenletConfig =
            serde_yaml::from_str(&format!("{MINIMAL}{connection}gardenKubeconfig: /g\n")).unwrap();
        assert_eq!(both.validate().unwrap_err().0, "gardenClientConnection");
        let no_name: GardenletConfig = serde_yaml::from_str(&format!(
            "{MINIMAL}gardenClientConnection:\n  bootstrapKubeconfig: /b\n  kubeconfigSecret: {{namespace: garden, name: ''}}\n"
        ))
        .unwrap();
        assert_eq!(no_name.validate().unwrap_err().0, "gardenClientConnection.kubeconfigSecret");
        let unknown = format!("{MINIMAL}seedNmae: typo\n");
        let err = serde_yaml::from_str::<GardenletConfig>(&unknown).unwrap_err().to_string();
        assert!(err.contains("seedNmae"), "{err}");
    }

    /// The chart's values schema refuses unknown keys under `config.controllers`: every setting
    /// gardenlet reads there must be in it, or operators cannot set it with Helm.
    #[test]
    fn the_chart_schema_offers_every_controller_setting() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../charts/gardener/gardenlet/values.schema.json");
        let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let offered = &schema["properties"]["config"]["properties"]["controllers"]["properties"];
        let settings = serde_json::to_value(ControllerSettings::default()).unwrap();
        let missing: Vec<&String> =
            settings.as_object().unwrap().keys().filter(|k| offered.get(k.as_str()).is_none()).collect();
        assert!(missing.is_empty(), "{path} lacks config.controllers.{missing:?}");
    }
}
