//! The controller-manager's configuration file (YAML or JSON): per controller its concurrency
//! and time limits, and where `/healthz`, `/readyz` and `/metrics` listen. Unknown fields are
//! refused, and every value is checked at startup; an error names the file and the field.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// The whole file. An empty file is the default configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// Address of `/healthz`, `/readyz` and `/metrics`; `--metrics-bind-address` wins.
    #[serde(default = "default_bind_address")]
    pub bind_address: SocketAddr,
    #[serde(default)]
    pub controllers: Controllers,
    /// The admission webhooks this process serves (on every replica).
    #[serde(default)]
    pub admission: AdmissionConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bind_address: default_bind_address(),
            controllers: Controllers::default(),
            admission: AdmissionConfig::default(),
        }
    }
}

/// The admission webhook server (docs/admission.md). Off unless enabled: it needs a Service
/// through which the API server reaches the pods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AdmissionConfig {
    pub enabled: bool,
    /// The Service in front of the webhook port (port 443), in `namespace`; the serving
    /// certificate is issued for its names and kept in Secret `<serviceName>-tls` there.
    pub service_name: String,
    pub namespace: String,
    /// Where the webhook server listens (HTTPS).
    pub bind_address: SocketAddr,
    /// Lifetime of the webhook CA and certificate; replaced after two thirds of it.
    pub certificate_validity_seconds: u64,
    /// The ClusterRole that owns the webhook configurations and the certificate Secret (the
    /// deployment's own), so they are removed with it; none when empty.
    pub owner: Option<String>,
    /// Who may set or change a Shoot's `spec.seedName`.
    pub rules: admission::review::RulesConfig,
    /// A CA of the operator's that signs the serving certificates (mounted from a Secret), for
    /// the garden kube-apiserver's authorization webhook, which reads its CA once; none: the
    /// server makes and rotates its own CA.
    pub signing_ca: Option<admission::server::CaFiles>,
    /// Further names or addresses in the serving certificate (the node address of the NodePort).
    pub extra_hosts: Vec<String>,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        let defaults = admission::server::ServerConfig::in_cluster("garden", "gardener-admission");
        Self {
            enabled: false,
            service_name: "gardener-admission".into(),
            namespace: "garden".into(),
            bind_address: defaults.bind_address,
            certificate_validity_seconds: defaults.certificate_validity.as_secs(),
            owner: None,
            rules: defaults.rules,
            signing_ca: None,
            extra_hosts: Vec::new(),
        }
    }
}

impl AdmissionConfig {
    /// The webhook server's settings.
    pub fn server(&self) -> admission::server::ServerConfig {
        let mut server = admission::server::ServerConfig::in_cluster(&self.namespace, &self.service_name);
        server.bind_address = self.bind_address;
        server.certificate_validity = Duration::from_secs(self.certificate_validity_seconds);
        server.rules = self.rules.clone();
        server.owner = self.owner.clone();
        server.signing_ca = self.signing_ca.clone();
        server.hosts.extend(self.extra_hosts.iter().cloned());
        server
    }
}

fn default_bind_address() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 10258))
}

/// Settings per controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Controllers {
    pub project: ProjectConfig,
    pub seed_lifecycle: SeedLifecycleConfig,
    pub bastion: BastionConfig,
    pub admin_kubeconfig: AdminKubeconfigConfig,
    pub shoot_hibernation: HibernationConfig,
    pub protection: ProtectionConfig,
    pub shoot_maintenance: MaintenanceConfig,
    pub controller_installation: InstallationConfig,
    pub namespaced_cloud_profile: NamespacedCloudProfileConfig,
    pub shoot_seed_labels: ShootSeedLabelsConfig,
    pub managed_seed_set: ManagedSeedSetConfig,
    pub certificate_signing_request: CsrConfig,
}

/// The CSR approver of seed client certificates (docs/controller-manager.md). On by default:
/// gardenlets that bootstrap by CSR wait for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CsrConfig {
    pub enabled: bool,
    /// CSRs decided at once.
    pub concurrent_syncs: u16,
}

impl Default for CsrConfig {
    fn default() -> Self {
        Self { enabled: true, concurrent_syncs: 5 }
    }
}

/// The ManagedSeedSet controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ManagedSeedSetConfig {
    /// Sets reconciled at once.
    pub concurrent_syncs: u16,
}

impl Default for ManagedSeedSetConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5 }
    }
}

/// The shoot seed-label controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ShootSeedLabelsConfig {
    /// Shoots labelled at once.
    pub concurrent_syncs: u16,
}

impl Default for ShootSeedLabelsConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5 }
    }
}

/// The NamespacedCloudProfile controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NamespacedCloudProfileConfig {
    /// Profiles reconciled at once.
    pub concurrent_syncs: u16,
}

impl Default for NamespacedCloudProfileConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5 }
    }
}

/// The ControllerInstallation controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct InstallationConfig {
    /// Seeds reconciled at once.
    pub concurrent_syncs: u16,
}

impl Default for InstallationConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5 }
    }
}

/// The shoot maintenance controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MaintenanceConfig {
    pub concurrent_syncs: u16,
}

impl Default for MaintenanceConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5 }
    }
}

/// The protection controllers (CloudProfile, SecretBinding, Secret, Quota).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ProtectionConfig {
    /// Objects of each kind reconciled at once.
    pub concurrent_syncs: u16,
}

impl Default for ProtectionConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5 }
    }
}

/// The Project controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ProjectConfig {
    /// Projects reconciled at once.
    pub concurrent_syncs: u16,
}

impl Default for ProjectConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5 }
    }
}

/// The seed lifecycle controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SeedLifecycleConfig {
    pub concurrent_syncs: u16,
    /// How long after the last renewal of a gardenlet's heartbeat Lease its Seed becomes
    /// `GardenletReady=Unknown`. The default is three of gardenlet's default heartbeats (30 s),
    /// the Lease's own `leaseDurationSeconds`, so one late renewal is not an outage.
    pub gardenlet_grace_period_seconds: u64,
    /// How long a Seed stays `GardenletReady=Unknown` before the conditions of its Shoots become
    /// `Unknown` as well.
    pub shoot_grace_period_seconds: u64,
}

impl Default for SeedLifecycleConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5, gardenlet_grace_period_seconds: 90, shoot_grace_period_seconds: 300 }
    }
}

impl SeedLifecycleConfig {
    pub fn gardenlet_grace_period(&self) -> Duration {
        Duration::from_secs(self.gardenlet_grace_period_seconds)
    }
    pub fn shoot_grace_period(&self) -> Duration {
        Duration::from_secs(self.shoot_grace_period_seconds)
    }
}

/// The Bastion controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct BastionConfig {
    pub concurrent_syncs: u16,
    /// A Bastion is deleted this long after its creation, however often it was kept alive.
    pub max_lifetime_seconds: u64,
    /// A Bastion is deleted this long after its last keep-alive (or its creation, without one).
    pub heartbeat_timeout_seconds: u64,
}

impl Default for BastionConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5, max_lifetime_seconds: 24 * 3600, heartbeat_timeout_seconds: 3600 }
    }
}

impl BastionConfig {
    pub fn max_lifetime(&self) -> Duration {
        Duration::from_secs(self.max_lifetime_seconds)
    }
    pub fn heartbeat_timeout(&self) -> Duration {
        Duration::from_secs(self.heartbeat_timeout_seconds)
    }
}

/// The AdminKubeconfigRequest controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AdminKubeconfigConfig {
    pub concurrent_syncs: u16,
    /// The longest validity a certificate gets, whatever was asked for (Gardener's
    /// `--shoot-admin-kubeconfig-max-expiration`, 24 h by default).
    pub max_expiration_seconds: u64,
}

impl Default for AdminKubeconfigConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5, max_expiration_seconds: 24 * 3600 }
    }
}

impl AdminKubeconfigConfig {
    pub fn max_expiration(&self) -> Duration {
        Duration::from_secs(self.max_expiration_seconds)
    }
}

/// The hibernation schedule controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HibernationConfig {
    pub concurrent_syncs: u16,
    /// A schedule tick missed (controller down) is still applied when it is at most this old;
    /// `null` applies the most recent missed tick however old (looking back at most 7 days).
    pub trigger_deadline_seconds: Option<u64>,
}

impl Default for HibernationConfig {
    fn default() -> Self {
        Self { concurrent_syncs: 5, trigger_deadline_seconds: Some(2 * 3600) }
    }
}

impl HibernationConfig {
    pub fn trigger_deadline(&self) -> Option<Duration> {
        self.trigger_deadline_seconds.map(Duration::from_secs)
    }
}

/// Why the configuration file cannot be used (the runtime's, naming the file and the field).
pub use ::runtime::config::ConfigError;

impl ::runtime::config::ConfigFile for Config {
    fn empty() -> Option<Self> {
        Some(Self::default())
    }

    fn check(&self) -> Result<(), ::runtime::config::Invalid> {
        self.validate().map_err(Into::into)
    }
}

impl Config {
    /// Reads, parses and validates a configuration file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        ::runtime::config::load(path)
    }

    /// Parses YAML or JSON; an empty document is the default.
    pub fn parse(text: &str) -> Result<Self, serde_yaml::Error> {
        if text.trim().is_empty() { Ok(Self::default()) } else { serde_yaml::from_str(text) }
    }

    /// Checks what serde cannot; returns the offending field and the problem.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let c = &self.controllers;
        for (field, value) in [
            ("controllers.project.concurrentSyncs", c.project.concurrent_syncs),
            ("controllers.seedLifecycle.concurrentSyncs", c.seed_lifecycle.concurrent_syncs),
            ("controllers.bastion.concurrentSyncs", c.bastion.concurrent_syncs),
            ("controllers.adminKubeconfig.concurrentSyncs", c.admin_kubeconfig.concurrent_syncs),
            ("controllers.shootHibernation.concurrentSyncs", c.shoot_hibernation.concurrent_syncs),
            ("controllers.protection.concurrentSyncs", c.protection.concurrent_syncs),
            ("controllers.shootMaintenance.concurrentSyncs", c.shoot_maintenance.concurrent_syncs),
            ("controllers.controllerInstallation.concurrentSyncs", c.controller_installation.concurrent_syncs),
            ("controllers.namespacedCloudProfile.concurrentSyncs", c.namespaced_cloud_profile.concurrent_syncs),
            ("controllers.managedSeedSet.concurrentSyncs", c.managed_seed_set.concurrent_syncs),
            ("controllers.certificateSigningRequest.concurrentSyncs", c.certificate_signing_request.concurrent_syncs),
        ] {
            if value == 0 {
                return Err((field, "must be at least 1".into()));
            }
        }
        for (field, value) in [
            ("controllers.seedLifecycle.gardenletGracePeriodSeconds", c.seed_lifecycle.gardenlet_grace_period_seconds),
            ("controllers.seedLifecycle.shootGracePeriodSeconds", c.seed_lifecycle.shoot_grace_period_seconds),
            ("controllers.bastion.maxLifetimeSeconds", c.bastion.max_lifetime_seconds),
            ("controllers.bastion.heartbeatTimeoutSeconds", c.bastion.heartbeat_timeout_seconds),
        ] {
            if value == 0 {
                return Err((field, "must be at least 1 second".into()));
            }
        }
        let min = api::authentication::MIN_EXPIRATION_SECONDS.unsigned_abs();
        if c.admin_kubeconfig.max_expiration_seconds < min {
            return Err((
                "controllers.adminKubeconfig.maxExpirationSeconds",
                format!("must be at least {min} (the shortest validity a request may ask for)"),
            ));
        }
        if self.admission.certificate_validity_seconds < 3600 {
            return Err(("admission.certificateValiditySeconds", "must be at least 3600 (one hour)".into()));
        }
        if self.admission.enabled && (self.admission.service_name.is_empty() || self.admission.namespace.is_empty()) {
            return Err(("admission.serviceName", "the Service and its namespace must be set".into()));
        }
        if c.shoot_hibernation.trigger_deadline_seconds == Some(0) {
            return Err((
                "controllers.shootHibernation.triggerDeadlineSeconds",
                "must be at least 1 second, or null for no deadline".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_is_the_default() {
        let c = Config::parse("").unwrap_or_default();
        assert_eq!(c, Config::default());
        assert_eq!(c.controllers.seed_lifecycle.gardenlet_grace_period(), Duration::from_secs(90));
        assert_eq!(c.controllers.bastion.max_lifetime(), Duration::from_secs(86_400));
        assert_eq!(c.controllers.shoot_hibernation.trigger_deadline(), Some(Duration::from_secs(7200)));
    }

    #[test]
    fn a_full_file_parses() {
        let c = Config::parse(
            "bindAddress: 127.0.0.1:9000\ncontrollers:\n  project: {concurrentSyncs: 2}\n  seedLifecycle: {gardenletGracePeriodSeconds: 40, shootGracePeriodSeconds: 200}\n  bastion: {maxLifetimeSeconds: 600, heartbeatTimeoutSeconds: 60}\n  shootHibernation: {triggerDeadlineSeconds: null}\n",
        )
        .map_err(|e| e.to_string());
        let c = match c {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        assert!(c.validate().is_ok());
        assert_eq!(c.bind_address.port(), 9000);
        assert_eq!(c.controllers.project.concurrent_syncs, 2);
        assert_eq!(c.controllers.seed_lifecycle.shoot_grace_period_seconds, 200);
        assert_eq!(c.controllers.bastion.heartbeat_timeout(), Duration::from_secs(60));
        assert_eq!(c.controllers.shoot_hibernation.trigger_deadline(), None);
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let dir = std::env::temp_dir().join(format!("cm-config-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let cases = [
            ("controllers: {project: {concurrentSyncs: 0}}", "controllers.project.concurrentSyncs"),
            ("controllers: {managedSeedSet: {concurrentSyncs: 0}}", "controllers.managedSeedSet.concurrentSyncs"),
            (
                "controllers: {certificateSigningRequest: {concurrentSyncs: 0}}",
                "controllers.certificateSigningRequest.concurrentSyncs",
            ),
            ("controllers: {bastion: {maxLifetimeSeconds: 0}}", "controllers.bastion.maxLifetimeSeconds"),
            (
                "controllers: {adminKubeconfig: {maxExpirationSeconds: 60}}",
                "controllers.adminKubeconfig.maxExpirationSeconds",
            ),
            ("controllers: {shootHibernation: {triggerDeadlineSeconds: 0}}", "triggerDeadlineSeconds"),
            ("controllers: {seedLifecycle: {gracePeriod: 3}}", "gracePeriod"),
            ("controllers: {bastion: {maxLifetimeSeconds: -1}}", "maxLifetimeSeconds"),
            ("bindAddres: 1.2.3.4:5", "bindAddres"),
            ("admission: {certificateValiditySeconds: 60}", "admission.certificateValiditySeconds"),
            ("admission: {enabled: true, serviceName: ''}", "admission.serviceName"),
        ];
        for (i, (yaml, field)) in cases.into_iter().enumerate() {
            let path = dir.join(format!("c{i}.yaml"));
            let _ = std::fs::write(&path, yaml);
            let err = match Config::load(&path) {
                Ok(_) => panic!("{yaml:?} was accepted"),
                Err(e) => ::runtime::cli::report(&e),
            };
            assert!(err.contains(&path.display().to_string()), "{yaml:?}: {err}");
            assert!(err.contains(field), "{yaml:?}: {err} does not name {field}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
