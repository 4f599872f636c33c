//! The provisioner's decisions, pure: which claims this process provisions, the volume it makes
//! for one, and which volumes it deletes (with which directory).

use crate::{
    Config, HOSTNAME_LABEL, PROVISIONED_BY_ANNOTATION, SELECTED_NODE_ANNOTATION, STORAGE_PROVISIONER_ANNOTATION,
    Topology,
};
use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference, PersistentVolume,
    PersistentVolumeClaim, PersistentVolumeSpec, VolumeNodeAffinity,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Whether this process provisions `claim`: the PV controller asked this provisioner for it,
/// it is of the class, not bound yet, and (with [`Topology::PerNode`]) the scheduler selected
/// this node for it.
pub fn is_ours_to_provision(claim: &PersistentVolumeClaim, config: &Config) -> bool {
    let Some(spec) = claim.spec.as_ref() else { return false };
    let annotations = claim.annotations();
    let asked = annotations.get(STORAGE_PROVISIONER_ANNOTATION) == Some(&config.provisioner);
    let class = spec.storage_class_name.as_deref() == Some(config.storage_class.as_str());
    let bound = spec.volume_name.as_deref().is_some_and(|v| !v.is_empty());
    let node = match config.topology {
        Topology::SingleNode => true,
        Topology::PerNode => annotations.get(SELECTED_NODE_ANNOTATION) == Some(&config.node_name),
    };
    asked && class && !bound && node
}

/// The volume for `claim`, or `None` when the claim is not this process's to provision (see
/// [`is_ours_to_provision`]) or asks for no storage size. The volume is `pvc-<claim uid>`, a
/// `hostPath` directory (`DirectoryOrCreate`) in the volumes directory, bound to the claim and
/// pinned to this node.
pub fn desired_volume(claim: &PersistentVolumeClaim, config: &Config) -> Option<PersistentVolume> {
    if !is_ours_to_provision(claim, config) {
        return None;
    }
    let spec = claim.spec.as_ref()?;
    let uid = claim.metadata.uid.as_deref()?;
    let name = format!("pvc-{uid}");
    let capacity = spec.resources.as_ref()?.requests.as_ref()?.get("storage")?.clone();
    let path = config.volumes_dir.join(&name).display().to_string();
    Some(PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name),
            annotations: Some(BTreeMap::from([(PROVISIONED_BY_ANNOTATION.to_string(), config.provisioner.clone())])),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(BTreeMap::from([("storage".to_string(), capacity)])),
            access_modes: Some(spec.access_modes.clone().unwrap_or_else(|| vec!["ReadWriteOnce".into()])),
            persistent_volume_reclaim_policy: Some("Delete".into()),
            storage_class_name: Some(config.storage_class.clone()),
            volume_mode: Some("Filesystem".into()),
            claim_ref: Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("PersistentVolumeClaim".into()),
                namespace: claim.namespace(),
                name: Some(claim.name_any()),
                uid: Some(uid.to_string()),
                ..Default::default()
            }),
            host_path: Some(HostPathVolumeSource { path, type_: Some("DirectoryOrCreate".into()) }),
            node_affinity: Some(VolumeNodeAffinity {
                required: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(vec![NodeSelectorRequirement {
                            key: HOSTNAME_LABEL.into(),
                            operator: "In".into(),
                            values: Some(vec![config.node_name.clone()]),
                        }]),
                        ..Default::default()
                    }],
                }),
            }),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// The node a volume is pinned to: the one value of its `kubernetes.io/hostname In [...]`
/// node affinity, as [`desired_volume`] writes it.
pub fn volume_node(pv: &PersistentVolume) -> Option<&str> {
    let terms = &pv.spec.as_ref()?.node_affinity.as_ref()?.required.as_ref()?.node_selector_terms;
    let [term] = terms.as_slice() else { return None };
    let [requirement] = term.match_expressions.as_deref()? else { return None };
    let [value] = requirement.values.as_deref()? else { return None };
    (requirement.key == HOSTNAME_LABEL && requirement.operator == "In").then_some(value.as_str())
}

/// Whether `pv` was made by `provisioner` and is released by its claim with reclaim policy
/// `Delete` (to be deleted with its directory).
pub fn is_released(pv: &PersistentVolume, provisioner: &str) -> bool {
    let ours = pv.annotations().get(PROVISIONED_BY_ANNOTATION).map(String::as_str) == Some(provisioner);
    let released = pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released");
    let delete = pv.spec.as_ref().and_then(|s| s.persistent_volume_reclaim_policy.as_deref()) == Some("Delete");
    ours && released && delete
}

/// Whether this process deletes `pv`: it is released (see [`is_released`]) and, with
/// [`Topology::PerNode`], pinned to this node, where its directory is.
pub fn is_ours_to_delete(pv: &PersistentVolume, config: &Config) -> bool {
    let node = match config.topology {
        Topology::SingleNode => true,
        Topology::PerNode => volume_node(pv) == Some(config.node_name.as_str()),
    };
    node && is_released(pv, &config.provisioner)
}

/// Why a volume's directory is not one this provisioner creates or deletes.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    /// The volume has no `hostPath`.
    #[error("the volume has no hostPath")]
    NoHostPath,
    /// A `..` component could lead anywhere (`<dir>/..` is the volumes directory's parent).
    #[error("{} has a `..` component", .0.display())]
    ParentComponent(PathBuf),
    /// The volumes directory itself holds every volume.
    #[error("{} is the volumes directory itself", .0.display())]
    VolumesDir(PathBuf),
    /// Only a directory directly inside the volumes directory is a volume's.
    #[error("{} is not directly inside the volumes directory {}", .0.display(), .1.display())]
    NotInside(PathBuf, PathBuf),
    /// The directory is a symbolic link (deleting through it could reach anything).
    #[error("{} is a symbolic link", .0.display())]
    Symlink(PathBuf),
}

/// Whether `path` is a volume directory this provisioner may create or delete: exactly one
/// plain component below `volumes_dir`, with no `..` anywhere (compared by components, so no
/// `..` can climb out, however written) and not the volumes directory itself.
pub fn check_volume_path(path: &Path, volumes_dir: &Path) -> Result<(), PathRefusal> {
    if path.components().chain(volumes_dir.components()).any(|c| c == Component::ParentDir) {
        return Err(PathRefusal::ParentComponent(path.to_path_buf()));
    }
    let Ok(rest) = path.strip_prefix(volumes_dir) else {
        return Err(PathRefusal::NotInside(path.to_path_buf(), volumes_dir.to_path_buf()));
    };
    let mut components = rest.components();
    match (components.next(), components.next()) {
        (None, _) => Err(PathRefusal::VolumesDir(path.to_path_buf())),
        (Some(Component::Normal(_)), None) => Ok(()),
        _ => Err(PathRefusal::NotInside(path.to_path_buf(), volumes_dir.to_path_buf())),
    }
}

/// The directory of one of our volumes, only when [`check_volume_path`] accepts it (a volume
/// naming any other path is never touched).
pub fn volume_dir(pv: &PersistentVolume, volumes_dir: &Path) -> Result<PathBuf, PathRefusal> {
    let host_path = pv.spec.as_ref().and_then(|s| s.host_path.as_ref()).ok_or(PathRefusal::NoHostPath)?;
    let path = PathBuf::from(&host_path.path);
    check_volume_path(&path, volumes_dir)?;
    Ok(path)
}

#[cfg(test)]
mod tests;
