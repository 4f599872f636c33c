//! The shape every agent provider-local deploys into a shoot shares (the ControlPlane's volume
//! provisioner, the Network's pod routes agent): a DaemonSet in `kube-system` running
//! provider-local's own image on every node, with its ServiceAccount and a ClusterRole bound to
//! it, all labelled as managed by the deploying actuator. Pure; the actuators name the
//! container, the rules and what differs (host network, volumes).

use crate::common::{FIELD_MANAGER_PREFIX, LABEL_MANAGED_BY};
use extension_sdk::k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec};
use extension_sdk::k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec, SeccompProfile,
    ServiceAccount, Toleration,
};
use extension_sdk::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use extension_sdk::kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Where the namespaced objects go.
pub const NAMESPACE: &str = "kube-system";
/// The binary in provider-local's image (images/gardener-component).
pub const BINARY: &str = "/usr/local/bin/gardener-extension-provider-local";
const APP_LABEL: &str = "app.kubernetes.io/name";

/// The agent's objects, in the order they are applied (RBAC before the pods that need it).
#[derive(Clone, Debug)]
pub struct Agent {
    pub service_account: ServiceAccount,
    pub cluster_role: ClusterRole,
    pub cluster_role_binding: ClusterRoleBinding,
    pub daemon_set: DaemonSet,
}

impl Agent {
    /// The agent `name` deployed by the actuator `component`, allowed `rules`, running
    /// `container` in the pod `pod` describes (containers, service account, tolerations,
    /// priority and security context are filled in here).
    pub fn new(name: &str, component: &str, rules: Vec<PolicyRule>, container: Container, pod: PodSpec) -> Self {
        let labels = labels(name, component);
        Self {
            service_account: ServiceAccount { metadata: meta(name, Some(NAMESPACE), &labels), ..Default::default() },
            cluster_role: ClusterRole { metadata: meta(name, None, &labels), rules: Some(rules), ..Default::default() },
            cluster_role_binding: cluster_role_binding(name, &labels),
            daemon_set: daemon_set(name, &labels, container, pod),
        }
    }

    /// `{apiVersion, kind, [namespace,] name}` of each object (for `providerStatus`).
    pub fn references(&self) -> Vec<Value> {
        vec![
            reference(&self.service_account),
            reference(&self.cluster_role),
            reference(&self.cluster_role_binding),
            reference(&self.daemon_set),
        ]
    }
}

/// `{apiVersion, kind, [namespace,] name}` of an object.
pub fn reference<K: Resource<DynamicType = ()>>(obj: &K) -> Value {
    let mut r = json!({"apiVersion": K::api_version(&()), "kind": K::kind(&()), "name": obj.name_any()});
    if let Some(ns) = obj.namespace() {
        r["namespace"] = json!(ns);
    }
    r
}

/// The app and managed-by labels of the agent `name` of the actuator `component`.
pub fn labels(name: &str, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (APP_LABEL.to_string(), name.to_string()),
        (LABEL_MANAGED_BY.to_string(), format!("{FIELD_MANAGER_PREFIX}-{component}")),
    ])
}

/// Object metadata with `labels`.
pub fn meta(name: &str, namespace: Option<&str>, labels: &BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_string),
        labels: Some(labels.clone()),
        ..Default::default()
    }
}

/// A rule of the core API group.
pub fn core_rule(resource: &str, verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(vec![resource.into()]),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    }
}

/// `NODE_NAME` from the downward API (`spec.nodeName`), for `--node-name=$(NODE_NAME)`.
pub fn node_name_env() -> EnvVar {
    EnvVar {
        name: "NODE_NAME".into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector { field_path: "spec.nodeName".into(), ..Default::default() }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn cluster_role_binding(name: &str, labels: &BTreeMap<String, String>) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(name, None, labels),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: name.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: name.into(),
            namespace: Some(NAMESPACE.into()),
            ..Default::default()
        }]),
    }
}

/// One pod per node, on every node (all taints tolerated, node-critical), as root (the
/// container drops what it does not need) with the runtime's default seccomp profile.
fn daemon_set(name: &str, labels: &BTreeMap<String, String>, container: Container, pod: PodSpec) -> DaemonSet {
    let selector = BTreeMap::from([(APP_LABEL.to_string(), name.to_string())]);
    DaemonSet {
        metadata: meta(name, Some(NAMESPACE), labels),
        spec: Some(DaemonSetSpec {
            selector: LabelSelector { match_labels: Some(selector), ..Default::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels.clone()), ..Default::default() }),
                spec: Some(PodSpec {
                    service_account_name: Some(name.into()),
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
                    ..pod
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}
