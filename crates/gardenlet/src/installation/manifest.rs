//! What a `manifest` ControllerDeployment asks gardenlet to put into the seed, as pure
//! functions: parse and check `providerConfig.manifests`, place namespaced objects, label
//! everything with the installation, order the writes, and work out which objects of the last
//! installation are stale. The I/O is in [`super::reconcile`].

use api::core::ControllerDeployment;
use api::core::controller::{DEPLOYMENT_TYPE_MANIFEST, LABEL_CONTROLLER_INSTALLATION, ManifestDeployment};
use kube::ResourceExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One object to deploy.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    pub id: ObjectId,
    pub object: Value,
}

/// Which object: what the inventory in the installation's `status.providerStatus` records.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectId {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// Why a ControllerDeployment cannot be installed; every message names the deployment and the
/// field.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Invalid {
    #[error(
        "ControllerDeployment {deployment}: type {type_:?} is not installed by gardenlet (it has no Helm engine); use type \"manifest\" with the rendered objects in providerConfig.manifests"
    )]
    UnsupportedType { deployment: String, type_: String },
    #[error("ControllerDeployment {deployment}: providerConfig: {problem}")]
    ProviderConfig { deployment: String, problem: String },
    #[error("ControllerDeployment {deployment}: providerConfig.manifests[{index}].{field}: {problem}")]
    Field { deployment: String, index: usize, field: &'static str, problem: String },
}

/// The namespace namespaced objects without one go into (Gardener's convention).
pub fn namespace_for(installation: &str) -> String {
    format!("extension-{installation}")
}

/// The annotation of a ControllerRegistration or ControllerInstallation (the installation's
/// wins) that sets the pod security level of the installation's namespace, as Gardener's
/// `v1beta1constants.AnnotationPodSecurityEnforce`. The garden's admission server enforces the
/// level (baseline when unset), so an extension that needs more (provider-local mounts a host
/// directory) asks for `privileged` with it.
pub const ANNOTATION_POD_SECURITY_ENFORCE: &str = "security.gardener.cloud/pod-security-enforce";
/// The namespace label that carries the level.
pub const LABEL_POD_SECURITY_ENFORCE: &str = "pod-security.kubernetes.io/enforce";

/// Labels the installation's namespace among `manifests` with pod security `level`; without a
/// level it carries no such label (an earlier one goes with the next apply).
pub fn set_pod_security(manifests: &mut [Manifest], installation: &str, level: Option<&str>) {
    let namespace = namespace_for(installation);
    let Some(level) = level else { return };
    for m in manifests.iter_mut().filter(|m| m.id.kind == "Namespace" && m.id.name == namespace) {
        if !m.object["metadata"]["labels"].is_object() {
            m.object["metadata"]["labels"] = json!({});
        }
        m.object["metadata"]["labels"][LABEL_POD_SECURITY_ENFORCE] = json!(level);
    }
}

/// The objects of a ControllerDeployment, checked: each a map with `apiVersion`, `kind` and
/// `metadata.name`, no object twice.
pub fn parse(deployment: &ControllerDeployment) -> Result<Vec<Manifest>, Invalid> {
    let name = deployment.name_any();
    if deployment.spec.type_ != DEPLOYMENT_TYPE_MANIFEST {
        return Err(Invalid::UnsupportedType { deployment: name, type_: deployment.spec.type_.clone() });
    }
    let config: ManifestDeployment = match &deployment.spec.provider_config {
        None => return Err(Invalid::ProviderConfig { deployment: name, problem: "missing".into() }),
        Some(c) => {
            c.decode().map_err(|e| Invalid::ProviderConfig { deployment: name.clone(), problem: e.to_string() })?
        }
    };
    if config.manifests.is_empty() {
        return Err(Invalid::ProviderConfig { deployment: name, problem: "manifests: no objects".into() });
    }
    let mut out: Vec<Manifest> = Vec::with_capacity(config.manifests.len());
    for (index, raw) in config.manifests.into_iter().enumerate() {
        let field = |field: &'static str, problem: &str| Invalid::Field {
            deployment: name.clone(),
            index,
            field,
            problem: problem.to_string(),
        };
        let object = raw.0;
        if !object.is_object() {
            return Err(field("kind", "not an object"));
        }
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty());
        let api_version = text("/apiVersion").ok_or_else(|| field("apiVersion", "required"))?.to_string();
        let kind = text("/kind").ok_or_else(|| field("kind", "required"))?.to_string();
        let object_name = text("/metadata/name").ok_or_else(|| field("metadata.name", "required"))?.to_string();
        if object.pointer("/metadata/generateName").is_some() {
            return Err(field("metadata.generateName", "not supported: every object needs a fixed name"));
        }
        let namespace = text("/metadata/namespace").map(str::to_string);
        let id = ObjectId { api_version, kind, namespace, name: object_name };
        if let Some(first) = out.iter().position(|m| same_object(&m.id, &id)) {
            return Err(field("metadata.name", &format!("{id} is already manifests[{first}]")));
        }
        out.push(Manifest { id, object });
    }
    Ok(out)
}

fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The same object, whatever version of its group names it.
fn same_object(a: &ObjectId, b: &ObjectId) -> bool {
    group(&a.api_version) == group(&b.api_version) && a.kind == b.kind && a.namespace == b.namespace && a.name == b.name
}

/// Makes the manifests ready to apply: namespaced objects without a namespace (and
/// ServiceAccount subjects of role bindings without one) go into `namespace`, which is added
/// as a Namespace object when something uses it; cluster-scoped objects lose a namespace they
/// should not have; every object gets the installation label. `namespaced(apiVersion, kind)`
/// answers from the seed's discovery (`None`: the seed does not serve the kind).
pub fn prepare(
    manifests: Vec<Manifest>,
    installation: &str,
    namespaced: impl Fn(&str, &str) -> Option<bool>,
) -> Result<Vec<Manifest>, String> {
    let namespace = namespace_for(installation);
    let mut out = Vec::with_capacity(manifests.len() + 1);
    let mut uses_namespace = false;
    for mut m in manifests {
        let scoped = namespaced(&m.id.api_version, &m.id.kind)
            .ok_or_else(|| format!("{}: the seed does not serve kind {} of {}", m.id, m.id.kind, m.id.api_version))?;
        if scoped {
            if m.id.namespace.is_none() {
                m.id.namespace = Some(namespace.clone());
            }
            uses_namespace |= m.id.namespace.as_deref() == Some(namespace.as_str());
        } else {
            m.id.namespace = None;
        }
        let metadata = &mut m.object["metadata"];
        match &m.id.namespace {
            Some(ns) => metadata["namespace"] = json!(ns),
            None => {
                if let Some(map) = metadata.as_object_mut() {
                    map.remove("namespace");
                }
            }
        }
        if !metadata["labels"].is_object() {
            metadata["labels"] = json!({});
        }
        metadata["labels"][LABEL_CONTROLLER_INSTALLATION] = json!(installation);
        if matches!(m.id.kind.as_str(), "RoleBinding" | "ClusterRoleBinding")
            && let Some(subjects) = m.object.get_mut("subjects").and_then(Value::as_array_mut)
        {
            for subject in subjects {
                if subject["kind"] == "ServiceAccount" && subject.get("namespace").is_none_or(Value::is_null) {
                    subject["namespace"] = json!(namespace);
                    uses_namespace = true;
                }
            }
        }
        out.push(m);
    }
    let declared = out.iter().any(|m| m.id.kind == "Namespace" && m.id.api_version == "v1" && m.id.name == namespace);
    if uses_namespace && !declared {
        let id =
            ObjectId { api_version: "v1".into(), kind: "Namespace".into(), namespace: None, name: namespace.clone() };
        let object = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": namespace, "labels": {LABEL_CONTROLLER_INSTALLATION: installation, "gardener.cloud/role": "extension"}},
        });
        out.push(Manifest { id, object });
    }
    out.sort_by_key(|m| rank(&m.id.kind));
    Ok(out)
}

/// Write order: what others refer to first (namespaces, CRDs, identities, permissions), the
/// workloads after, webhooks that could intercept the writes last. Deletion is the reverse.
pub fn rank(kind: &str) -> u8 {
    match kind {
        "Namespace" => 0,
        "CustomResourceDefinition" => 1,
        "PriorityClass" | "ServiceAccount" | "ClusterRole" | "Role" | "ConfigMap" | "Secret" => 2,
        "ClusterRoleBinding" | "RoleBinding" => 3,
        "Deployment" | "StatefulSet" | "DaemonSet" => 5,
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => 6,
        _ => 4,
    }
}

/// Objects of the previous inventory the current one no longer has, in deletion order.
pub fn stale(previous: &[ObjectId], current: &[ObjectId]) -> Vec<ObjectId> {
    let mut out: Vec<ObjectId> =
        previous.iter().filter(|p| !current.iter().any(|c| same_object(p, c))).cloned().collect();
    out.sort_by_key(|id| std::cmp::Reverse(rank(&id.kind)));
    out
}

/// Everything of an inventory, in deletion order.
pub fn deletion_order(inventory: &[ObjectId]) -> Vec<ObjectId> {
    stale(inventory, &[])
}

/// The inventory recorded in an installation's `status.providerStatus`.
pub fn inventory(provider_status: Option<&Value>) -> Vec<ObjectId> {
    provider_status
        .and_then(|s| s.get("inventory"))
        .and_then(|i| serde_json::from_value(i.clone()).ok())
        .unwrap_or_default()
}

/// The `status.providerStatus` recording an inventory.
pub fn provider_status(inventory: &[ObjectId]) -> Value {
    json!({ "inventory": inventory })
}

#[cfg(test)]
mod tests;
