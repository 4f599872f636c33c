//! kube-apiserver: its Service (created first, its address goes into certificates and DNS)
//! and its Deployment with the flags kubeadm's design calls for.

use super::common::{self, ControlPlaneValues, Images, component_labels, file, secrets};
use super::etcd;
use crate::config::ExposureClassHandler;
pub use crate::config::ServiceType;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::api::core::v1::{Container, ContainerPort, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

pub const NAME: &str = "kube-apiserver";
/// The label naming the ExposureClass handler a Service is exposed by (Gardener's
/// `LabelExposureClassHandlerName`).
pub const LABEL_EXPOSURE_CLASS_HANDLER: &str = "handler.exposureclass.gardener.cloud/name";
pub const PORT: i32 = 443;
const APP: &str = "kubernetes";
const ROLE: &str = "apiserver";

/// Admission plugins every shoot gets (the recommended set); the shoot can add more.
pub const DEFAULT_ADMISSION_PLUGINS: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "DefaultStorageClass",
    "DefaultTolerationSeconds",
    "ResourceQuota",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
];

fn labels() -> BTreeMap<String, String> {
    component_labels(APP, ROLE)
}

/// The `kube-apiserver` Service. With the shoot's ExposureClass handler, the handler's
/// load-balancer annotations and labels are added, and the handler is named in a label; the
/// component's own labels win over a handler's label of the same key.
pub fn service(values: &ControlPlaneValues, type_: ServiceType, handler: Option<&ExposureClassHandler>) -> Service {
    let mut metadata = common::metadata(NAME, values, labels());
    if let Some(h) = handler {
        let mut merged = h.load_balancer_service.labels.clone();
        merged.insert(LABEL_EXPOSURE_CLASS_HANDLER.to_string(), h.name.clone());
        merged.extend(labels());
        metadata.labels = Some(merged);
        let annotations = &h.load_balancer_service.annotations;
        metadata.annotations = (!annotations.is_empty()).then(|| annotations.clone());
    }
    Service {
        metadata,
        spec: Some(ServiceSpec {
            type_: Some(format!("{type_:?}")),
            selector: common::selector(APP, ROLE).match_labels,
            ports: Some(vec![ServicePort {
                name: Some("kube-apiserver".to_string()),
                port: PORT,
                target_port: Some(IntOrString::Int(PORT)),
                protocol: Some("TCP".to_string()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The address a Service is reachable at, once it has one: the load balancer's IP or host
/// name for LoadBalancer Services, the cluster IP otherwise.
pub fn service_address(service: &Service) -> Option<String> {
    let spec = service.spec.as_ref()?;
    if spec.type_.as_deref() == Some("LoadBalancer") {
        let ingress = service.status.as_ref()?.load_balancer.as_ref()?.ingress.as_ref()?.first()?;
        return ingress.ip.clone().or_else(|| ingress.hostname.clone());
    }
    spec.cluster_ip.clone().filter(|ip| !ip.is_empty() && ip != "None")
}

/// Whether the version still has `--insecure-port` (removed in 1.24).
fn has_insecure_port_flag(version: &str) -> bool {
    semver::Version::parse(version.trim_start_matches('v')).is_ok_and(|v| (v.major, v.minor) < (1, 24))
}

fn join_flags(map: &BTreeMap<String, bool>) -> String {
    map.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The command-line flags, in a stable order.
pub fn args(values: &ControlPlaneValues) -> Vec<String> {
    let mut plugins: Vec<String> = DEFAULT_ADMISSION_PLUGINS.iter().map(|p| p.to_string()).collect();
    for extra in &values.apiserver.admission_plugins {
        if !plugins.contains(extra) {
            plugins.push(extra.clone());
        }
    }
    let mut args = vec![
        "--allow-privileged=true".to_string(),
        "--anonymous-auth=true".to_string(),
        "--authorization-mode=Node,RBAC".to_string(),
        format!("--client-ca-file={}", file(secrets::CA_CLIENT_BUNDLE, secrets::BUNDLE)),
        format!("--enable-admission-plugins={}", plugins.join(",")),
        "--enable-bootstrap-token-auth=true".to_string(),
        format!("--etcd-servers=https://{}:{}", etcd::CLIENT_SERVICE, etcd::CLIENT_PORT),
        format!("--etcd-cafile={}", file(secrets::CA_ETCD_BUNDLE, secrets::BUNDLE)),
        format!("--etcd-certfile={}", file(secrets::ETCD_CLIENT, secrets::TLS_CERT)),
        format!("--etcd-keyfile={}", file(secrets::ETCD_CLIENT, secrets::TLS_KEY)),
        format!("--encryption-provider-config={}", file(ENCRYPTION_CONFIG_SECRET, ENCRYPTION_CONFIG_KEY)),
        format!("--kubelet-client-certificate={}", file(secrets::KUBE_APISERVER_KUBELET, secrets::TLS_CERT)),
        format!("--kubelet-client-key={}", file(secrets::KUBE_APISERVER_KUBELET, secrets::TLS_KEY)),
        "--kubelet-preferred-address-types=InternalIP,Hostname,ExternalIP".to_string(),
        format!("--proxy-client-cert-file={}", file(secrets::FRONT_PROXY_CLIENT, secrets::TLS_CERT)),
        format!("--proxy-client-key-file={}", file(secrets::FRONT_PROXY_CLIENT, secrets::TLS_KEY)),
        format!("--requestheader-client-ca-file={}", file(secrets::CA_FRONT_PROXY_BUNDLE, secrets::BUNDLE)),
        "--requestheader-allowed-names=front-proxy-client".to_string(),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".to_string(),
        "--requestheader-group-headers=X-Remote-Group".to_string(),
        "--requestheader-username-headers=X-Remote-User".to_string(),
        format!("--secure-port={PORT}"),
        format!("--service-account-issuer=https://{}", values.advertised_host),
        format!("--service-account-key-file={}", file(secrets::SERVICE_ACCOUNT_KEY, secrets::SA_PUB)),
        format!("--service-account-signing-key-file={}", file(secrets::SERVICE_ACCOUNT_KEY, secrets::SA_KEY)),
        format!("--service-cluster-ip-range={}", values.service_cidr),
        format!("--tls-cert-file={}", file(secrets::KUBE_APISERVER, secrets::TLS_CERT)),
        format!("--tls-private-key-file={}", file(secrets::KUBE_APISERVER, secrets::TLS_KEY)),
    ];
    if common::rotating(values, secrets::SERVICE_ACCOUNT_KEY) {
        // Tokens signed with the previous key stay valid until the rotation completes.
        args.push(format!("--service-account-key-file={}", file(secrets::SERVICE_ACCOUNT_KEY_OLD, secrets::SA_PUB)));
    }
    if has_insecure_port_flag(&values.kubernetes_version) {
        args.push("--insecure-port=0".to_string());
    }
    if !values.apiserver.feature_gates.is_empty() {
        args.push(format!("--feature-gates={}", join_flags(&values.apiserver.feature_gates)));
    }
    if !values.apiserver.runtime_config.is_empty() {
        args.push(format!("--runtime-config={}", join_flags(&values.apiserver.runtime_config)));
    }
    args
}

/// The secrets the API server mounts.
pub const MOUNTED_SECRETS: &[&str] = &[
    secrets::CA_CLIENT_BUNDLE,
    secrets::CA_ETCD_BUNDLE,
    secrets::CA_FRONT_PROXY_BUNDLE,
    secrets::ETCD_CLIENT,
    secrets::FRONT_PROXY_CLIENT,
    secrets::KUBE_APISERVER,
    secrets::KUBE_APISERVER_KUBELET,
    secrets::SERVICE_ACCOUNT_KEY,
    ENCRYPTION_CONFIG_SECRET,
];

/// The secrets the API server mounts now: [`MOUNTED_SECRETS`], and the previous
/// service-account key while its rotation is between the phases.
pub fn mounted_secrets(values: &ControlPlaneValues) -> Vec<&'static str> {
    let mut out = MOUNTED_SECRETS.to_vec();
    if common::rotating(values, secrets::SERVICE_ACCOUNT_KEY) {
        out.push(secrets::SERVICE_ACCOUNT_KEY_OLD);
    }
    out
}

/// The Secret holding kube-apiserver's EncryptionConfiguration (rendered by gardenlet from the
/// shoot's `etcd-encryption-key`).
pub const ENCRYPTION_CONFIG_SECRET: &str = "kube-apiserver-etcd-encryption-configuration";
/// Its data key.
pub const ENCRYPTION_CONFIG_KEY: &str = "encryption-configuration.yaml";

/// The name of a key in the EncryptionConfiguration: derived from the key, so a new key gets a
/// new name and data written with the old one stays readable while both are listed.
pub fn encryption_key_name(key: &str) -> String {
    format!("key-{}", &common::checksum(key)[..12])
}

/// kube-apiserver's EncryptionConfiguration: Secrets are written encrypted with AES-CBC under
/// `key` (standard base64 of 32 bytes); during a key rotation `previous` follows, so what it
/// encrypted stays readable until it is rewritten; `identity` last, so Secrets written before
/// encryption was switched on stay readable (and are encrypted when next written).
pub fn encryption_configuration(key: &str, previous: Option<&str>) -> String {
    let mut keys = String::new();
    for k in std::iter::once(key).chain(previous) {
        keys.push_str(&format!("      - name: {}\n        secret: {}\n", encryption_key_name(k), k.trim()));
    }
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources:\n  - secrets\n  providers:\n  - aescbc:\n      keys:\n{keys}  - identity: {{}}\n"
    )
}

/// The Secret with the EncryptionConfiguration for `key` (and `previous`, see
/// [`encryption_configuration`]).
pub fn encryption_config_secret(
    values: &ControlPlaneValues,
    key: &str,
    previous: Option<&str>,
) -> k8s_openapi::api::core::v1::Secret {
    use k8s_openapi::ByteString;
    k8s_openapi::api::core::v1::Secret {
        metadata: common::metadata(ENCRYPTION_CONFIG_SECRET, values, labels()),
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(
            ENCRYPTION_CONFIG_KEY.to_string(),
            ByteString(encryption_configuration(key, previous).into_bytes()),
        )])),
        ..Default::default()
    }
}

/// The kube-apiserver Deployment.
pub fn deployment(values: &ControlPlaneValues) -> Deployment {
    let container = Container {
        name: NAME.to_string(),
        image: Some(Images::resolve(&values.images.kube_apiserver, &values.kubernetes_version)),
        command: Some(vec!["kube-apiserver".to_string()]),
        args: Some(args(values)),
        ports: Some(vec![ContainerPort { name: Some("https".into()), container_port: PORT, ..Default::default() }]),
        liveness_probe: Some(common::https_probe("/livez", PORT, 15, 10)),
        readiness_probe: Some(common::https_probe("/readyz", PORT, 10, 10)),
        resources: Some(common::requests(values.requests_percent, 250, 512)),
        ..Default::default()
    };
    let strategy = DeploymentStrategy {
        type_: Some("RollingUpdate".to_string()),
        rolling_update: Some(RollingUpdateDeployment {
            max_surge: Some(IntOrString::Int(1)),
            max_unavailable: Some(IntOrString::Int(0)),
        }),
    };
    common::deployment(values, NAME, (APP, ROLE), &mounted_secrets(values), container, Some(strategy))
}
