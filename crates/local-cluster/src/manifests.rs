//! The objects `up` applies (server-side apply, field manager `local-cluster`): the `kube-dns`
//! Service in front of the host's DNS server, the default StorageClass, the add-ons' RBAC,
//! which grants exactly what the DNS server and the provisioner use: Services, Endpoints and
//! claims cluster-wide, and ConfigMaps only in the namespace of the extra DNS zones; and the pod
//! security level `privileged` of `kube-system` (label `pod-security.kubernetes.io/enforce`,
//! which the garden's admission server enforces once a garden is installed: the system's own
//! pods there are never sent to it).

use crate::addons::zones::ZONE_NAMESPACE;
use crate::pki::ADDONS_USER;
use crate::settings::{DNS_PORT, DNS_SERVICE_IP, NODE_IP, PROVISIONER, STORAGE_CLASS};
use serde_json::{Value, json};

pub fn all() -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": { "name": "local-cluster:addons" },
            "rules": [
                { "apiGroups": [""], "resources": ["services", "endpoints", "persistentvolumeclaims"], "verbs": ["list", "watch"] },
                { "apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ["list", "watch", "create", "delete"] }
            ]
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": { "name": "local-cluster:addons" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "local-cluster:addons" },
            "subjects": [ { "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": ADDONS_USER } ]
        }),
        json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": { "name": ZONE_NAMESPACE }
        }),
        json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": { "name": "kube-system", "labels": { "pod-security.kubernetes.io/enforce": "privileged" } }
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": { "name": "local-cluster:addons:dns-zones", "namespace": ZONE_NAMESPACE },
            "rules": [ { "apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"] } ]
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": { "name": "local-cluster:addons:dns-zones", "namespace": ZONE_NAMESPACE },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "local-cluster:addons:dns-zones" },
            "subjects": [ { "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": ADDONS_USER } ]
        }),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": { "name": "kube-dns", "namespace": "kube-system",
                          "labels": { "k8s-app": "kube-dns", "kubernetes.io/name": "ClusterDNS" } },
            "spec": { "clusterIP": DNS_SERVICE_IP.to_string(), "ports": [
                { "name": "dns", "port": 53, "protocol": "UDP", "targetPort": DNS_PORT },
                { "name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": DNS_PORT }
            ] }
        }),
        json!({
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": { "name": "kube-dns", "namespace": "kube-system", "labels": { "k8s-app": "kube-dns" } },
            "subsets": [ { "addresses": [ { "ip": NODE_IP.to_string() } ], "ports": [
                { "name": "dns", "port": DNS_PORT, "protocol": "UDP" },
                { "name": "dns-tcp", "port": DNS_PORT, "protocol": "TCP" }
            ] } ]
        }),
        json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": { "name": STORAGE_CLASS,
                          "annotations": { "storageclass.kubernetes.io/is-default-class": "true" } },
            "provisioner": PROVISIONER,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer"
        }),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn kube_system_is_privileged() {
        let all = super::all();
        let ns = all.iter().find(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == "kube-system");
        assert_eq!(
            ns.map(|n| &n["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]),
            Some(&serde_json::json!("privileged"))
        );
    }
}
