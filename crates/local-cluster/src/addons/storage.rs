//! The default StorageClass's provisioner: a PersistentVolumeClaim of the class gets a
//! PersistentVolume backed by a new directory on the host (`<state>/volumes/<pv>`), bound to the
//! node; when the claim is deleted, the volume (reclaim policy `Delete`) is removed with its
//! directory. Data survives the pod: the directory lives as long as the claim.
//!
//! Decisions are pure ([`desired_volume`], [`is_released`]); the controller only reads, decides
//! and writes.

use crate::error::{Error, Result};
use crate::settings::{NODE_NAME, PROVISIONER, STORAGE_CLASS};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The annotation the PV controller sets on a claim to ask a provisioner for a volume.
const STORAGE_PROVISIONER_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// Marks volumes this provisioner made (and may delete).
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";

/// The volume for `claim`, or `None` when the claim is not ours or already bound.
pub fn desired_volume(claim: &PersistentVolumeClaim, volumes_dir: &Path) -> Option<PersistentVolume> {
    let spec = claim.spec.as_ref()?;
    let asked = claim.annotations().get(STORAGE_PROVISIONER_ANNOTATION).map(String::as_str);
    let class_ok = spec.storage_class_name.as_deref() == Some(STORAGE_CLASS);
    if asked != Some(PROVISIONER) || !class_ok || spec.volume_name.as_deref().is_some_and(|v| !v.is_empty()) {
        return None;
    }
    let uid = claim.metadata.uid.as_deref()?;
    let name = format!("pvc-{uid}");
    let capacity = spec.resources.as_ref()?.requests.as_ref()?.get("storage")?.clone();
    let path = volumes_dir.join(&name).display().to_string();
    let pv = serde_json::json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": { "name": name, "annotations": { PROVISIONED_BY: PROVISIONER } },
        "spec": {
            "capacity": { "storage": capacity },
            "accessModes": spec.access_modes.clone().unwrap_or_else(|| vec!["ReadWriteOnce".into()]),
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": STORAGE_CLASS,
            "volumeMode": "Filesystem",
            "claimRef": {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "namespace": claim.namespace(), "name": claim.name_any(), "uid": uid,
            },
            "hostPath": { "path": path, "type": "DirectoryOrCreate" },
            "nodeAffinity": { "required": { "nodeSelectorTerms": [ { "matchExpressions": [
                { "key": "kubernetes.io/hostname", "operator": "In", "values": [NODE_NAME] }
            ] } ] } }
        }
    });
    serde_json::from_value(pv).ok()
}

/// Whether `pv` is ours and released by its claim (to be deleted with its directory).
pub fn is_released(pv: &PersistentVolume) -> bool {
    let ours = pv.annotations().get(PROVISIONED_BY).map(String::as_str) == Some(PROVISIONER);
    let released = pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released");
    let delete = pv.spec.as_ref().and_then(|s| s.persistent_volume_reclaim_policy.as_deref()) == Some("Delete");
    ours && released && delete
}

/// The directory of one of our volumes, only when it lies directly inside `volumes_dir`.
pub fn volume_dir(pv: &PersistentVolume, volumes_dir: &Path) -> Option<PathBuf> {
    let path = PathBuf::from(&pv.spec.as_ref()?.host_path.as_ref()?.path);
    (path.parent() == Some(volumes_dir)).then_some(path)
}

struct Ctx {
    client: Client,
    volumes_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error("{0}")]
    Kube(String, #[source] kube::Error),
    #[error("{0}")]
    Io(String, #[source] std::io::Error),
}

async fn reconcile_claim(claim: Arc<PersistentVolumeClaim>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let Some(pv) = desired_volume(&claim, &ctx.volumes_dir) else { return Ok(Action::await_change()) };
    let name = pv.name_any();
    let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
    if let Some(dir) = volume_dir(&pv, &ctx.volumes_dir) {
        std::fs::create_dir_all(&dir).map_err(|e| ReconcileError::Io(format!("creating {}", dir.display()), e))?;
    }
    match api.create(&PostParams::default(), &pv).await {
        Ok(_) => tracing::info!(claim = %claim.name_any(), volume = %name, "provisioned"),
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(ReconcileError::Kube(format!("creating PersistentVolume {name}"), e)),
    }
    Ok(Action::await_change())
}

async fn reconcile_volume(pv: Arc<PersistentVolume>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    if !is_released(&pv) {
        return Ok(Action::await_change());
    }
    if let Some(dir) = volume_dir(&pv, &ctx.volumes_dir) {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ReconcileError::Io(format!("removing {}", dir.display()), e)),
        }
    }
    let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match api.delete(&pv.name_any(), &DeleteParams::default()).await {
        Ok(_) => tracing::info!(volume = %pv.name_any(), "deleted with its directory"),
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(ReconcileError::Kube(format!("deleting PersistentVolume {}", pv.name_any()), e)),
    }
    Ok(Action::await_change())
}

fn retry<K>(_: Arc<K>, error: &ReconcileError, _: Arc<Ctx>) -> Action {
    tracing::warn!(error = %crate::report(error), "storage provisioner");
    Action::requeue(Duration::from_secs(5))
}

/// Runs the provisioner until the process ends.
pub async fn run(client: Client, volumes_dir: PathBuf) -> Result<()> {
    std::fs::create_dir_all(&volumes_dir).map_err(Error::io("creating the volumes directory", &volumes_dir))?;
    let ctx = Arc::new(Ctx { client: client.clone(), volumes_dir });
    let claims = Controller::new(Api::<PersistentVolumeClaim>::all(client.clone()), watcher::Config::default())
        .run(reconcile_claim, retry, ctx.clone())
        .for_each(|_| futures::future::ready(()));
    let volumes = Controller::new(Api::<PersistentVolume>::all(client), watcher::Config::default())
        .run(reconcile_volume, retry, ctx)
        .for_each(|_| futures::future::ready(()));
    futures::join!(claims, volumes);
    Ok(())
}

use futures::StreamExt;

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(yaml: &str) -> PersistentVolumeClaim {
        serde_yaml::from_str(yaml).expect("claim")
    }

    const OURS: &str = "metadata:\n  name: data\n  namespace: ns\n  uid: 1234\n  annotations:\n    volume.beta.kubernetes.io/storage-provisioner: local-cluster.gardener.cloud/host-path\nspec:\n  storageClassName: local-path\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n";

    #[test]
    fn provisions_a_host_path_volume_for_our_claims_only() {
        let pv = desired_volume(&claim(OURS), Path::new("/v")).expect("a volume");
        assert_eq!(pv.name_any(), "pvc-1234");
        let spec = pv.spec.as_ref().expect("spec");
        assert_eq!(spec.host_path.as_ref().map(|h| h.path.as_str()), Some("/v/pvc-1234"));
        assert_eq!(spec.claim_ref.as_ref().and_then(|c| c.uid.as_deref()), Some("1234"));
        assert_eq!(volume_dir(&pv, Path::new("/v")), Some(PathBuf::from("/v/pvc-1234")));
        assert_eq!(volume_dir(&pv, Path::new("/elsewhere")), None);

        let other = OURS.replace("local-path", "fast");
        assert!(desired_volume(&claim(&other), Path::new("/v")).is_none());
        let bound = format!("{OURS}  volumeName: pvc-1234\n");
        assert!(desired_volume(&claim(&bound), Path::new("/v")).is_none());
    }

    #[test]
    fn only_released_volumes_of_ours_with_delete_policy_go() {
        let mut pv = desired_volume(&claim(OURS), Path::new("/v")).expect("a volume");
        assert!(!is_released(&pv));
        pv.status = Some(k8s_openapi::api::core::v1::PersistentVolumeStatus {
            phase: Some("Released".into()),
            ..Default::default()
        });
        assert!(is_released(&pv));
        pv.metadata.annotations = None;
        assert!(!is_released(&pv));
    }
}
