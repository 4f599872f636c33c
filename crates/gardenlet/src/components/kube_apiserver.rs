//! kube-apiserver: its Service (created first, its address goes into certificates and DNS)
//! and its Deployment with the flags kubeadm's design calls for.

use super::common::{self, ApiServerSettings, ControlPlaneValues, Images, component_labels, file, secrets};
use super::etcd;
use super::konnectivity;
use super::security::limits;
use crate::config::ExposureClassHandler;
pub use crate::config::ServiceType;
use api::core::shoot::kubernetes::OidcConfig;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, Probe, Service, ServicePort, ServiceSpec,
    TCPSocketAction, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

mod encryption;
pub use encryption::*;

pub const NAME: &str = "kube-apiserver";
/// The label naming the ExposureClass handler a Service is exposed by (Gardener's
/// `LabelExposureClassHandlerName`).
pub const LABEL_EXPOSURE_CLASS_HANDLER: &str = "handler.exposureclass.gardener.cloud/name";
/// The Service's port, what every client dials.
pub const PORT: i32 = 443;
/// The port the API server listens on in its pod (`--secure-port`), behind the Service's
/// [`PORT`]: the server runs as an unprivileged user, which cannot bind ports below 1024. (Adding
/// `NET_BIND_SERVICE` would not help: the container runtime grants a non-root process no
/// capabilities, having no ambient set in Kubernetes 1.20.) The shoot's own `kubernetes` Service
/// keeps port 443 too; its endpoints name this port.
pub const SECURE_PORT: i32 = 8443;
/// The name of the container's port, which the Service targets: by name, so that while a
/// Deployment of an API server that listened on 443 rolls, each pod is reached on its own port.
pub const PORT_NAME: &str = "https";
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

/// The label selector of the kube-apiserver pods.
pub fn pod_selector() -> String {
    format!("{}={APP},{}={ROLE}", common::labels::APP, common::labels::ROLE)
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
            ports: Some(service_ports(values)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The API server's port, and the tunnel's agent port when the shoot has the tunnel.
fn service_ports(values: &ControlPlaneValues) -> Vec<ServicePort> {
    let port = |name: &str, port: i32, target: &str| ServicePort {
        name: Some(name.to_string()),
        port,
        target_port: Some(IntOrString::String(target.to_string())),
        protocol: Some("TCP".to_string()),
        ..Default::default()
    };
    let mut ports = vec![port("kube-apiserver", PORT, PORT_NAME)];
    if values.tunnel {
        ports.push(port(konnectivity::AGENT_PORT_NAME, konnectivity::AGENT_PORT, konnectivity::AGENT_PORT_NAME));
    }
    ports
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

/// The admission plugins to enable: the defaults and the shoot's extra ones, without the ones
/// the shoot disables (a plugin in both lists would stop the API server).
pub fn enabled_admission_plugins(settings: &ApiServerSettings) -> Vec<String> {
    let mut plugins: Vec<String> = DEFAULT_ADMISSION_PLUGINS.iter().map(|p| p.to_string()).collect();
    for extra in &settings.admission_plugins {
        if !plugins.contains(extra) {
            plugins.push(extra.clone());
        }
    }
    plugins.retain(|p| !settings.disabled_admission_plugins.contains(p));
    plugins
}

/// Whether the version has reached `major.minor`.
fn at_least(version: &str, minor: u64) -> bool {
    semver::Version::parse(version.trim_start_matches('v')).is_ok_and(|v| (v.major, v.minor) >= (1, minor))
}

/// The flags of the shoot's own settings (`spec.kubernetes.kubeAPIServer`) besides feature
/// gates and runtime config; the issuer flags are in [`service_account_issuer_flags`].
fn shoot_setting_flags(values: &ControlPlaneValues) -> Vec<String> {
    let s = &values.apiserver;
    let mut args = Vec::new();
    if !s.disabled_admission_plugins.is_empty() {
        args.push(format!("--disable-admission-plugins={}", s.disabled_admission_plugins.join(",")));
    }
    if admission_configuration(s).is_some() {
        args.push(format!("--admission-control-config-file={ADMISSION_CONFIG_DIR}/{ADMISSION_CONFIG_KEY}"));
    }
    if !s.api_audiences.is_empty() {
        args.push(format!("--api-audiences={}", s.api_audiences.join(",")));
    }
    if s.audit_policy.is_some() {
        args.push(format!("--audit-policy-file={AUDIT_POLICY_DIR}/{AUDIT_POLICY_KEY}"));
        args.push(format!("--audit-log-path={AUDIT_LOG_PATH}"));
    }
    if let Some(ttl) = &s.event_ttl {
        args.push(format!("--event-ttl={ttl}"));
    }
    if let Some(n) = s.requests.max_non_mutating_inflight {
        args.push(format!("--max-requests-inflight={n}"));
    }
    if let Some(n) = s.requests.max_mutating_inflight {
        args.push(format!("--max-mutating-requests-inflight={n}"));
    }
    if let Some(n) = s.watch_cache_sizes.default {
        args.push(format!("--default-watch-cache-size={n}"));
    }
    if !s.watch_cache_sizes.resources.is_empty() {
        let sizes: Vec<String> = s
            .watch_cache_sizes
            .resources
            .iter()
            .map(|r| match r.api_group.as_deref().filter(|g| !g.is_empty()) {
                Some(group) => format!("{}.{group}#{}", r.resource, r.size),
                None => format!("{}#{}", r.resource, r.size),
            })
            .collect();
        args.push(format!("--watch-cache-sizes={}", sizes.join(",")));
    }
    if let Some(v) = s.logging.verbosity {
        args.push(format!("--v={v}"));
    }
    if let Some(v) = s.logging.http_access_verbosity {
        args.push(format!("--vmodule=httplog={v}"));
    }
    if let Some(n) = s.default_not_ready_toleration_seconds {
        args.push(format!("--default-not-ready-toleration-seconds={n}"));
    }
    if let Some(n) = s.default_unreachable_toleration_seconds {
        args.push(format!("--default-unreachable-toleration-seconds={n}"));
    }
    if let Some(oidc) = &s.oidc {
        args.extend(oidc_flags(oidc));
    }
    if let Some(extend) = s.service_account.extend_token_expiration {
        args.push(format!("--service-account-extend-token-expiration={extend}"));
    }
    if let Some(max) = &s.service_account.max_token_expiration {
        args.push(format!("--service-account-max-token-expiration={max}"));
    }
    args
}

/// The `--oidc-*` flags; none without an issuer (the API server needs issuer and client ID
/// together, admission requires both).
fn oidc_flags(oidc: &OidcConfig) -> Vec<String> {
    let Some(issuer) = oidc.issuer_url.as_deref().filter(|i| !i.is_empty()) else {
        return Vec::new();
    };
    let mut args = vec![format!("--oidc-issuer-url={issuer}")];
    let optional = [
        ("client-id", &oidc.client_id),
        ("username-claim", &oidc.username_claim),
        ("username-prefix", &oidc.username_prefix),
        ("groups-claim", &oidc.groups_claim),
        ("groups-prefix", &oidc.groups_prefix),
    ];
    for (name, value) in optional {
        if let Some(v) = value {
            args.push(format!("--oidc-{name}={v}"));
        }
    }
    if let Some(algs) = oidc.signing_algs.as_ref().map(|a| a.to_vec()).filter(|a| !a.is_empty()) {
        args.push(format!("--oidc-signing-algs={}", algs.join(",")));
    }
    for (claim, value) in &oidc.required_claims {
        args.push(format!("--oidc-required-claim={claim}={value}"));
    }
    if oidc.ca_bundle.is_some() {
        args.push(format!("--oidc-ca-file={OIDC_CA_DIR}/{OIDC_CA_KEY}"));
    }
    args
}

/// `--service-account-issuer` flags: the shoot's `issuer` or the API server's URL first (it
/// signs new tokens); from 1.22 on, the default one (when replaced) and `acceptedIssuers`
/// follow, accepted for verification only. Kubernetes 1.20 takes one issuer; admission
/// refuses `acceptedIssuers` there.
pub fn service_account_issuer_flags(values: &ControlPlaneValues) -> Vec<String> {
    let default = format!("https://{}", values.advertised_host);
    let sa = &values.apiserver.service_account;
    let primary = sa.issuer.clone().filter(|i| !i.is_empty()).unwrap_or_else(|| default.clone());
    let mut issuers = vec![primary];
    if at_least(&values.kubernetes_version, 22) {
        for extra in std::iter::once(&default).chain(&sa.accepted_issuers) {
            if !issuers.contains(extra) {
                issuers.push(extra.clone());
            }
        }
    }
    issuers.into_iter().map(|i| format!("--service-account-issuer={i}")).collect()
}

/// The command-line flags, in a stable order.
pub fn args(values: &ControlPlaneValues) -> Vec<String> {
    let plugins = enabled_admission_plugins(&values.apiserver);
    // Anonymous requests stay allowed unless the shoot switches them off: the kubelet's HTTPS
    // probes of `/livez` and `/readyz` are anonymous (see [`probes`]).
    let anonymous = values.apiserver.anonymous_auth.unwrap_or(true);
    let mut args = vec![
        "--allow-privileged=true".to_string(),
        format!("--anonymous-auth={anonymous}"),
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
        format!("--secure-port={SECURE_PORT}"),
    ];
    args.extend(service_account_issuer_flags(values));
    args.extend([
        format!("--service-account-key-file={}", file(secrets::SERVICE_ACCOUNT_KEY, secrets::SA_PUB)),
        format!("--service-account-signing-key-file={}", file(secrets::SERVICE_ACCOUNT_KEY, secrets::SA_KEY)),
        format!("--service-cluster-ip-range={}", values.service_cidr),
        format!("--tls-cert-file={}", file(secrets::KUBE_APISERVER, secrets::TLS_CERT)),
        format!("--tls-private-key-file={}", file(secrets::KUBE_APISERVER, secrets::TLS_KEY)),
    ]);
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
    if values.tunnel {
        args.push(format!("--egress-selector-config-file={}/{}", konnectivity::EGRESS_DIR, konnectivity::EGRESS_KEY));
        // Webhooks and APIServices named by a Service are dialed at its endpoints' addresses
        // through the tunnel, not at its cluster IP: a new Service then works as soon as its
        // endpoints are ready, without waiting for kube-proxy on the agent's node.
        args.push("--enable-aggregator-routing=true".to_string());
    }
    args.extend(shoot_setting_flags(values));
    args
}

/// The ConfigMap with the AdmissionConfiguration of the plugins the shoot configures.
pub const ADMISSION_CONFIG_MAP: &str = "kube-apiserver-admission-config";
/// Its data key.
pub const ADMISSION_CONFIG_KEY: &str = "admission-configuration.yaml";
/// Where it is mounted.
pub const ADMISSION_CONFIG_DIR: &str = "/etc/kubernetes/admission";
/// The ConfigMap with the shoot's audit policy (copied from the garden).
pub const AUDIT_POLICY_CONFIG_MAP: &str = "kube-apiserver-audit-policy";
/// Its data key.
pub const AUDIT_POLICY_KEY: &str = "audit-policy.yaml";
/// Where it is mounted.
pub const AUDIT_POLICY_DIR: &str = "/etc/kubernetes/audit";
/// Where audit events go: `-` is the API server's standard output, so the events are in the
/// container log (`kubectl logs deploy/kube-apiserver` in the seed namespace), one JSON
/// `audit.k8s.io/v1` Event a line.
pub const AUDIT_LOG_PATH: &str = "-";
/// The ConfigMap with the OIDC issuer's CA bundle (`oidcConfig.caBundle`).
pub const OIDC_CA_CONFIG_MAP: &str = "kube-apiserver-oidc-cabundle";
/// Its data key.
pub const OIDC_CA_KEY: &str = "ca.crt";
/// Where it is mounted.
pub const OIDC_CA_DIR: &str = "/etc/kubernetes/oidc";
/// Every ConfigMap the API server may mount: one the settings no longer call for is deleted.
pub const CONFIG_MAPS: &[&str] =
    &[ADMISSION_CONFIG_MAP, AUDIT_POLICY_CONFIG_MAP, OIDC_CA_CONFIG_MAP, konnectivity::EGRESS_CONFIG_MAP];

/// The AdmissionConfiguration (`apiserver.config.k8s.io/v1`) with each configured plugin's
/// configuration inline; `None` when no enabled plugin has a configuration.
pub fn admission_configuration(settings: &ApiServerSettings) -> Option<String> {
    let plugins: Vec<serde_json::Value> = settings
        .admission_plugin_configs
        .iter()
        .filter(|(name, _)| !settings.disabled_admission_plugins.contains(name))
        .map(|(name, config)| serde_json::json!({"name": name, "configuration": config}))
        .collect();
    if plugins.is_empty() {
        return None;
    }
    let config = serde_json::json!({
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": plugins,
    });
    // Serializing a JSON value to YAML cannot fail; JSON is YAML should it ever.
    Some(serde_yaml::to_string(&config).unwrap_or_else(|_| config.to_string()))
}

/// The files the settings call for, as (ConfigMap, data key, mount directory, content).
fn config_files(values: &ControlPlaneValues) -> Vec<(&'static str, &'static str, &'static str, String)> {
    let s = &values.apiserver;
    let mut files = Vec::new();
    if let Some(config) = admission_configuration(s) {
        files.push((ADMISSION_CONFIG_MAP, ADMISSION_CONFIG_KEY, ADMISSION_CONFIG_DIR, config));
    }
    if let Some(policy) = &s.audit_policy {
        files.push((AUDIT_POLICY_CONFIG_MAP, AUDIT_POLICY_KEY, AUDIT_POLICY_DIR, policy.clone()));
    }
    if let Some(ca) = s.oidc.as_ref().and_then(|o| o.ca_bundle.clone()) {
        files.push((OIDC_CA_CONFIG_MAP, OIDC_CA_KEY, OIDC_CA_DIR, ca));
    }
    if values.tunnel {
        let config = konnectivity::egress_selector_configuration();
        files.push((konnectivity::EGRESS_CONFIG_MAP, konnectivity::EGRESS_KEY, konnectivity::EGRESS_DIR, config));
    }
    files
}

/// The ConfigMaps the API server mounts for the shoot's settings (admission configuration,
/// audit policy, OIDC CA bundle); names of [`CONFIG_MAPS`] missing here are to be deleted.
pub fn config_maps(values: &ControlPlaneValues) -> Vec<ConfigMap> {
    config_files(values)
        .into_iter()
        .map(|(name, key, _, content)| ConfigMap {
            metadata: common::metadata(name, values, labels()),
            data: Some(BTreeMap::from([(key.to_string(), content)])),
            ..Default::default()
        })
        .collect()
}

/// Liveness and readiness probes: HTTPS `/livez` and `/readyz` while anonymous requests are
/// allowed (the kubelet probes without credentials); a TCP check of the port when the shoot
/// switched anonymous authentication off, as those paths then answer 401. Readiness is asked
/// every 2 s from the 3rd second (the API server is ready after about 5 to 10 s; a probe every
/// 10 s from the 10th held each creation, wake-up and roll-out step up to 10 s longer than the
/// server needed); liveness stays patient.
pub fn probes(values: &ControlPlaneValues) -> (Probe, Probe) {
    let live = common::https_probe("/livez", SECURE_PORT, 15, 10);
    let ready = common::https_probe("/readyz", SECURE_PORT, 3, 2);
    if values.apiserver.anonymous_auth != Some(false) {
        return (live, ready);
    }
    let tcp = |mut p: Probe| {
        p.http_get = None;
        p.tcp_socket = Some(TCPSocketAction { port: IntOrString::Int(SECURE_PORT), ..Default::default() });
        p
    };
    (tcp(live), tcp(ready))
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

/// The kube-apiserver Deployment: the secrets mounted, and the ConfigMaps of
/// [`config_maps`] at their directories; a change of a ConfigMap's content or of the
/// encrypted resources rolls the pods (checksum annotations), as kube-apiserver 1.20 reads
/// these files only at start.
pub fn deployment(values: &ControlPlaneValues) -> Deployment {
    let (liveness, readiness) = probes(values);
    let files = config_files(values);
    let container = Container {
        name: NAME.to_string(),
        image: Some(Images::resolve(&values.images.kube_apiserver, &values.kubernetes_version)),
        command: Some(vec!["kube-apiserver".to_string()]),
        args: Some(args(values)),
        ports: Some(vec![ContainerPort {
            name: Some(PORT_NAME.into()),
            container_port: SECURE_PORT,
            ..Default::default()
        }]),
        liveness_probe: Some(liveness),
        readiness_probe: Some(readiness),
        resources: Some(common::resources(values.requests_percent, 250, 512, limits::KUBE_APISERVER_MIB)),
        volume_mounts: Some(
            files
                .iter()
                .map(|(name, _, dir, _)| VolumeMount {
                    name: name.to_string(),
                    mount_path: dir.to_string(),
                    read_only: Some(true),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    };
    let strategy = DeploymentStrategy {
        type_: Some("RollingUpdate".to_string()),
        rolling_update: Some(RollingUpdateDeployment {
            max_surge: Some(IntOrString::Int(1)),
            max_unavailable: Some(IntOrString::Int(0)),
        }),
    };
    let mut d = common::deployment(values, NAME, (APP, ROLE), &mounted_secrets(values), container, Some(strategy));
    let mut checksums: BTreeMap<String, String> = files
        .iter()
        .map(|(name, _, _, content)| (format!("checksum/configmap-{name}"), common::checksum(content)))
        .collect();
    if !values.apiserver.encrypted_resources.is_empty() {
        let resources = encrypted_resources(&values.apiserver.encrypted_resources).join(",");
        checksums.insert("checksum/encrypted-resources".into(), common::checksum(&resources));
    }
    // A provider other than the default (or one still being replaced) rolls the pods too, so
    // the running API server reads what the Secret says.
    let order = providers(values).in_order();
    if order != [api::helpers::encryption::AESCBC] {
        checksums.insert("checksum/encryption-providers".into(), common::checksum(&order.join(",")));
    }
    if let Some(template) = d.spec.as_mut().map(|s| &mut s.template) {
        if !checksums.is_empty() {
            let meta = template.metadata.get_or_insert_with(Default::default);
            meta.annotations.get_or_insert_with(Default::default).extend(checksums);
        }
        if let Some(pod) = template.spec.as_mut() {
            pod.volumes.get_or_insert_with(Vec::new).extend(files.iter().map(|(name, _, _, _)| Volume {
                name: name.to_string(),
                config_map: Some(ConfigMapVolumeSource { name: name.to_string(), ..Default::default() }),
                ..Default::default()
            }));
            if values.tunnel {
                // `kubectl logs/exec deploy/kube-apiserver` keep meaning the API server (1.20's
                // kubectl reads the first annotation, later ones the second).
                let meta = template.metadata.get_or_insert_with(Default::default);
                let annotations = meta.annotations.get_or_insert_with(Default::default);
                for key in ["kubectl.kubernetes.io/default-logs-container", "kubectl.kubernetes.io/default-container"] {
                    annotations.insert(key.to_string(), NAME.to_string());
                }
                // The tunnel's server shares the socket with the API server.
                let (volume, mount) = konnectivity::socket_volume();
                pod.volumes.get_or_insert_with(Vec::new).push(volume);
                if let Some(api_server) = pod.containers.first_mut() {
                    api_server.volume_mounts.get_or_insert_with(Vec::new).push(mount);
                }
                pod.containers.push(konnectivity::server_container(values));
            }
        }
    }
    d
}

#[cfg(test)]
mod tests;
