//! The tunnel from the shoot's kube-apiserver to its nodes (crates/konnectivity; KEP-1281,
//! Gardener's GEP-11). The API server runs in the seed; what it sends to the shoot's network
//! (logs, exec, attach, port-forward, the `proxy` subresources, webhooks and aggregated APIs
//! served by Pods) goes through its `EgressSelectorConfiguration` (`cluster`, HTTP CONNECT over
//! a Unix socket) to the **server**, a sidecar in the API server's Pod. **Agents** in the
//! shoot's `kube-system` dial out to the server through the API server's Service (port
//! [`AGENT_PORT`]) and open the connections inside the shoot.
//!
//! Trust: the server presents the API server's own serving certificate (signed by the shoot's
//! `ca`, with the Service address and domains the agents dial); agents present a client
//! certificate (`konnectivity-agent`, signed by `ca-client`), which the server checks against
//! the client CA bundle; both bundles carry the old and the new CA during a rotation. The
//! agent may dial only the shoot's pod and service ranges and its Nodes' addresses.
//!
//! Only shoots with workers get the tunnel: a workerless shoot has nothing to reach.

use super::common::{self, ControlPlaneValues, Images, secrets};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, HTTPGetAction, ObjectFieldSelector, Probe,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

/// The sidecar container in the kube-apiserver Pod.
pub const SERVER: &str = "konnectivity-server";
/// The agents' port on the server, and on the kube-apiserver Service.
pub const AGENT_PORT: i32 = 8132;
/// The container port's name (the Service's target).
pub const AGENT_PORT_NAME: &str = "konnectivity";
const SERVER_HEALTH_PORT: i32 = 8092;
const AGENT_HEALTH_PORT: i32 = 8093;
/// The emptyDir the API server and the server share for the socket.
pub const SOCKET_VOLUME: &str = "konnectivity-uds";
const SOCKET_DIR: &str = "/etc/kubernetes/konnectivity";
/// The socket the API server's `cluster` egress goes to.
pub const SOCKET: &str = "/etc/kubernetes/konnectivity/konnectivity-server.socket";
/// The ConfigMap with the API server's EgressSelectorConfiguration, its key and mount directory.
pub const EGRESS_CONFIG_MAP: &str = "kube-apiserver-egress-selector";
pub const EGRESS_KEY: &str = "egress-selector-configuration.yaml";
pub const EGRESS_DIR: &str = "/etc/kubernetes/egress";

/// The API server's EgressSelectorConfiguration: `cluster` through the server's socket;
/// `controlplane` and `etcd` stay direct (they are in the seed).
pub fn egress_selector_configuration() -> String {
    format!(
        "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\negressSelections:\n\
         - name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n    transport:\n      uds:\n        udsName: {SOCKET}\n"
    )
}

/// The shared socket volume and its mount.
pub fn socket_volume() -> (Volume, VolumeMount) {
    (
        Volume {
            name: SOCKET_VOLUME.to_string(),
            empty_dir: Some(EmptyDirVolumeSource { medium: Some("Memory".to_string()), ..Default::default() }),
            ..Default::default()
        },
        VolumeMount { name: SOCKET_VOLUME.to_string(), mount_path: SOCKET_DIR.to_string(), ..Default::default() },
    )
}

fn image(images: &Images) -> String {
    images.konnectivity.clone()
}

/// An HTTP probe of the server's health port.
fn health_probe(path: &str, period: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port: IntOrString::Int(SERVER_HEALTH_PORT),
            ..Default::default()
        }),
        period_seconds: Some(period),
        ..Default::default()
    }
}

/// The server's container: the agent port with the API server's serving certificate, agents
/// checked against the client CA bundle, the socket in the shared volume.
pub fn server_container(values: &ControlPlaneValues) -> Container {
    let mount = |secret: &str| common::secret_volume(secret).1;
    Container {
        name: SERVER.to_string(),
        image: Some(image(&values.images)),
        command: Some(vec![
            "/usr/local/bin/konnectivity".to_string(),
            "server".to_string(),
            format!("--uds-name={SOCKET}"),
            format!("--agent-bind=0.0.0.0:{AGENT_PORT}"),
            format!("--cluster-cert={}", common::file(secrets::KUBE_APISERVER, secrets::TLS_CERT)),
            format!("--cluster-key={}", common::file(secrets::KUBE_APISERVER, secrets::TLS_KEY)),
            format!("--cluster-ca-cert={}", common::file(secrets::CA_CLIENT_BUNDLE, secrets::BUNDLE)),
            // One server per API server replica; the Service spreads agents over them.
            format!("--server-count={}", values.replicas.max(1)),
            format!("--health-bind=0.0.0.0:{SERVER_HEALTH_PORT}"),
        ]),
        env: Some(vec![EnvVar {
            name: "POD_NAME".to_string(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector { field_path: "metadata.name".to_string(), ..Default::default() }),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        ports: Some(vec![ContainerPort {
            name: Some(AGENT_PORT_NAME.to_string()),
            container_port: AGENT_PORT,
            ..Default::default()
        }]),
        readiness_probe: Some(health_probe("/readyz", 5)),
        liveness_probe: Some(health_probe("/healthz", 10)),
        resources: Some(common::resources(values.requests_percent, 10, 16, 128)),
        volume_mounts: Some(vec![mount(secrets::KUBE_APISERVER), mount(secrets::CA_CLIENT_BUNDLE), socket_volume().1]),
        security_context: Some(super::security::container()),
        ..Default::default()
    }
}

// The shoot side: the agents in `kube-system`.

pub const AGENT: &str = "konnectivity-agent";
pub const NAMESPACE: &str = "kube-system";
const AGENT_ROLE: &str = "gardener.cloud:target:konnectivity-agent";
const AGENT_DIR: &str = "/var/lib/konnectivity-agent";
/// Agents per shoot: spread over the nodes, so a node roll-out keeps one.
pub const AGENT_REPLICAS: i32 = 2;

/// What the agents need to know.
#[derive(Clone, PartialEq, Eq)]
pub struct AgentValues {
    /// The API server's Service address in the seed (what the kubelets dial).
    pub server_host: String,
    /// The shoot's pod and service ranges.
    pub allowed: Vec<String>,
    pub image: String,
    /// The CA bundle the server's certificate is checked against.
    pub ca: String,
    /// The agent's client certificate and key (PEM).
    pub cert: String,
    pub key: String,
}

impl std::fmt::Debug for AgentValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentValues")
            .field("server_host", &self.server_host)
            .field("allowed", &self.allowed)
            .field("image", &self.image)
            .finish_non_exhaustive()
    }
}

fn agent_labels() -> serde_json::Value {
    json!({ "app": AGENT, "gardener.cloud/role": "system-component" })
}

pub fn agent_service_account() -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": { "name": AGENT, "namespace": NAMESPACE, "labels": agent_labels() },
    })
}

/// Read access to the Nodes, whose addresses the agents may dial.
pub fn agent_cluster_role() -> serde_json::Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": { "name": AGENT_ROLE, "labels": agent_labels() },
        "rules": [{ "apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"] }],
    })
}

pub fn agent_cluster_role_binding() -> serde_json::Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": { "name": AGENT_ROLE, "labels": agent_labels() },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AGENT_ROLE },
        "subjects": [{ "kind": "ServiceAccount", "name": AGENT, "namespace": NAMESPACE }],
    })
}

fn b64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

impl AgentValues {
    /// The API server URL the nodes use (the Node watch's kubeconfig).
    fn server(&self) -> String {
        format!("https://{}", self.server_host)
    }
}

/// The agents' certificate, key and CA bundle, and the Node watch's kubeconfig.
pub fn agent_secret(values: &AgentValues) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": { "name": AGENT, "namespace": NAMESPACE, "labels": agent_labels() },
        // `data`, not `stringData`: what is applied is what is stored, so an unchanged Secret
        // is not written again.
        "data": {
            "ca.crt": b64(&values.ca),
            "tls.crt": b64(&values.cert),
            "tls.key": b64(&values.key),
            "kubeconfig.conf": b64(&common::service_account_kubeconfig(&values.server())),
        },
    })
}

pub fn agent_deployment(values: &AgentValues) -> serde_json::Value {
    // A new certificate, CA or server address rolls the agents.
    let checksum = common::checksum(&format!(
        "{}\n{}\n{}\n{}\n{}",
        values.ca,
        values.cert,
        values.key,
        values.server_host,
        values.allowed.join(",")
    ));
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": AGENT, "namespace": NAMESPACE, "labels": agent_labels() },
        "spec": {
            "replicas": AGENT_REPLICAS,
            "selector": { "matchLabels": { "app": AGENT } },
            "template": {
                "metadata": { "labels": agent_labels(), "annotations": { "checksum/secret": checksum } },
                "spec": {
                    "serviceAccountName": AGENT,
                    "priorityClassName": "system-cluster-critical",
                    "tolerations": [{ "key": "CriticalAddonsOnly", "operator": "Exists" }],
                    "affinity": { "podAntiAffinity": { "preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": { "matchLabels": { "app": AGENT } },
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }]}},
                    "nodeSelector": { "kubernetes.io/os": "linux" },
                    "securityContext": { "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532 },
                    "containers": [{
                        "name": AGENT,
                        "image": values.image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": [
                            "/usr/local/bin/konnectivity",
                            "agent",
                            format!("--proxy-server-host={}", values.server_host),
                            format!("--proxy-server-port={AGENT_PORT}"),
                            format!("--ca-cert={AGENT_DIR}/ca.crt"),
                            format!("--agent-cert={AGENT_DIR}/tls.crt"),
                            format!("--agent-key={AGENT_DIR}/tls.key"),
                            format!("--kubeconfig={AGENT_DIR}/kubeconfig.conf"),
                            format!("--allowed-cidr={}", values.allowed.join(",")),
                            format!("--health-bind=0.0.0.0:{AGENT_HEALTH_PORT}"),
                        ],
                        "env": [{ "name": "POD_NAME", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } }],
                        "readinessProbe": { "httpGet": { "path": "/readyz", "port": AGENT_HEALTH_PORT }, "periodSeconds": 2 },
                        "livenessProbe": { "httpGet": { "path": "/healthz", "port": AGENT_HEALTH_PORT }, "periodSeconds": 10 },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": { "drop": ["ALL"] },
                        },
                        "resources": { "requests": { "cpu": "10m", "memory": "16Mi" } },
                        "volumeMounts": [{ "name": "agent", "mountPath": AGENT_DIR, "readOnly": true }],
                    }],
                    "volumes": [{ "name": "agent", "secret": { "secretName": AGENT, "defaultMode": 0o440 } }],
                },
            },
        },
    })
}

/// One agent at a time may be evicted (`policy/v1beta1`, served by every supported shoot).
pub fn agent_disruption_budget() -> serde_json::Value {
    json!({
        "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
        "metadata": { "name": AGENT, "namespace": NAMESPACE, "labels": agent_labels() },
        "spec": { "maxUnavailable": 1, "selector": { "matchLabels": { "app": AGENT } } },
    })
}

#[cfg(test)]
mod tests;
