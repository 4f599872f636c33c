//! Values every control-plane component needs, and the small builders they share (labels,
//! secret volumes, owner references, probes).

pub use api::core::shoot::settings::FailureToleranceType;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    Container, HTTPGetAction, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, SecretVolumeSource, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// Container images of the control plane; `{version}` in a reference is replaced with the
/// shoot's Kubernetes version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Images {
    pub etcd: String,
    pub kube_apiserver: String,
    pub kube_controller_manager: String,
    pub kube_scheduler: String,
    /// kube-proxy on the shoot's nodes: needs `iptables`, `iptables-save` and
    /// `iptables-restore` next to the binary. The machines carry it (hack/images.sh).
    pub kube_proxy: String,
    /// The shoot's cluster DNS (`cluster-dns`, built with this project at its version; the
    /// machines carry it).
    pub cluster_dns: String,
    /// etcd's init containers (`data-dir` and the restore): need `sh`, `chown`, `chmod`, `rm`,
    /// `mv` and `etcdctl` (the etcd 3.5 images are distroless and have no shell; the 3.4 ones
    /// do; the local image's busybox shell runs its own `chown` and `chmod`).
    #[serde(default = "default_etcd_restore_image")]
    pub etcd_restore: String,
    /// The restore init container and the backup sidecar of etcd (crates/etcd-backup: the
    /// `etcd-backup` binary with `etcd` and `etcdctl`).
    #[serde(default = "default_etcd_backup_image")]
    pub etcd_backup: String,
    /// The tunnel's server beside kube-apiserver and its agents on the shoot's nodes
    /// (crates/konnectivity; the machines carry it).
    #[serde(default = "default_konnectivity_image")]
    pub konnectivity: String,
}

fn default_konnectivity_image() -> String {
    concat!("gardener-rs.local/konnectivity:v", env!("CARGO_PKG_VERSION")).into()
}

fn default_etcd_backup_image() -> String {
    concat!("gardener-rs.local/etcd-backup:v", env!("CARGO_PKG_VERSION")).into()
}

fn default_etcd_restore_image() -> String {
    "registry.k8s.io/etcd:3.4.13-0".into()
}

impl Default for Images {
    fn default() -> Self {
        Self {
            etcd: "registry.k8s.io/etcd:3.5.9-0".into(),
            kube_apiserver: "registry.k8s.io/kube-apiserver:v{version}".into(),
            kube_controller_manager: "registry.k8s.io/kube-controller-manager:v{version}".into(),
            kube_scheduler: "registry.k8s.io/kube-scheduler:v{version}".into(),
            kube_proxy: "registry.k8s.io/kube-proxy:v{version}".into(),
            cluster_dns: concat!("gardener-rs.local/cluster-dns:v", env!("CARGO_PKG_VERSION")).into(),
            etcd_restore: default_etcd_restore_image(),
            etcd_backup: default_etcd_backup_image(),
            konnectivity: default_konnectivity_image(),
        }
    }
}

impl Images {
    pub(crate) fn resolve(template: &str, version: &str) -> String {
        template.replace("{version}", version)
    }
}

/// Everything the builders need to know about one shoot. (`Default` is a base for struct update
/// syntax; every real shoot's values come from `ShootValues::control_plane`.)
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControlPlaneValues {
    /// The seed namespace (technical ID).
    pub namespace: String,
    pub kubernetes_version: String,
    /// Replicas of kube-apiserver, kube-controller-manager and kube-scheduler (0 when
    /// hibernated).
    pub replicas: i32,
    /// Replicas of etcd (0 only after everything else is down, else its member count).
    pub etcd_replicas: i32,
    /// The failure the control plane tolerates (`spec.controlPlane.highAvailability`): with
    /// one, etcd has [`super::availability::HA_ETCD_MEMBERS`] members spread over distinct nodes
    /// (or zones).
    pub failure_tolerance: Option<FailureToleranceType>,
    pub service_cidr: String,
    pub pod_cidr: Option<String>,
    /// The shoot has workers: kube-apiserver sends its `cluster` egress through the tunnel
    /// ([`super::konnectivity`]).
    pub tunnel: bool,
    pub cluster_domain: String,
    /// The address clients reach the API server by (external or internal domain).
    pub advertised_host: String,
    pub images: Images,
    /// The object that owns the control plane (the shoot's `Cluster`), so garbage collection
    /// removes it with the shoot.
    pub owner: Option<OwnerReference>,
    /// The shoot's kube-apiserver settings.
    pub apiserver: ApiServerSettings,
    /// The shoot's kube-controller-manager settings.
    pub controller_manager: ControllerManagerSettings,
    /// The shoot's kube-scheduler settings.
    pub scheduler: SchedulerSettings,
    /// Checksums of the secrets each component mounts, keyed by secret name; they go into pod
    /// annotations so that a changed certificate rolls the pods.
    pub secret_checksums: BTreeMap<String, String>,
    /// The shoot's backup, when the seed has backups with a directory store: etcd is backed up
    /// there continuously and restored from there (a migration's final snapshot included).
    pub etcd_backup: Option<super::etcd_backup_settings::EtcdBackup>,
    /// When etcd is defragmented (in the shoot's maintenance window): by the backup sidecar, or
    /// without a backup by the same sidecar without a store.
    pub etcd_defragmentation_schedule: String,
    /// The share of the default resource requests components ask for (percent, 1 to 100).
    pub requests_percent: u32,
}

impl ControlPlaneValues {
    /// The members of the shoot's etcd cluster (its size, also while hibernated).
    pub fn etcd_members(&self) -> i32 {
        if self.failure_tolerance.is_some() { super::availability::HA_ETCD_MEMBERS } else { 1 }
    }
}

/// The shoot's own kube-apiserver settings (`spec.kubernetes.kubeAPIServer`), as
/// `crate::components::kube_apiserver` turns them into flags and files. Admission has
/// refused what cannot take effect; what is `None` or empty leaves the API server's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiServerSettings {
    pub feature_gates: BTreeMap<String, bool>,
    pub runtime_config: BTreeMap<String, bool>,
    /// Admission plugins enabled in addition to the defaults.
    pub admission_plugins: Vec<String>,
    /// Admission plugins with `disabled: true`: removed from the enabled set and passed to
    /// `--disable-admission-plugins`.
    pub disabled_admission_plugins: Vec<String>,
    /// `admissionPlugins[].config` of the enabled plugins, by plugin name (an object; a YAML
    /// string is parsed when the values are derived).
    pub admission_plugin_configs: BTreeMap<String, serde_json::Value>,
    /// `enableAnonymousAuthentication` (`--anonymous-auth`; unset means this system's default).
    pub anonymous_auth: Option<bool>,
    /// `apiAudiences` (`--api-audiences`).
    pub api_audiences: Vec<String>,
    /// `eventTTL` (`--event-ttl`), a Go duration.
    pub event_ttl: Option<String>,
    /// `requests` (`--max-requests-inflight`, `--max-mutating-requests-inflight`).
    pub requests: api::core::shoot::kubernetes::ApiServerRequests,
    /// `watchCacheSizes` (`--default-watch-cache-size`, `--watch-cache-sizes`).
    pub watch_cache_sizes: api::core::shoot::kubernetes::WatchCacheSizes,
    /// `logging` (`--v`, `--vmodule=httplog=<n>`).
    pub logging: api::core::shoot::kubernetes::ApiServerLogging,
    /// `defaultNotReadyTolerationSeconds`.
    pub default_not_ready_toleration_seconds: Option<i64>,
    /// `defaultUnreachableTolerationSeconds`.
    pub default_unreachable_toleration_seconds: Option<i64>,
    /// `oidcConfig` (the `--oidc-*` flags; `caBundle` becomes a mounted file).
    pub oidc: Option<api::core::shoot::kubernetes::OidcConfig>,
    /// `serviceAccountConfig` (`--service-account-*`).
    pub service_account: api::core::shoot::kubernetes::ServiceAccountConfig,
    /// `auditConfig.auditPolicy.configMapRef.name`: the ConfigMap in the shoot's garden
    /// namespace whose `policy` gardenlet copies next to the API server.
    pub audit_policy_config_map: Option<String>,
    /// The audit policy read from that ConfigMap (filled in by the reconcile flow, which reads
    /// the garden); `None` means no audit logging.
    pub audit_policy: Option<String>,
    /// `encryptionConfig.resources`: encrypted in etcd besides `secrets`.
    pub encrypted_resources: Vec<String>,
    /// `encryptionConfig.provider.type`: what writes are encrypted with (`aescbc` when unset).
    pub encryption_provider: String,
    /// The provider the stored data may still be encrypted with (the status's, or `aescbc`);
    /// listed for reading while it differs from [`Self::encryption_provider`].
    pub previous_encryption_provider: String,
}

/// The shoot's kube-controller-manager settings (`spec.kubernetes.kubeControllerManager`), as
/// `crate::components::kube_controller_manager` turns them into flags. Admission has refused
/// what cannot take effect; `None` or empty leaves the component's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControllerManagerSettings {
    /// `nodeCIDRMaskSize` (`--node-cidr-mask-size`, default 24).
    pub node_cidr_mask_size: Option<i32>,
    /// `horizontalPodAutoscaler` (`--horizontal-pod-autoscaler-*`; the pre-1.12 delays are
    /// refused by admission and never passed).
    pub horizontal_pod_autoscaler: api::core::shoot::kubernetes::HorizontalPodAutoscalerConfig,
    /// `nodeMonitorGracePeriod` (`--node-monitor-grace-period`), a Go duration.
    pub node_monitor_grace_period: Option<String>,
    /// `featureGates` (`--feature-gates`).
    pub feature_gates: BTreeMap<String, bool>,
}

/// The shoot's kube-scheduler settings (`spec.kubernetes.kubeScheduler`), as
/// `crate::components::kube_scheduler` turns them into its configuration file, flags and
/// environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedulerSettings {
    /// `profile: bin-packing` (`balanced`, the default, is kube-scheduler's own scoring).
    pub bin_packing: bool,
    /// `kubeMaxPDVols` (the `KUBE_MAX_PD_VOLS` environment variable).
    pub kube_max_pd_vols: Option<String>,
    /// `featureGates` (`--feature-gates`).
    pub feature_gates: BTreeMap<String, bool>,
}

/// `--feature-gates=A=true,B=false` (sorted by name), or nothing for no gates.
pub fn feature_gates_flag(gates: &BTreeMap<String, bool>) -> Option<String> {
    (!gates.is_empty()).then(|| {
        format!("--feature-gates={}", gates.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","))
    })
}

/// Names of the secrets the control plane mounts, and their data keys: the shoot set of
/// `pki` (re-exported, one source of truth) plus the certificate-only `<ca>-bundle` secrets
/// pki derives from each CA. Components mount bundles, never a CA key; only
/// kube-controller-manager mounts a CA with its key (the client CA, to sign kubelet client
/// certificates).
pub mod secrets {
    pub use pki::data_keys::{BUNDLE, CA_CERT, CA_KEY, KUBECONFIG, SA_KEY, SA_PUB, TLS_CERT, TLS_KEY};
    pub use pki::shoot_set::names::{
        CA_CLIENT, ETCD_CLIENT, ETCD_SERVER, FRONT_PROXY_CLIENT, KUBE_APISERVER, KUBE_APISERVER_KUBELET,
        KUBECONFIG_KUBE_CONTROLLER_MANAGER, KUBECONFIG_KUBE_SCHEDULER, SERVICE_ACCOUNT_KEY,
    };

    pub const CA_BUNDLE: &str = "ca-bundle";
    pub const CA_CLIENT_BUNDLE: &str = "ca-client-bundle";
    pub const CA_ETCD_BUNDLE: &str = "ca-etcd-bundle";
    pub const CA_FRONT_PROXY_BUNDLE: &str = "ca-front-proxy-bundle";
    pub const CA_KUBELET_BUNDLE: &str = "ca-kubelet-bundle";
    /// The previous service-account key while its rotation is between the phases.
    pub const SERVICE_ACCOUNT_KEY_OLD: &str = "service-account-key-old";
}

/// Whether the previous version of `secret` (`<secret>-old`) exists: a rotation of it is
/// between its phases.
pub fn rotating(values: &ControlPlaneValues, secret: &str) -> bool {
    values.secret_checksums.contains_key(&pki::config::old_name(secret))
}

/// Label keys and values on every control-plane object.
pub mod labels {
    pub const APP: &str = "app";
    pub const ROLE: &str = "role";
    pub const GARDENER_ROLE: &str = "gardener.cloud/role";
    pub const CONTROL_PLANE: &str = "controlplane";
}

/// `{app: <app>, role: <role>, gardener.cloud/role: controlplane}`.
pub fn component_labels(app: &str, role: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::APP.to_string(), app.to_string()),
        (labels::ROLE.to_string(), role.to_string()),
        (labels::GARDENER_ROLE.to_string(), labels::CONTROL_PLANE.to_string()),
    ])
}

/// The selector matching [`component_labels`] (app and role only, which never change).
pub fn selector(app: &str, role: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([
            (labels::APP.to_string(), app.to_string()),
            (labels::ROLE.to_string(), role.to_string()),
        ])),
        ..Default::default()
    }
}

pub fn metadata(name: &str, values: &ControlPlaneValues, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(values.namespace.clone()),
        labels: Some(labels),
        owner_references: values.owner.clone().map(|o| vec![o]),
        ..Default::default()
    }
}

/// A read-only volume for a secret, mounted at `/srv/kubernetes/<secret>`: files of mode 0640,
/// owned by root and, through the pod's `fsGroup`, by the group the component runs as
/// ([`super::security::pod`]), so the component reads them and no other user does.
pub fn secret_volume(secret: &str) -> (Volume, VolumeMount) {
    (
        Volume {
            name: secret.to_string(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.to_string()),
                default_mode: Some(0o640),
                ..Default::default()
            }),
            ..Default::default()
        },
        VolumeMount {
            name: secret.to_string(),
            mount_path: mount_path(secret),
            read_only: Some(true),
            ..Default::default()
        },
    )
}

/// Where [`secret_volume`] mounts a secret.
pub fn mount_path(secret: &str) -> String {
    format!("/srv/kubernetes/{secret}")
}

/// `<mount path of secret>/<key>`.
pub fn file(secret: &str, key: &str) -> String {
    format!("{}/{key}", mount_path(secret))
}

/// An HTTPS probe on `path`.
pub fn https_probe(path: &str, port: i32, initial_delay: i32, period: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port: IntOrString::Int(port),
            scheme: Some("HTTPS".to_string()),
            ..Default::default()
        }),
        initial_delay_seconds: Some(initial_delay),
        period_seconds: Some(period),
        timeout_seconds: Some(15),
        failure_threshold: Some(3),
        success_threshold: Some(1),
        ..Default::default()
    }
}

/// Resource requests: `percent` of the default `cpu_millis` and `memory_mib` (at least 1m and
/// 1Mi; percent is clamped to 1..=100).
pub fn requests(percent: u32, cpu_millis: u64, memory_mib: u64) -> ResourceRequirements {
    let scale = |v: u64| (v * u64::from(percent.clamp(1, 100)) / 100).max(1);
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_string(), Quantity(format!("{}m", scale(cpu_millis)))),
            ("memory".to_string(), Quantity(format!("{}Mi", scale(memory_mib)))),
        ])),
        ..Default::default()
    }
}

/// [`requests`] and a memory limit of `limit_mib` (never below the request): a component that
/// grows beyond it is restarted instead of starving the other shoots of the seed.
pub fn resources(percent: u32, cpu_millis: u64, memory_mib: u64, limit_mib: u64) -> ResourceRequirements {
    let mut r = requests(percent, cpu_millis, memory_mib);
    let limit = limit_mib.max(memory_mib);
    r.limits = Some(BTreeMap::from([("memory".to_string(), mebibytes(limit))]));
    r
}

/// `n` MiB in the API server's canonical form (`1Gi`, not `1024Mi`): the stored object must
/// equal the intent, or every reconcile would apply it again (see "Writing only what changed" in
/// docs/gardenlet.md).
pub fn mebibytes(n: u64) -> Quantity {
    if n.is_multiple_of(1024) && n > 0 { Quantity(format!("{}Gi", n / 1024)) } else { Quantity(format!("{n}Mi")) }
}

/// A pod template with the component's labels, the checksums of the given secrets as
/// annotations, the secrets mounted, and one container; pod and container run unprivileged
/// ([`super::security`]).
pub fn pod_template(
    values: &ControlPlaneValues,
    labels: BTreeMap<String, String>,
    secrets: &[&str],
    mut container: Container,
) -> PodTemplateSpec {
    let (volumes, mounts): (Vec<_>, Vec<_>) = secrets.iter().map(|s| secret_volume(s)).unzip();
    container.volume_mounts.get_or_insert_with(Vec::new).extend(mounts);
    container.security_context = Some(super::security::container());
    let annotations: BTreeMap<String, String> = secrets
        .iter()
        .filter_map(|s| values.secret_checksums.get(*s).map(|c| (format!("checksum/secret-{s}"), c.clone())))
        .collect();
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container],
            volumes: Some(volumes),
            automount_service_account_token: Some(false),
            security_context: Some(super::security::pod()),
            ..Default::default()
        }),
    }
}

/// A control-plane Deployment: the component's labels and selector, `values.replicas`, the
/// given secrets mounted into its one container, spread by the failure tolerance
/// ([`super::availability::spread`]).
pub fn deployment(
    values: &ControlPlaneValues,
    name: &str,
    (app, role): (&str, &str),
    secrets: &[&str],
    container: Container,
    strategy: Option<DeploymentStrategy>,
) -> Deployment {
    let labels = component_labels(app, role);
    let mut template = pod_template(values, labels.clone(), secrets, container);
    if let Some(spec) = template.spec.as_mut() {
        spec.topology_spread_constraints = super::availability::spread(values.failure_tolerance, &selector(app, role));
    }
    Deployment {
        metadata: metadata(name, values, labels),
        spec: Some(DeploymentSpec {
            replicas: Some(values.replicas),
            revision_history_limit: Some(2),
            selector: selector(app, role),
            strategy,
            template,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Where a pod finds its service account's token and CA.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A kubeconfig for a system component in the shoot that reaches the API server at `server`
/// (the address the kubelets use) with its pod's service-account token and CA: usable before
/// kube-proxy routes the shoot's own `kubernetes` Service.
pub fn service_account_kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: default\n  cluster:\n    server: {server}\n    certificate-authority: {SERVICE_ACCOUNT_DIR}/ca.crt\ncontexts:\n- name: default\n  context:\n    cluster: default\n    namespace: default\n    user: default\ncurrent-context: default\nusers:\n- name: default\n  user:\n    tokenFile: {SERVICE_ACCOUNT_DIR}/token\n"
    )
}

/// A stable checksum of a text, for pod annotations that roll workloads when it changes.
pub fn checksum(text: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}
