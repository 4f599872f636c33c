//! The migration flow on the source seed (the shoot's `spec.seedName` names another seed while
//! `status.seedName` still names this one):
//!
//! 1. every extension object is migrated (the provider lets go of it without touching real
//!    infrastructure) and its state is written to the ShootState;
//! 2. kube-apiserver, kube-controller-manager and kube-scheduler are scaled to zero, so nothing
//!    writes to etcd any more;
//! 3. a final etcd snapshot is taken through etcd's snapshot API into the backup entry and
//!    recorded in the ShootState;
//! 4. the BackupEntry is migrated, then the migrated objects, the control plane, etcd, the
//!    Cluster and the namespace are deleted (a migrated object has no finalizer left, so its
//!    deletion removes nothing outside this seed).
//!
//! The controller hands the shoot over (`status.seedName`) only after the whole flow
//! succeeded. Every step can run again after an interruption.

use crate::components::{etcd, kube_apiserver, kube_controller_manager, kube_scheduler};
use crate::flow::{Flow, FlowBuilder, GraphError, TaskError};
use crate::shoot::backup::{self, SnapshotRecord};
use crate::shoot::flows::delete::{
    delete_all, delete_cluster, delete_control_plane, delete_etcd, delete_extension_backup_entry, delete_namespace,
};
use crate::shoot::objects::extensions as ext;
use crate::shoot::operation::apply::{deploy_err, t, task_err, wait_for};
use crate::shoot::operation::context::OperationContext;
use crate::shoot::operation::readiness as checks;
use crate::shootstate_sync;
use api::extensions::{
    BackupEntry, ContainerRuntime, ControlPlane, DNSRecord, Extension, Infrastructure, Network, OperatingSystemConfig,
    Worker,
};
use etcd_backup::gateway::{Etcd, EtcdClientTls};
use extension_sdk::kinds::ExtensionResource;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use std::path::Path;
use std::sync::Arc;

/// Migrates every object of kind `K` in the shoot namespace and copies its state to the
/// ShootState (the periodic sync may lag; the hand-over must not).
async fn migrate_all<K>(ctx: Arc<OperationContext>) -> Result<(), TaskError>
where
    K: ExtensionResource<KindScope = NamespaceResourceScope> + api::extensions::ExtensionKind,
{
    let ns = ctx.values.namespace();
    let api: Api<K> = Api::namespaced(ctx.seed.clone(), ns);
    for obj in api.list(&ListParams::default()).await.map_err(task_err)? {
        if obj.meta().deletion_timestamp.is_some() {
            continue;
        }
        let Some(migrated) = ctx.deployer.migrate_and_wait::<K>(Some(ns), &obj.name_any()).await.map_err(deploy_err)?
        else {
            continue;
        };
        shootstate_sync::sync_object(&ctx.garden, &migrated, shootstate_sync::SAFE_SIZE_BYTES, &ctx.config.seed.name)
            .await
            .map_err(task_err)?;
    }
    Ok(())
}

/// Runs `$task::<K>` for the Worker first (its state, the machines, is what a destination
/// must adopt), then for every other namespaced extension kind in parallel.
macro_rules! worker_then_the_rest {
    ($ctx:expr, $task:ident) => {{
        $task::<Worker>($ctx.clone()).await?;
        let (a, b, c, d, e, f, g) = tokio::join!(
            $task::<Infrastructure>($ctx.clone()),
            $task::<ControlPlane>($ctx.clone()),
            $task::<Network>($ctx.clone()),
            $task::<OperatingSystemConfig>($ctx.clone()),
            $task::<DNSRecord>($ctx.clone()),
            $task::<ContainerRuntime>($ctx.clone()),
            $task::<Extension>($ctx.clone()),
        );
        a.and(b).and(c).and(d).and(e).and(f).and(g)
    }};
}

async fn migrate_extensions(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    worker_then_the_rest!(ctx, migrate_all)
}

/// Scales a Deployment to zero and waits until no replica is left (absent is fine).
async fn scale_to_zero(ctx: &OperationContext, name: &str) -> Result<(), TaskError> {
    let api: Api<Deployment> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    let Some(current) = api.get_opt(name).await.map_err(task_err)? else { return Ok(()) };
    if current.spec.as_ref().and_then(|s| s.replicas) != Some(0) {
        api.patch(name, &PatchParams::default(), &Patch::Merge(&serde_json::json!({"spec": {"replicas": 0}})))
            .await
            .map_err(task_err)?;
    }
    let scaled = wait_for::<Deployment>(ctx, name, checks::deployment_rolled_out).await?;
    // A Deployment's status does not count terminating pods, and a kube-apiserver shutting
    // down gracefully still serves writes: wait until its pods are gone.
    let selector = scaled
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.as_ref())
        .map(|labels| labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","))
        .unwrap_or_default();
    if selector.is_empty() {
        return Ok(());
    }
    wait_pods_gone(ctx, &selector).await
}

/// Waits (watching) until no pod in the shoot namespace matches `selector`.
async fn wait_pods_gone(ctx: &OperationContext, selector: &str) -> Result<(), TaskError> {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, reflector, watcher};
    let api: Api<Pod> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api, watcher::Config::default().labels(selector))).default_backoff();
    let gone = async {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let settled = matches!(
                event,
                Ok(watcher::Event::InitDone) | Ok(watcher::Event::Apply(_)) | Ok(watcher::Event::Delete(_))
            );
            if settled && reader.state().is_empty() {
                return;
            }
        }
    };
    tokio::time::timeout(ctx.wait_timeout, gone).await.map_err(|_| {
        TaskError::msg(format!(
            "pods {selector} in {} still exist after {:?}",
            ctx.values.namespace(),
            ctx.wait_timeout
        ))
    })
}

async fn stop_control_plane(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    for name in [kube_scheduler::NAME, kube_controller_manager::NAME, kube_apiserver::NAME] {
        scale_to_zero(&ctx, name).await?;
    }
    Ok(())
}

/// Makes sure one etcd member runs (a hibernated shoot's etcd is at zero).
async fn ensure_etcd_running(ctx: &OperationContext, sts: &StatefulSet) -> Result<(), TaskError> {
    if sts.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) == 0 {
        let api: Api<StatefulSet> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
        api.patch(etcd::NAME, &PatchParams::default(), &Patch::Merge(&serde_json::json!({"spec": {"replicas": 1}})))
            .await
            .map_err(task_err)?;
    }
    wait_for::<StatefulSet>(ctx, etcd::NAME, checks::statefulset_ready).await.map(|_| ())
}

fn secret_text(secret: &Secret, key: &str) -> Result<String, TaskError> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .ok_or_else(|| TaskError::msg(format!("secret {} has no key {key}", secret.name_any())))
}

async fn etcd_tls(ctx: &OperationContext) -> Result<EtcdClientTls, TaskError> {
    use crate::components::common::secrets as names;
    let api: Api<Secret> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    let client = api.get(names::ETCD_CLIENT).await.map_err(task_err)?;
    let ca = api.get(names::CA_ETCD_BUNDLE).await.map_err(task_err)?;
    Ok(EtcdClientTls {
        ca: secret_text(&ca, names::BUNDLE)?,
        cert: secret_text(&client, names::TLS_CERT)?,
        key: secret_text(&client, names::TLS_KEY)?,
    })
}

/// Takes the final snapshot into the backup entry's directory and records it. After an
/// interruption that already removed etcd, the recorded snapshot is the final one.
async fn final_snapshot(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let shoot = ctx.values.technical_id.to_string();
    let uid = ctx.shoot.metadata.uid.as_deref().unwrap_or_default();
    let entry_name = ext::backup_entry_name(&ctx.values, uid);
    let statefulsets: Api<StatefulSet> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    let Some(sts) = statefulsets.get_opt(etcd::NAME).await.map_err(task_err)? else {
        return match &ctx.snapshot_record {
            Some(r) if r.entry_name == entry_name && !r.is_restored() => Ok(()),
            _ => Err(TaskError::msg(format!(
                "etcd of shoot {shoot} is gone and no final snapshot was recorded; force the restore on the destination"
            ))),
        };
    };
    let entry = backup::entry(&ctx.seed, &entry_name, &shoot).await.map_err(task_err)?.ok_or_else(|| {
        TaskError::msg(format!(
            "shoot {shoot} has no BackupEntry {entry_name}: a migration needs the seed's backup to carry etcd's data"
        ))
    })?;
    let dir = backup::host_path(&entry).ok_or_else(|| {
        TaskError::msg(format!(
            "{} publishes no directory (status.providerStatus.hostPath); only directory stores can take the final etcd snapshot",
            backup::describe(&entry)
        ))
    })?;
    if !tokio::fs::metadata(&dir).await.is_ok_and(|m| m.is_dir()) {
        return Err(TaskError::msg(format!(
            "{} publishes the directory {dir}, which gardenlet cannot see: mount the seed's backup store into gardenlet at the same path (chart value additionalVolumes)",
            backup::describe(&entry)
        )));
    }
    ensure_etcd_running(&ctx, &sts).await?;
    let services: Api<Service> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    let ip = services
        .get(etcd::CLIENT_SERVICE)
        .await
        .map_err(task_err)?
        .spec
        .and_then(|s| s.cluster_ip)
        .filter(|ip| !ip.is_empty() && ip != "None")
        .ok_or_else(|| {
            TaskError::msg(format!("Service {} of shoot {shoot} has no cluster IP", etcd::CLIENT_SERVICE))
        })?;
    let address =
        if ip.contains(':') { format!("[{ip}]:{}", etcd::CLIENT_PORT) } else { format!("{ip}:{}", etcd::CLIENT_PORT) };
    let server_name = format!("{}.{}.svc", etcd::CLIENT_SERVICE, ctx.values.namespace());
    let tls = etcd_tls(&ctx).await?;
    let client = Etcd::new(&format!("https://{address}"), &server_name, Some(&tls)).await.map_err(task_err)?;
    let started = std::time::Instant::now();
    let take = etcd_backup::snapshot::take(&client, Path::new(&dir), etcd::FINAL_SNAPSHOT);
    let stored = tokio::time::timeout(ctx.wait_timeout, take)
        .await
        .map_err(|_| {
            TaskError::msg(format!("the final etcd snapshot of shoot {shoot} took longer than {:?}", ctx.wait_timeout))
        })?
        .map_err(task_err)?;
    tracing::info!(
        shoot,
        bytes = stored.size,
        revision = stored.revision,
        elapsed = ?started.elapsed(),
        path = %stored.path.display(),
        "final etcd snapshot stored"
    );
    let record = SnapshotRecord {
        bucket_name: entry.spec.bucket_name.clone(),
        entry_name,
        file: etcd::FINAL_SNAPSHOT.to_string(),
        size: stored.size.to_string(),
        sha256: stored.sha256,
        revision: stored.revision.to_string(),
        restored: String::new(),
    };
    ensure_still_owner(&ctx).await?;
    backup::write_record(&ctx.garden, &ctx.values.garden_namespace, &ctx.values.name, &record).await.map_err(task_err)
}

/// Fails the task when another seed took the shoot over meanwhile (a forced restore): this
/// seed must not write the garden's view of the shoot any more.
async fn ensure_still_owner(ctx: &OperationContext) -> Result<(), TaskError> {
    let shoots: Api<api::core::Shoot> = Api::namespaced(ctx.garden.clone(), &ctx.values.garden_namespace);
    let latest = shoots.get(&ctx.values.name).await.map_err(task_err)?;
    let owner = latest.status.as_ref().and_then(|s| s.seed_name.clone()).unwrap_or_default();
    if owner != ctx.config.seed.name {
        return Err(TaskError::msg(format!(
            "seed {owner} owns shoot {} now; this seed stops migrating it",
            ctx.values.technical_id
        )));
    }
    Ok(())
}

async fn migrate_backup_entry(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let uid = ctx.shoot.metadata.uid.as_deref().unwrap_or_default();
    let name = ext::backup_entry_name(&ctx.values, uid);
    if let Some(migrated) = ctx.deployer.migrate_and_wait::<BackupEntry>(None, &name).await.map_err(deploy_err)? {
        shootstate_sync::sync_object(&ctx.garden, &migrated, shootstate_sync::SAFE_SIZE_BYTES, &ctx.config.seed.name)
            .await
            .map_err(task_err)?;
    }
    delete_extension_backup_entry(ctx).await
}

async fn delete_migrated(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    worker_then_the_rest!(ctx, delete_all)
}

/// Builds the migration flow for one shoot (see the module documentation).
pub fn flow(ctx: &Arc<OperationContext>) -> Result<Flow, GraphError> {
    let has_backup = ctx.seed_object.as_ref().is_some_and(|s| s.spec.backup.is_some());
    let mut f = FlowBuilder::new("Shoot migration");
    let extensions = f.task("Migrating extension objects", &[], t(ctx, migrate_extensions));
    let stopped = f.task(
        "Scaling kube-apiserver, kube-controller-manager, kube-scheduler to zero",
        &[&extensions],
        t(ctx, stop_control_plane),
    );
    let snapshot = f.task("Taking the final etcd snapshot", &[&stopped], t(ctx, final_snapshot));
    let backup_entry = f.task_if("Migrating BackupEntry", &[&snapshot], has_backup, t(ctx, migrate_backup_entry));
    let migrated = f.task("Deleting migrated extension objects", &[&extensions], t(ctx, delete_migrated));
    let control_plane = f.task(
        "Deleting kube-apiserver, kube-controller-manager, kube-scheduler",
        &[&snapshot],
        t(ctx, delete_control_plane),
    );
    let etcd_task = f.task("Deleting etcd", &[&snapshot], t(ctx, delete_etcd));
    let cluster = f.task(
        "Deleting Cluster resource",
        &[&migrated, &control_plane, &etcd_task, &backup_entry],
        t(ctx, delete_cluster),
    );
    f.task("Deleting namespace", &[&cluster], t(ctx, delete_namespace));
    f.build()
}
