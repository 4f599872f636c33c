//! The controller: two kube-runtime controllers in one process, one over claims (create the
//! directory, then the volume) and one over volumes (delete a released volume's directory,
//! then the volume). Each reads, asks [`crate::decide`], and writes; a failed step is retried
//! after a few seconds.

use crate::Config;
use crate::decide::{PathRefusal, desired_volume, is_ours_to_delete, volume_dir};
use crate::error::{Error, chain};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long a failed step waits before it is tried again.
const RETRY: Duration = Duration::from_secs(5);

struct Ctx {
    client: Client,
    config: Config,
}

#[tracing::instrument(skip_all, fields(claim = %format!("{}/{}", claim.namespace().unwrap_or_default(), claim.name_any())))]
async fn reconcile_claim(claim: Arc<PersistentVolumeClaim>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let Some(pv) = desired_volume(&claim, &ctx.config) else { return Ok(Action::await_change()) };
    let name = pv.name_any();
    if let Ok(dir) = volume_dir(&pv, &ctx.config.volumes_dir) {
        std::fs::create_dir_all(&dir).map_err(Error::io("creating the volume directory", &dir))?;
    }
    let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match api.create(&PostParams::default(), &pv).await {
        Ok(_) => tracing::info!(volume = %name, node = %ctx.config.node_name, "provisioned"),
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(Error::kube(format!("creating PersistentVolume {name}"))(e)),
    }
    Ok(Action::await_change())
}

#[tracing::instrument(skip_all, fields(volume = %pv.name_any()))]
async fn reconcile_volume(pv: Arc<PersistentVolume>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    if !is_ours_to_delete(&pv, &ctx.config) {
        return Ok(Action::await_change());
    }
    match volume_dir(&pv, &ctx.config.volumes_dir).and_then(|dir| not_a_symlink(&dir).map(|()| dir)) {
        Ok(dir) => match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("removing the volume directory", &dir)(e)),
        },
        Err(PathRefusal::NoHostPath) => {}
        Err(refusal) => tracing::warn!(%refusal, "not removing the volume's directory"),
    }
    let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match api.delete(&pv.name_any(), &DeleteParams::default()).await {
        Ok(_) => tracing::info!("deleted with its directory"),
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(Error::kube(format!("deleting PersistentVolume {}", pv.name_any()))(e)),
    }
    Ok(Action::await_change())
}

/// Refuses a volume directory that is a symbolic link (a directory that does not exist is not
/// one: there is nothing to remove).
fn not_a_symlink(dir: &Path) -> Result<(), PathRefusal> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => Err(PathRefusal::Symlink(dir.to_path_buf())),
        _ => Ok(()),
    }
}

fn retry<K>(_: Arc<K>, error: &Error, _: Arc<Ctx>) -> Action {
    tracing::warn!(error = %chain(error), "volume provisioner; retrying");
    Action::requeue(RETRY)
}

/// Runs the provisioner until the process ends: creates the volumes directory, then serves
/// claims and volumes as `config` says. Fails only when the directory cannot be created.
pub async fn run(client: Client, config: Config) -> Result<(), Error> {
    std::fs::create_dir_all(&config.volumes_dir)
        .map_err(Error::io("creating the volumes directory", &config.volumes_dir))?;
    tracing::info!(
        provisioner = %config.provisioner,
        storage_class = %config.storage_class,
        node = %config.node_name,
        volumes_dir = %config.volumes_dir.display(),
        topology = ?config.topology,
        "volume provisioner starting"
    );
    let ctx = Arc::new(Ctx { client: client.clone(), config });
    let claims = Controller::new(Api::<PersistentVolumeClaim>::all(client.clone()), watcher::Config::default())
        .run(reconcile_claim, retry, ctx.clone())
        .for_each(|_| futures::future::ready(()));
    let volumes = Controller::new(Api::<PersistentVolume>::all(client), watcher::Config::default())
        .run(reconcile_volume, retry, ctx)
        .for_each(|_| futures::future::ready(()));
    futures::join!(claims, volumes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_volume_directory_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let real = tmp.path().join("pvc-1");
        std::fs::create_dir(&real).expect("mkdir");
        assert_eq!(not_a_symlink(&real), Ok(()));
        assert_eq!(not_a_symlink(&tmp.path().join("pvc-gone")), Ok(()));
        let outside = tempfile::tempdir().expect("tempdir");
        let link = tmp.path().join("pvc-2");
        std::os::unix::fs::symlink(outside.path(), &link).expect("symlink");
        assert_eq!(not_a_symlink(&link), Err(PathRefusal::Symlink(link.clone())));
    }
}
