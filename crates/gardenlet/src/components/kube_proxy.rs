//! kube-proxy, the first system component of the shoot's nodes: a DaemonSet in the shoot's
//! `kube-system`, as kubeadm deploys it. It reaches the API server by the address the kubelets
//! use (the Service address in the seed, not the shoot's `kubernetes` Service, which needs
//! kube-proxy itself) with its service account's token, so it needs no certificate of its own.
//! It runs in the node's network namespace, privileged (it writes iptables rules and the
//! `route_localnet` sysctl), tolerates every taint, and leaves the conntrack sysctls alone: a
//! machine shares its kernel with the seed, whose own kube-proxy already set them.
//!
//! The shoot's settings (`spec.kubernetes.kubeProxy`): `mode: IPTables` is the only mode (IPVS
//! is refused at admission: the seed's kernel has no IPVS), `featureGates` become
//! `--feature-gates`, and `enabled: false` means gardenlet deploys none of these objects and
//! deletes them from a shoot that had them
//! (`crate::shoot::objects::system_resources::delete_kube_proxy`).

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use serde_json::json;
use std::collections::BTreeMap;

pub const NAME: &str = "kube-proxy";
pub const NAMESPACE: &str = "kube-system";
/// The ClusterRole Kubernetes ships for kube-proxy.
pub const CLUSTER_ROLE: &str = "system:node-proxier";
const KUBECONFIG_DIR: &str = "/var/lib/kube-proxy";

/// What kube-proxy needs to know about the shoot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Values {
    /// The API server URL the nodes use.
    pub server: String,
    /// The shoot's pod range (`--cluster-cidr`: traffic from outside it is masqueraded).
    pub pod_cidr: Option<String>,
    pub image: String,
    /// The shoot's `spec.kubernetes.kubeProxy.featureGates`.
    pub feature_gates: BTreeMap<String, bool>,
}

/// The ClusterRoleBinding of the service account to [`CLUSTER_ROLE`].
pub const CLUSTER_ROLE_BINDING: &str = "gardener.cloud:target:kube-proxy";

/// Whether the shoot runs kube-proxy (`spec.kubernetes.kubeProxy.enabled`, default true).
pub fn enabled(shoot: &api::core::Shoot) -> bool {
    shoot.spec.kubernetes.kube_proxy.as_ref().and_then(|p| p.enabled).unwrap_or(true)
}

/// The kubeconfig in the ConfigMap: the nodes' server, the service account's CA and token.
pub fn kubeconfig(server: &str) -> String {
    super::common::service_account_kubeconfig(server)
}

/// The command line.
pub fn args(values: &Values) -> Vec<String> {
    let mut args = vec![
        "kube-proxy".to_string(),
        format!("--kubeconfig={KUBECONFIG_DIR}/kubeconfig.conf"),
        "--hostname-override=$(NODE_NAME)".to_string(),
        "--proxy-mode=iptables".to_string(),
        "--conntrack-max-per-core=0".to_string(),
        "--conntrack-tcp-timeout-established=0".to_string(),
        "--conntrack-tcp-timeout-close-wait=0".to_string(),
        "--healthz-bind-address=0.0.0.0:10256".to_string(),
        "--metrics-bind-address=127.0.0.1:10249".to_string(),
        "--v=2".to_string(),
    ];
    if let Some(cidr) = &values.pod_cidr {
        args.push(format!("--cluster-cidr={cidr}"));
    }
    args.extend(super::common::feature_gates_flag(&values.feature_gates));
    args
}

fn labels() -> serde_json::Value {
    json!({ "k8s-app": NAME, "gardener.cloud/role": "system-component" })
}

pub fn service_account() -> ServiceAccount {
    ServiceAccount {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(NAME.into()),
            namespace: Some(NAMESPACE.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Binds Kubernetes' own `system:node-proxier` role to the service account, nothing more.
pub fn cluster_role_binding() -> Result<ClusterRoleBinding, serde_json::Error> {
    serde_json::from_value(json!({
        "metadata": { "name": CLUSTER_ROLE_BINDING, "labels": labels() },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_ROLE },
        "subjects": [{ "kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE }]
    }))
}

pub fn config_map(values: &Values) -> ConfigMap {
    ConfigMap {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(NAME.into()),
            namespace: Some(NAMESPACE.into()),
            ..Default::default()
        },
        data: Some([("kubeconfig.conf".to_string(), kubeconfig(&values.server))].into()),
        ..Default::default()
    }
}

pub fn daemon_set(values: &Values) -> Result<DaemonSet, serde_json::Error> {
    serde_json::from_value(json!({
        "metadata": { "name": NAME, "namespace": NAMESPACE, "labels": labels() },
        "spec": {
            "selector": { "matchLabels": { "k8s-app": NAME } },
            "updateStrategy": { "type": "RollingUpdate", "rollingUpdate": { "maxUnavailable": 1 } },
            "template": {
                "metadata": { "labels": labels(), "annotations": {
                    // A changed kubeconfig rolls the pods.
                    "checksum/config": super::common::checksum(&kubeconfig(&values.server)),
                } },
                "spec": {
                    "hostNetwork": true,
                    "priorityClassName": "system-node-critical",
                    "serviceAccountName": NAME,
                    "tolerations": [{ "operator": "Exists" }],
                    "nodeSelector": { "kubernetes.io/os": "linux" },
                    "containers": [{
                        "name": NAME,
                        "image": values.image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": args(values),
                        "env": [{ "name": "NODE_NAME", "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } } }],
                        "securityContext": { "privileged": true },
                        "readinessProbe": {
                            "httpGet": { "path": "/healthz", "port": 10256 },
                            "periodSeconds": 2,
                            "failureThreshold": 3,
                        },
                        "resources": { "requests": { "cpu": "10m", "memory": "32Mi" } },
                        "volumeMounts": [
                            { "name": "kubeconfig", "mountPath": KUBECONFIG_DIR, "readOnly": true },
                            { "name": "xtables-lock", "mountPath": "/run/xtables.lock" },
                            { "name": "lib-modules", "mountPath": "/lib/modules", "readOnly": true },
                        ],
                    }],
                    "volumes": [
                        { "name": "kubeconfig", "configMap": { "name": NAME } },
                        { "name": "xtables-lock", "hostPath": { "path": "/run/xtables.lock", "type": "FileOrCreate" } },
                        { "name": "lib-modules", "hostPath": { "path": "/lib/modules", "type": "DirectoryOrCreate" } },
                    ],
                },
            },
        },
    }))
}

/// Whether the DaemonSet runs a ready, current pod on every node it should: a DaemonSet with
/// nothing to schedule (no nodes yet) is not a failure of the component.
pub fn rolled_out(ds: &DaemonSet) -> Result<(), String> {
    let Some(status) = ds.status.as_ref() else { return Ok(()) };
    let desired = status.desired_number_scheduled;
    if desired == 0 {
        return Ok(());
    }
    let generation = ds.metadata.generation.unwrap_or_default();
    if status.observed_generation.unwrap_or_default() < generation {
        return Err(format!("generation {generation} is not observed yet"));
    }
    let updated = status.updated_number_scheduled.unwrap_or_default();
    if status.number_ready < desired || updated < desired {
        return Err(format!("{} of {desired} pods ready, {updated} updated", status.number_ready));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Values {
        Values {
            server: "https://10.96.4.5".into(),
            pod_cidr: Some("100.64.0.0/12".into()),
            image: "registry.k8s.io/kube-proxy:v1.20.2".into(),
            feature_gates: BTreeMap::new(),
        }
    }

    #[test]
    fn the_daemon_set_runs_on_every_node_with_the_shoot_s_settings() {
        let ds = daemon_set(&values()).unwrap();
        let pod = ds.spec.as_ref().unwrap().template.spec.clone().unwrap();
        assert_eq!(pod.host_network, Some(true));
        assert_eq!(pod.service_account_name.as_deref(), Some(NAME));
        assert_eq!(pod.tolerations.unwrap()[0].operator.as_deref(), Some("Exists"));
        let c = &pod.containers[0];
        assert_eq!(c.image.as_deref(), Some("registry.k8s.io/kube-proxy:v1.20.2"));
        let cmd = c.command.clone().unwrap();
        assert!(cmd.contains(&"--cluster-cidr=100.64.0.0/12".to_string()));
        assert!(cmd.contains(&"--proxy-mode=iptables".to_string()));
        assert!(cmd.contains(&"--conntrack-max-per-core=0".to_string()), "the machine's kernel is the seed's");
    }

    #[test]
    fn feature_gates_reach_the_command_line_once() {
        let flags =
            |v: &Values| -> Vec<String> { args(v).into_iter().filter(|a| a.starts_with("--feature-gates")).collect() };
        assert!(flags(&values()).is_empty(), "no gates, no flag");
        let v = Values {
            feature_gates: BTreeMap::from([("EndpointSliceProxying".into(), false), ("AllAlpha".into(), true)]),
            ..values()
        };
        assert_eq!(flags(&v), ["--feature-gates=AllAlpha=true,EndpointSliceProxying=false"]);
        let ds = daemon_set(&v).unwrap();
        let command = ds.spec.unwrap().template.spec.unwrap().containers[0].command.clone().unwrap();
        assert!(command.contains(&"--feature-gates=AllAlpha=true,EndpointSliceProxying=false".to_string()));
        assert!(command.contains(&"--proxy-mode=iptables".to_string()), "IPVS is refused at admission");
    }

    #[test]
    fn enabled_follows_the_shoot_and_defaults_to_true() {
        let shoot = |proxy: serde_json::Value| -> api::core::Shoot {
            serde_json::from_value(json!({
                "metadata": {"name": "demo", "namespace": "garden-dev"},
                "spec": {"region": "local", "provider": {"type": "local"}, "kubernetes": {"version": "1.20.2", "kubeProxy": proxy}}
            }))
            .unwrap()
        };
        assert!(enabled(&shoot(serde_json::Value::Null)));
        assert!(enabled(&shoot(json!({"mode": "IPTables"}))));
        assert!(!enabled(&shoot(json!({"enabled": false}))));
    }

    #[test]
    fn the_kubeconfig_uses_the_nodes_server_and_the_service_account() {
        let cm = config_map(&values());
        let kc = &cm.data.unwrap()["kubeconfig.conf"];
        assert!(kc.contains("server: https://10.96.4.5\n"));
        assert!(kc.contains("tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token"));
        let binding = cluster_role_binding().unwrap();
        assert_eq!(binding.role_ref.name, CLUSTER_ROLE);
        assert_eq!(binding.subjects.unwrap()[0].name, NAME);
    }

    #[test]
    fn a_changed_server_rolls_the_pods() {
        let a = daemon_set(&values()).unwrap();
        let b = daemon_set(&Values { server: "https://10.96.4.6".into(), ..values() }).unwrap();
        assert_ne!(a.spec.unwrap().template.metadata, b.spec.unwrap().template.metadata);
    }

    fn with_status(status: serde_json::Value) -> DaemonSet {
        serde_json::from_value(json!({ "metadata": { "name": NAME, "generation": 2 }, "status": status })).unwrap()
    }

    #[test]
    fn rollout() {
        let ok = json!({"desiredNumberScheduled": 1, "numberReady": 1, "updatedNumberScheduled": 1, "currentNumberScheduled": 1, "numberMisscheduled": 0, "observedGeneration": 2});
        assert_eq!(rolled_out(&with_status(ok)), Ok(()));
        let none = json!({"desiredNumberScheduled": 0, "numberReady": 0, "currentNumberScheduled": 0, "numberMisscheduled": 0});
        assert_eq!(rolled_out(&with_status(none)), Ok(()), "no nodes, nothing to run");
        let not_ready = json!({"desiredNumberScheduled": 2, "numberReady": 1, "updatedNumberScheduled": 2, "currentNumberScheduled": 2, "numberMisscheduled": 0, "observedGeneration": 2});
        assert_eq!(rolled_out(&with_status(not_ready)).unwrap_err(), "1 of 2 pods ready, 2 updated");
        let stale = json!({"desiredNumberScheduled": 1, "numberReady": 1, "updatedNumberScheduled": 1, "currentNumberScheduled": 1, "numberMisscheduled": 0, "observedGeneration": 1});
        assert!(rolled_out(&with_status(stale)).unwrap_err().contains("not observed"));
    }
}
