//! What the Network deploys into a shoot, pure: the pod routes agent ([`crate::pod_routes`]) as a
//! DaemonSet in `kube-system` on every node, in the node's network namespace, with its
//! ServiceAccount and least-privilege RBAC (read Nodes, nothing else). A networking extension
//! (Calico, Cilium) deploys its node agent the same way.

use crate::common::{FIELD_MANAGER_PREFIX, LABEL_MANAGED_BY};
use extension_sdk::k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec};
use extension_sdk::k8s_openapi::api::core::v1::{
    Capabilities, Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec,
    ResourceRequirements, SeccompProfile, SecurityContext, ServiceAccount, Toleration,
};
use extension_sdk::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use extension_sdk::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use extension_sdk::kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Name of the ServiceAccount, ClusterRole, ClusterRoleBinding and DaemonSet.
pub const NAME: &str = "provider-local-pod-routes";
/// Where the namespaced objects go.
pub const NAMESPACE: &str = "kube-system";
/// The binary in provider-local's image (images/gardener-component).
const BINARY: &str = "/usr/local/bin/gardener-extension-provider-local";
const APP_LABEL: &str = "app.kubernetes.io/name";

/// Everything deployed into a shoot, in the order it is applied (RBAC before the pods that
/// need it).
#[derive(Clone, Debug)]
pub struct Objects {
    pub service_account: ServiceAccount,
    pub cluster_role: ClusterRole,
    pub cluster_role_binding: ClusterRoleBinding,
    pub daemon_set: DaemonSet,
}

impl Objects {
    /// The objects for the agent image `image` (provider-local's own).
    pub fn new(image: &str) -> Self {
        Self {
            service_account: ServiceAccount { metadata: meta(NAME, Some(NAMESPACE)), ..Default::default() },
            cluster_role: ClusterRole { metadata: meta(NAME, None), rules: Some(rules()), ..Default::default() },
            cluster_role_binding: cluster_role_binding(),
            daemon_set: daemon_set(image),
        }
    }

    /// `{apiVersion, kind, [namespace,] name}` of each object: `providerStatus.managedResources`.
    pub fn references(&self) -> Vec<Value> {
        vec![
            reference(&self.service_account),
            reference(&self.cluster_role),
            reference(&self.cluster_role_binding),
            reference(&self.daemon_set),
        ]
    }
}

fn reference<K: Resource<DynamicType = ()>>(obj: &K) -> Value {
    let mut r = json!({"apiVersion": K::api_version(&()), "kind": K::kind(&()), "name": obj.name_any()});
    if let Some(ns) = obj.namespace() {
        r["namespace"] = json!(ns);
    }
    r
}

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        (APP_LABEL.to_string(), NAME.to_string()),
        (LABEL_MANAGED_BY.to_string(), format!("{FIELD_MANAGER_PREFIX}-{}", super::COMPONENT)),
    ])
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_string),
        labels: Some(labels()),
        ..Default::default()
    }
}

/// Exactly what the agent calls: it watches Nodes (their pod CIDRs and addresses). No writes.
pub fn rules() -> Vec<PolicyRule> {
    vec![PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(vec!["nodes".into()]),
        verbs: ["get", "list", "watch"].iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    }]
}

fn cluster_role_binding() -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(NAME, None),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: NAME.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: NAME.into(),
            namespace: Some(NAMESPACE.into()),
            ..Default::default()
        }]),
    }
}

/// One agent pod per node, on every node (all taints tolerated, node-critical: without it the
/// node's pods reach no other node's pods), in the node's network namespace (`hostNetwork`),
/// the node's name from the downward API.
///
/// It runs as root with `NET_ADMIN` only (to change the node's routing table), without
/// privilege escalation and on a read-only root file system.
pub fn daemon_set(image: &str) -> DaemonSet {
    let selector = BTreeMap::from([(APP_LABEL.to_string(), NAME.to_string())]);
    let quantities = |pairs: &[(&str, &str)]| -> BTreeMap<String, Quantity> {
        pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()
    };
    let container = Container {
        name: "pod-routes".into(),
        image: Some(image.into()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(vec![BINARY.into(), "pod-routes".into(), "--node-name=$(NODE_NAME)".into()]),
        env: Some(vec![EnvVar {
            name: "NODE_NAME".into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector { field_path: "spec.nodeName".into(), ..Default::default() }),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        resources: Some(ResourceRequirements {
            requests: Some(quantities(&[("cpu", "5m"), ("memory", "16Mi")])),
            limits: Some(quantities(&[("memory", "96Mi")])),
            ..Default::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities { add: Some(vec!["NET_ADMIN".into()]), drop: Some(vec!["ALL".into()]) }),
            ..Default::default()
        }),
        ..Default::default()
    };
    DaemonSet {
        metadata: meta(NAME, Some(NAMESPACE)),
        spec: Some(DaemonSetSpec {
            selector: LabelSelector { match_labels: Some(selector), ..Default::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels()), ..Default::default() }),
                spec: Some(PodSpec {
                    host_network: Some(true),
                    service_account_name: Some(NAME.into()),
                    priority_class_name: Some("system-node-critical".into()),
                    tolerations: Some(vec![Toleration { operator: Some("Exists".into()), ..Default::default() }]),
                    security_context: Some(PodSecurityContext {
                        run_as_user: Some(0),
                        run_as_group: Some(0),
                        run_as_non_root: Some(false),
                        seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".into(), ..Default::default() }),
                        ..Default::default()
                    }),
                    containers: vec![container],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_runs_on_every_node_in_its_network_with_net_admin_only() {
        let o = Objects::new("reg/provider-local:v1");
        let spec = o.daemon_set.spec.and_then(|s| s.template.spec).expect("a pod spec");
        assert_eq!(spec.host_network, Some(true));
        assert_eq!(spec.service_account_name.as_deref(), Some(NAME));
        let tolerations = spec.tolerations.unwrap_or_default();
        assert_eq!(tolerations.len(), 1);
        assert_eq!(tolerations[0].operator.as_deref(), Some("Exists"));
        assert_eq!(tolerations[0].key, None, "every taint");
        let c = &spec.containers[0];
        assert_eq!(c.image.as_deref(), Some("reg/provider-local:v1"));
        assert_eq!(c.command.clone().unwrap_or_default()[1..], ["pod-routes", "--node-name=$(NODE_NAME)"]);
        let caps = c.security_context.as_ref().and_then(|s| s.capabilities.clone()).expect("capabilities");
        assert_eq!(caps.add, Some(vec!["NET_ADMIN".to_string()]));
        assert_eq!(caps.drop, Some(vec!["ALL".to_string()]));
        assert_eq!(c.security_context.as_ref().and_then(|s| s.privileged), None, "not privileged");
    }

    #[test]
    fn the_agent_may_only_read_nodes() {
        let rules = rules();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].resources, Some(vec!["nodes".to_string()]));
        assert_eq!(rules[0].verbs, ["get", "list", "watch"]);
        let o = Objects::new("i");
        let subjects = o.cluster_role_binding.subjects.clone().unwrap_or_default();
        assert_eq!(subjects[0].name, NAME);
        assert_eq!(o.cluster_role_binding.role_ref.name, NAME);
        assert_eq!(o.references().len(), 4);
    }
}
