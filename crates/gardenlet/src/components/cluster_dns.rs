//! Cluster DNS inside the shoot: `kube-system/cluster-dns`, the project's DNS server
//! (`cluster-dns`, the same server the local cluster runs) behind the `kube-dns` Service at the
//! address the kubelets hand to pods. It is authoritative for `cluster.local` from watches of
//! Services and Endpoints and forwards nothing. It reaches the API server the way kube-proxy
//! does ([`super::common::service_account_kubeconfig`]), runs unprivileged on an unprivileged
//! port behind the Service's port 53, and may only list and watch Services and Endpoints.
//!
//! Two replicas, spread over the nodes where there are several, with a PodDisruptionBudget of
//! `maxUnavailable: 1` (as Gardener runs CoreDNS): a node roll-out drains one replica at a time,
//! so names keep resolving while the pool's machines are replaced.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use serde_json::json;

pub const NAME: &str = "cluster-dns";
pub const NAMESPACE: &str = "kube-system";
/// The Service, named as Kubernetes' DNS specification and kubeadm name it.
pub const SERVICE: &str = "kube-dns";
const ROLE: &str = "gardener.cloud:target:cluster-dns";
const PORT: u16 = 8053;
const KUBECONFIG_DIR: &str = "/var/lib/cluster-dns";

/// What the DNS server needs to know about the shoot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Values {
    /// The API server URL the nodes use.
    pub server: String,
    /// The `kube-dns` Service's cluster IP (the kubelets' `clusterDNS`).
    pub service_ip: String,
    pub domain: String,
    pub image: String,
}

fn labels() -> serde_json::Value {
    json!({ "k8s-app": "kube-dns", "gardener.cloud/role": "system-component" })
}

pub fn service_account() -> Result<ServiceAccount, serde_json::Error> {
    serde_json::from_value(json!({ "metadata": { "name": NAME, "namespace": NAMESPACE, "labels": labels() } }))
}

/// Read access to exactly what the records come from.
pub fn cluster_role() -> Result<ClusterRole, serde_json::Error> {
    serde_json::from_value(json!({
        "metadata": { "name": ROLE, "labels": labels() },
        "rules": [{ "apiGroups": [""], "resources": ["services", "endpoints"], "verbs": ["list", "watch"] }]
    }))
}

pub fn cluster_role_binding() -> Result<ClusterRoleBinding, serde_json::Error> {
    serde_json::from_value(json!({
        "metadata": { "name": ROLE, "labels": labels() },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE },
        "subjects": [{ "kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE }]
    }))
}

pub fn config_map(values: &Values) -> Result<ConfigMap, serde_json::Error> {
    serde_json::from_value(json!({
        "metadata": { "name": NAME, "namespace": NAMESPACE, "labels": labels() },
        "data": { "kubeconfig.conf": super::common::service_account_kubeconfig(&values.server) }
    }))
}

pub fn deployment(values: &Values) -> Result<Deployment, serde_json::Error> {
    let checksum = super::common::checksum(&super::common::service_account_kubeconfig(&values.server));
    serde_json::from_value(json!({
        "metadata": { "name": NAME, "namespace": NAMESPACE, "labels": labels() },
        "spec": {
            "replicas": REPLICAS,
            "selector": { "matchLabels": { "k8s-app": "kube-dns" } },
            "template": {
                "metadata": { "labels": labels(), "annotations": { "checksum/config": checksum } },
                "spec": {
                    "serviceAccountName": NAME,
                    "priorityClassName": "system-cluster-critical",
                    // Its own address is what it serves; it must not ask itself.
                    "dnsPolicy": "Default",
                    "tolerations": [{ "key": "CriticalAddonsOnly", "operator": "Exists" }],
                    "affinity": { "podAntiAffinity": { "preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": { "matchLabels": { "k8s-app": "kube-dns" } },
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }]}},
                    "nodeSelector": { "kubernetes.io/os": "linux" },
                    "securityContext": { "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532 },
                    "containers": [{
                        "name": NAME,
                        "image": values.image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": [
                            "/usr/local/bin/cluster-dns",
                            format!("--kubeconfig={KUBECONFIG_DIR}/kubeconfig.conf"),
                            format!("--listen=0.0.0.0:{PORT}"),
                            format!("--domain={}", values.domain),
                        ],
                        "ports": [
                            { "name": "dns", "containerPort": PORT, "protocol": "UDP" },
                            { "name": "dns-tcp", "containerPort": PORT, "protocol": "TCP" },
                        ],
                        "readinessProbe": { "tcpSocket": { "port": PORT }, "periodSeconds": 2 },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": { "drop": ["ALL"] },
                        },
                        "resources": { "requests": { "cpu": "10m", "memory": "16Mi" } },
                        "volumeMounts": [{ "name": "kubeconfig", "mountPath": KUBECONFIG_DIR, "readOnly": true }],
                    }],
                    "volumes": [{ "name": "kubeconfig", "configMap": { "name": NAME } }],
                },
            },
        },
    }))
}

/// The replicas of the DNS server.
pub const REPLICAS: i32 = 2;

/// The PodDisruptionBudget of the DNS server: one replica at a time may be evicted. In
/// `policy/v1beta1`, the version every supported shoot (1.20 onwards) serves.
pub fn disruption_budget() -> serde_json::Value {
    json!({
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": { "name": NAME, "namespace": NAMESPACE, "labels": labels() },
        "spec": { "maxUnavailable": 1, "selector": { "matchLabels": { "k8s-app": "kube-dns" } } },
    })
}

/// `kube-system/kube-dns` at the kubelets' `clusterDNS` address.
pub fn service(values: &Values) -> Result<Service, serde_json::Error> {
    serde_json::from_value(json!({
        "metadata": { "name": SERVICE, "namespace": NAMESPACE, "labels": labels() },
        "spec": {
            "clusterIP": values.service_ip,
            "selector": { "k8s-app": "kube-dns" },
            "ports": [
                { "name": "dns", "port": 53, "protocol": "UDP", "targetPort": PORT },
                { "name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": PORT },
            ],
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Values {
        Values {
            server: "https://10.96.4.5".into(),
            service_ip: "100.64.0.10".into(),
            domain: "cluster.local".into(),
            image: "gardener-rs.local/cluster-dns:v0.1.0".into(),
        }
    }

    #[test]
    fn two_replicas_spread_and_a_budget_keep_names_resolving_during_drains() {
        let d = deployment(&values()).unwrap();
        let spec = d.spec.unwrap();
        assert_eq!(spec.replicas, Some(REPLICAS));
        let pdb = disruption_budget();
        assert_eq!(pdb["spec"]["maxUnavailable"], 1);
        let selector = serde_json::to_value(spec.selector).unwrap();
        assert_eq!(pdb["spec"]["selector"], selector, "the budget covers the Deployment's pods");
        let affinity = serde_json::to_value(spec.template.spec.unwrap().affinity).unwrap();
        assert_eq!(
            affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["topologyKey"],
            "kubernetes.io/hostname"
        );
    }

    #[test]
    fn the_service_is_where_the_kubelets_point_pods() {
        let svc = service(&values()).unwrap();
        let spec = svc.spec.unwrap();
        assert_eq!(spec.cluster_ip.as_deref(), Some("100.64.0.10"));
        assert_eq!(spec.selector.unwrap()["k8s-app"], "kube-dns");
        assert!(spec.ports.unwrap().iter().all(|p| p.port == 53));
    }

    #[test]
    fn it_runs_unprivileged_and_reads_only_services_and_endpoints() {
        let d = deployment(&values()).unwrap();
        let pod = d.spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.dns_policy.as_deref(), Some("Default"));
        assert_eq!(pod.security_context.unwrap().run_as_non_root, Some(true));
        let c = &pod.containers[0];
        assert!(c.command.as_ref().unwrap().contains(&"--listen=0.0.0.0:8053".to_string()));
        let rules = cluster_role().unwrap().rules.unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].resources.as_deref(), Some(&["services".to_string(), "endpoints".to_string()][..]));
        assert_eq!(rules[0].verbs, ["list", "watch"]);
        let kubeconfig = &config_map(&values()).unwrap().data.unwrap()["kubeconfig.conf"];
        assert!(kubeconfig.contains("server: https://10.96.4.5\n"));
    }
}
