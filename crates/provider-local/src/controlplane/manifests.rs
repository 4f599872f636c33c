//! What the ControlPlane deploys into a shoot, pure: the default StorageClass and the volume
//! provisioner ([`crate::volume_provisioner`]) as a DaemonSet in `kube-system` with its
//! ServiceAccount and least-privilege RBAC. Gardener's provider-local deploys
//! local-path-provisioner the same way.

use crate::common::{FIELD_MANAGER_PREFIX, LABEL_MANAGED_BY};
use crate::volume_provisioner::{PROVISIONER, STORAGE_CLASS, VOLUMES_DIR};
use extension_sdk::k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec};
use extension_sdk::k8s_openapi::api::core::v1::{
    Capabilities, Container, EnvVar, EnvVarSource, HostPathVolumeSource, ObjectFieldSelector, PodSecurityContext,
    PodSpec, PodTemplateSpec, ResourceRequirements, SeccompProfile, SecurityContext, ServiceAccount, Toleration,
    Volume, VolumeMount,
};
use extension_sdk::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use extension_sdk::k8s_openapi::api::storage::v1::StorageClass;
use extension_sdk::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use extension_sdk::kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Name of the ServiceAccount, ClusterRole, ClusterRoleBinding and DaemonSet.
pub const NAME: &str = "provider-local-volume-provisioner";
/// Where the namespaced objects go.
pub const NAMESPACE: &str = "kube-system";
/// Marks a StorageClass as the one claims without `storageClassName` get.
pub const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
/// The binary in provider-local's image (images/gardener-component).
const BINARY: &str = "/usr/local/bin/gardener-extension-provider-local";
const APP_LABEL: &str = "app.kubernetes.io/name";

/// Everything deployed into a shoot, in the order it is applied (RBAC before the pods that
/// need it).
#[derive(Clone, Debug)]
pub struct Objects {
    pub storage_class: StorageClass,
    pub service_account: ServiceAccount,
    pub cluster_role: ClusterRole,
    pub cluster_role_binding: ClusterRoleBinding,
    pub daemon_set: DaemonSet,
}

impl Objects {
    /// The objects for the provisioner image `image` (provider-local's own).
    pub fn new(image: &str) -> Self {
        Self {
            storage_class: storage_class(),
            service_account: service_account(),
            cluster_role: cluster_role(),
            cluster_role_binding: cluster_role_binding(),
            daemon_set: daemon_set(image),
        }
    }

    /// `{apiVersion, kind, [namespace,] name}` of each object: `providerStatus.managedResources`.
    pub fn references(&self) -> Vec<Value> {
        vec![
            reference(&self.storage_class),
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

/// The default StorageClass: volumes are made once a pod using the claim is scheduled (so the
/// provisioner of that pod's node makes it), and deleted with the claim.
pub fn storage_class() -> StorageClass {
    let mut metadata = meta(STORAGE_CLASS, None);
    metadata.annotations = Some(BTreeMap::from([(DEFAULT_CLASS_ANNOTATION.to_string(), "true".to_string())]));
    StorageClass {
        metadata,
        provisioner: PROVISIONER.into(),
        reclaim_policy: Some("Delete".into()),
        volume_binding_mode: Some("WaitForFirstConsumer".into()),
        ..Default::default()
    }
}

pub fn service_account() -> ServiceAccount {
    ServiceAccount { metadata: meta(NAME, Some(NAMESPACE)), ..Default::default() }
}

/// Exactly what the provisioner calls: it watches claims and volumes, creates volumes and
/// deletes released ones. No Events, no Secrets, no Nodes.
pub fn rules() -> Vec<PolicyRule> {
    let rule = |resource: &str, verbs: &[&str]| PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(vec![resource.into()]),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    };
    vec![
        rule("persistentvolumes", &["create", "delete", "get", "list", "watch"]),
        rule("persistentvolumeclaims", &["get", "list", "watch"]),
    ]
}

pub fn cluster_role() -> ClusterRole {
    ClusterRole { metadata: meta(NAME, None), rules: Some(rules()), ..Default::default() }
}

pub fn cluster_role_binding() -> ClusterRoleBinding {
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

/// One provisioner pod per node, on every node (all taints tolerated): the node's name from the
/// downward API, the node's volumes directory mounted at the same path.
///
/// It runs as root, without privilege escalation and on a read-only root file system, with only
/// the capabilities a root process needs for other users' files: `DAC_OVERRIDE` to remove a
/// volume's directory whatever the workload wrote into it, `FOWNER` for sticky directories in it.
pub fn daemon_set(image: &str) -> DaemonSet {
    let selector = BTreeMap::from([(APP_LABEL.to_string(), NAME.to_string())]);
    let quantities = |pairs: &[(&str, &str)]| -> BTreeMap<String, Quantity> {
        pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()
    };
    let container = Container {
        name: "provisioner".into(),
        image: Some(image.into()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(vec![
            BINARY.into(),
            "volume-provisioner".into(),
            "--node-name=$(NODE_NAME)".into(),
            format!("--volumes-dir={VOLUMES_DIR}"),
        ]),
        env: Some(vec![EnvVar {
            name: "NODE_NAME".into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector { field_path: "spec.nodeName".into(), ..Default::default() }),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        resources: Some(ResourceRequirements {
            requests: Some(quantities(&[("cpu", "10m"), ("memory", "24Mi")])),
            limits: Some(quantities(&[("memory", "128Mi")])),
            ..Default::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                add: Some(vec!["DAC_OVERRIDE".into(), "FOWNER".into()]),
                drop: Some(vec!["ALL".into()]),
            }),
            ..Default::default()
        }),
        volume_mounts: Some(vec![VolumeMount {
            name: "volumes".into(),
            mount_path: VOLUMES_DIR.into(),
            ..Default::default()
        }]),
        ..Default::default()
    };
    DaemonSet {
        metadata: meta(NAME, Some(NAMESPACE)),
        spec: Some(DaemonSetSpec {
            selector: LabelSelector { match_labels: Some(selector), ..Default::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels()), ..Default::default() }),
                spec: Some(PodSpec {
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
                    volumes: Some(vec![Volume {
                        name: "volumes".into(),
                        host_path: Some(HostPathVolumeSource {
                            path: VOLUMES_DIR.into(),
                            type_: Some("DirectoryOrCreate".into()),
                        }),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
