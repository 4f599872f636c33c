//! What the ControlPlane deploys into a shoot, pure: the default StorageClass and the volume
//! provisioner ([`crate::volume_provisioner`]) as a DaemonSet in `kube-system` with its
//! ServiceAccount and least-privilege RBAC. Gardener's provider-local deploys
//! local-path-provisioner the same way.

use crate::node_agent::{self, Agent, BINARY, core_rule, labels, meta, node_name_env};
use crate::volume_provisioner::{PROVISIONER, STORAGE_CLASS, VOLUMES_DIR};
use extension_sdk::k8s_openapi::api::apps::v1::DaemonSet;
use extension_sdk::k8s_openapi::api::core::v1::{
    Capabilities, Container, HostPathVolumeSource, PodSpec, ResourceRequirements, SecurityContext, ServiceAccount,
    Volume, VolumeMount,
};
use extension_sdk::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
use extension_sdk::k8s_openapi::api::storage::v1::StorageClass;
use extension_sdk::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::Value;
use std::collections::BTreeMap;

/// Name of the ServiceAccount, ClusterRole, ClusterRoleBinding and DaemonSet.
pub const NAME: &str = "provider-local-volume-provisioner";
/// Where the namespaced objects go.
pub const NAMESPACE: &str = node_agent::NAMESPACE;
/// Marks a StorageClass as the one claims without `storageClassName` get.
pub const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";

/// Everything deployed into a shoot, in the order it is applied: the StorageClass, then the
/// provisioner ([`Agent`]: RBAC before the pods that need it).
#[derive(Clone, Debug)]
pub struct Objects {
    pub storage_class: StorageClass,
    pub agent: Agent,
}

impl Objects {
    /// The objects for the provisioner image `image` (provider-local's own).
    pub fn new(image: &str) -> Self {
        Self { storage_class: storage_class(), agent: agent(image) }
    }

    /// `{apiVersion, kind, [namespace,] name}` of each object: `providerStatus.managedResources`.
    pub fn references(&self) -> Vec<Value> {
        let mut refs = vec![node_agent::reference(&self.storage_class)];
        refs.extend(self.agent.references());
        refs
    }
}

/// The default StorageClass: volumes are made once a pod using the claim is scheduled (so the
/// provisioner of that pod's node makes it), and deleted with the claim.
pub fn storage_class() -> StorageClass {
    let mut metadata = meta(STORAGE_CLASS, None, &labels(NAME, super::COMPONENT));
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
    agent("").service_account
}

/// Exactly what the provisioner calls: it watches claims and volumes, creates volumes and
/// deletes released ones. No Events, no Secrets, no Nodes.
pub fn rules() -> Vec<PolicyRule> {
    vec![
        core_rule("persistentvolumes", &["create", "delete", "get", "list", "watch"]),
        core_rule("persistentvolumeclaims", &["get", "list", "watch"]),
    ]
}

pub fn cluster_role() -> ClusterRole {
    agent("").cluster_role
}

pub fn cluster_role_binding() -> ClusterRoleBinding {
    agent("").cluster_role_binding
}

/// One provisioner pod per node ([`node_agent`]): the node's name from the downward API, the
/// node's volumes directory mounted at the same path.
///
/// It runs as root, without privilege escalation and on a read-only root file system, with only
/// the capabilities a root process needs for other users' files: `DAC_OVERRIDE` to remove a
/// volume's directory whatever the workload wrote into it, `FOWNER` for sticky directories in it.
pub fn daemon_set(image: &str) -> DaemonSet {
    agent(image).daemon_set
}

fn agent(image: &str) -> Agent {
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
        env: Some(vec![node_name_env()]),
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
    let pod = PodSpec {
        volumes: Some(vec![Volume {
            name: "volumes".into(),
            host_path: Some(HostPathVolumeSource { path: VOLUMES_DIR.into(), type_: Some("DirectoryOrCreate".into()) }),
            ..Default::default()
        }]),
        ..Default::default()
    };
    Agent::new(NAME, super::COMPONENT, rules(), container, pod)
}

#[cfg(test)]
mod tests;
