//! The reconcile flow: every step of bringing a shoot's control plane and extension objects
//! to their desired state, as a task graph (see `describe` for the generated list).

use crate::components::{cluster_dns, etcd, kube_apiserver, kube_controller_manager, kube_proxy, kube_scheduler};
use crate::flow::{Flow, FlowBuilder, GraphError, TaskError};
use crate::shoot::backup::{self, etcd_snapshot};
use crate::shoot::credentials::secrets;
use crate::shoot::health::checks as health;
use crate::shoot::objects::extensions as ext;
use crate::shoot::objects::system_resources as system;
use crate::shoot::operation::apply::{apply, deploy_extension, t, task_err, wait_for, wait_in};
use crate::shoot::operation::clients::shoot_client;
use crate::shoot::operation::context::OperationContext;
use crate::shoot::operation::context::secret_value;
use crate::shoot::operation::readiness as checks;
use crate::shoot::operation::references;
use api::Opaque;
use api::core::SecretBinding;
use api::core::controller::ControllerResourceLifecycleStrategy as Stage;
use api::core::shoot::credentials::RotationPhase;
use api::extensions::Cluster;
use api::security::CredentialsBinding;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Api, Resource, ResourceExt};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Builds the reconcile flow for one shoot.
pub fn flow(ctx: &Arc<OperationContext>) -> Result<Flow, GraphError> {
    let running = !ctx.values.hibernated;
    let has_network = ctx.shoot.spec.networking.as_ref().and_then(|n| n.type_.as_ref()).is_some();
    let has_workers = !ctx.shoot.spec.provider.workers.is_empty();
    let mut f = FlowBuilder::new("Shoot reconciliation");
    let ns = f.task("Deploying namespace", &[], t(ctx, deploy_namespace));
    let cluster = f.task("Deploying Cluster resource", &[&ns], t(ctx, deploy_cluster));
    let provider_secret = f.task("Deploying cloud provider secret", &[&ns], t(ctx, deploy_cloudprovider_secret));
    let service = f.task("Deploying kube-apiserver Service", &[&cluster], t(ctx, deploy_apiserver_service));
    let secrets = f.task("Deploying secrets", &[&service], t(ctx, deploy_secrets));
    let infra = f.task("Deploying Infrastructure", &[&cluster, &provider_secret], t(ctx, deploy_infrastructure));
    let dns = f.task("Deploying DNS records", &[&service, &provider_secret], t(ctx, deploy_dns_records));
    let has_backup = ctx.seed_object.as_ref().is_some_and(|s| s.spec.backup.is_some());
    let backup = f.task_if("Deploying BackupEntry", &[&cluster], has_backup, t(ctx, deploy_backup_entry));
    let etcd_task = f.task("Deploying etcd", &[&secrets, &backup], t(ctx, deploy_etcd));
    let before = f.task(
        "Deploying extensions before kube-apiserver",
        &[&cluster, &provider_secret],
        t(ctx, |c| deploy_extensions(c, Stage::BeforeKubeAPIServer)),
    );
    let apiserver = f.task("Deploying kube-apiserver", &[&etcd_task, &dns, &before], t(ctx, deploy_kube_apiserver));
    let control_plane = f.task("Deploying ControlPlane", &[&apiserver, &infra], t(ctx, deploy_control_plane));
    let kcm = f.task("Deploying kube-controller-manager", &[&apiserver], t(ctx, deploy_kcm));
    let scheduler = f.task("Deploying kube-scheduler", &[&apiserver], t(ctx, deploy_scheduler));
    let system_resources =
        f.task_if("Deploying shoot system resources", &[&apiserver], running, t(ctx, deploy_system_resources));
    let extensions = f.task(
        "Deploying extensions after kube-apiserver",
        &[&apiserver, &cluster],
        t(ctx, |c| deploy_extensions(c, Stage::AfterKubeAPIServer)),
    );
    let osc = f.task_if(
        "Deploying OperatingSystemConfigs",
        &[&system_resources, &cluster],
        has_workers,
        t(ctx, deploy_operating_system_configs),
    );
    let network = f.task_if("Deploying Network", &[&apiserver, &cluster], has_network, t(ctx, deploy_network));
    let worker = f.task_if("Deploying Worker", &[&osc, &infra, &control_plane], has_workers, t(ctx, deploy_worker));
    let after_worker =
        f.task("Deploying extensions after worker", &[&worker], t(ctx, |c| deploy_extensions(c, Stage::AfterWorker)));
    let token_phase = crate::shoot::credentials::rotation::token_secrets(ctx.rotation.as_ref()).map(|(phase, _)| phase);
    let new_tokens = f.task_if(
        "Issuing service-account tokens of the new key",
        &[&kcm, &system_resources],
        running && token_phase == Some(RotationPhase::Preparing),
        t(ctx, service_account_tokens),
    );
    let old_tokens = f.task_if(
        "Deleting service-account tokens of the old key",
        &[&kcm],
        running && token_phase == Some(RotationPhase::Completing),
        t(ctx, service_account_tokens),
    );
    let system_components = f.task_if(
        "Waiting until shoot system components are healthy",
        &[&worker, &system_resources, &kcm, &scheduler, &new_tokens],
        running && has_workers,
        t(ctx, wait_system_components),
    );
    let reencrypt = f.task_if(
        "Rewriting Secrets with the new etcd encryption key",
        &[&apiserver],
        running && crate::shoot::credentials::rotation::reencrypt(ctx.rotation.as_ref()),
        t(ctx, rewrite_secrets),
    );
    let health = f.task(
        "Checking control plane health",
        &[
            &worker,
            &network,
            &kcm,
            &scheduler,
            &extensions,
            &after_worker,
            &control_plane,
            &system_components,
            &reencrypt,
            &new_tokens,
            &old_tokens,
        ],
        t(ctx, check_health),
    );
    // The first run with etcd up after a migration (at once, or at the wake-up of a shoot
    // migrated while hibernated) consumes the final snapshot.
    let pending_snapshot = ctx.snapshot_record.as_ref().is_some_and(|r| !r.is_restored());
    f.task_if("Completing the etcd restore", &[&health], pending_snapshot && running, t(ctx, complete_restore));
    f.build()
}

/// Waits until kube-proxy runs ready on every node that joined and cluster DNS is rolled out (a
/// shoot whose worker has no Node yet, as with simulated workers, has nothing to wait for).
async fn wait_system_components(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let client = shoot_client(&ctx).await?;
    let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .list(&kube::api::ListParams::default())
        .await
        .map_err(task_err)?
        .items
        .len();
    if nodes == 0 {
        return Ok(());
    }
    let proxy: Api<DaemonSet> = Api::namespaced(client.clone(), kube_proxy::NAMESPACE);
    wait_in(proxy, kube_proxy::NAMESPACE, kube_proxy::NAME, ctx.wait_timeout, |ds: &DaemonSet| {
        let desired = ds.status.as_ref().map(|s| s.desired_number_scheduled).unwrap_or_default();
        if usize::try_from(desired).unwrap_or_default() < nodes {
            return Err(format!("scheduled on {desired} of {nodes} nodes"));
        }
        kube_proxy::rolled_out(ds)
    })
    .await?;
    let dns: Api<Deployment> = Api::namespaced(client, cluster_dns::NAMESPACE);
    wait_in(dns, cluster_dns::NAMESPACE, cluster_dns::NAME, ctx.wait_timeout, checks::deployment_rolled_out).await?;
    Ok(())
}

/// The token Secrets of a service-account key rotation: new ones in phase one, the old ones
/// deleted in phase two.
async fn service_account_tokens(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let Some((phase, since)) = crate::shoot::credentials::rotation::token_secrets(ctx.rotation.as_ref()) else {
        return Ok(());
    };
    let since = since.clone();
    let client = shoot_client(&ctx).await?;
    let shoot = &ctx.values.technical_id;
    if phase == RotationPhase::Preparing {
        let created =
            crate::shoot::credentials::service_account_tokens::prepare(&client, &since).await.map_err(task_err)?;
        tracing::info!(shoot = %shoot, created, "service-account token Secrets of the new key requested");
    } else {
        let deleted =
            crate::shoot::credentials::service_account_tokens::complete(&client, &since).await.map_err(task_err)?;
        tracing::info!(shoot = %shoot, deleted, "service-account token Secrets of the old key deleted");
    }
    Ok(())
}

/// Phase one of an etcd encryption key rotation: every Secret of the shoot is written again,
/// unchanged, so the API server stores it encrypted with the new key (it rewrites what it read
/// with an older key, or unencrypted; see `encryption_configuration`). A Secret changed or
/// deleted meanwhile was written by someone else, which re-encrypted it too.
async fn rewrite_secrets(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let client = shoot_client(&ctx).await?;
    let secrets: Api<Secret> = Api::all(client.clone());
    let mut params = kube::api::ListParams::default().limit(250);
    let mut rewritten = 0usize;
    loop {
        let page = secrets.list(&params).await.map_err(task_err)?;
        for secret in &page.items {
            let api: Api<Secret> = Api::namespaced(client.clone(), &secret.namespace().unwrap_or_default());
            match api.replace(&secret.name_any(), &Default::default(), secret).await {
                Ok(_) => rewritten += 1,
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(task_err(e)),
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    tracing::info!(rewritten, "Secrets rewritten with the new etcd encryption key");
    Ok(())
}

/// Computes every condition of the shoot an operation works on.
async fn conditions(ctx: &OperationContext) -> Vec<crate::shoot::status::conditions::Check> {
    let shoot = match ctx.values.hibernated {
        true => Err(String::new()),
        false => shoot_client(ctx).await.map_err(|e| e.to_string()),
    };
    health::conditions_of(&health::Inputs {
        seed: &ctx.seed,
        namespace: ctx.values.namespace(),
        hibernated: ctx.values.hibernated,
        expected_nodes: ctx.shoot.spec.provider.workers.iter().map(|w| w.minimum).sum(),
        shoot,
        workloads: None,
    })
    .await
}

async fn check_health(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let conditions = conditions(&ctx).await;
    ctx.found().conditions = conditions;
    Ok(())
}

async fn deploy_namespace(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let namespaces: Api<Namespace> = Api::all(ctx.seed.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(ctx.values.namespace().to_string()),
            labels: Some(BTreeMap::from([
                ("gardener.cloud/role".to_string(), "shoot".to_string()),
                ("shoot.gardener.cloud/name".to_string(), ctx.values.name.clone()),
                ("project.gardener.cloud/name".to_string(), ctx.values.project.clone()),
            ])),
            ..Default::default()
        },
        ..Default::default()
    };
    // Written only when it is not yet as wanted: a resync of an unchanged shoot writes nothing.
    crate::shoot::operation::apply::apply_in(namespaces, &ns).await?;
    Ok(())
}

/// The Shoot as embedded in the Cluster: without server bookkeeping and with only the status
/// an extension needs (a failed last operation), so that status updates do not rewrite the
/// Cluster on every step.
pub fn embedded_shoot(shoot: &api::core::Shoot) -> serde_json::Value {
    let mut v = serde_json::to_value(shoot).unwrap_or_default();
    if let Some(meta) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        for k in ["managedFields", "resourceVersion", "generation", "annotations", "finalizers"] {
            meta.remove(k);
        }
    }
    let failed = crate::shoot::status::last_operation::is_failed(shoot);
    if let Some(obj) = v.as_object_mut() {
        let last = obj.get("status").and_then(|s| s.get("lastOperation")).cloned();
        match (failed, last) {
            (true, Some(last)) => {
                obj.insert("status".into(), serde_json::json!({ "lastOperation": last }));
            }
            _ => {
                obj.remove("status");
            }
        }
    }
    v
}

pub(crate) async fn deploy_cluster(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let seed = ctx.seed_object.as_ref().map(|s| {
        let mut v = serde_json::to_value(s).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.remove("status");
            if let Some(m) = o.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                m.remove("managedFields");
                m.remove("resourceVersion");
            }
        }
        v
    });
    // A NamespacedCloudProfile goes in as a CloudProfile with its merged spec.
    let profile = match &ctx.cloud_profile {
        Some(cached) => references::cluster_cloud_profile(&ctx.shoot, cached.as_deref(), None).map_err(task_err)?,
        None => references::read_cloud_profile(&ctx.garden, &ctx.shoot).await.map_err(task_err)?,
    };
    let cluster = ext::cluster(
        &ctx.values,
        Opaque(embedded_shoot(&ctx.shoot)),
        Opaque(seed.unwrap_or_else(|| serde_json::json!({}))),
        Opaque(profile),
    );
    let applied = crate::shoot::operation::apply::apply_in(Api::<Cluster>::all(ctx.seed.clone()), &cluster).await?;
    ctx.found().cluster_owner = applied.controller_owner_ref(&()).map(|mut o| {
        o.controller = Some(false);
        o.block_owner_deletion = Some(false);
        o
    });
    Ok(())
}

/// The provider credentials of the shoot, as the `cloudprovider` Secret in its seed namespace:
/// the Secret its SecretBinding or CredentialsBinding names (a shoot names at most one;
/// admission sees to that). A CredentialsBinding to a WorkloadIdentity yields a Secret that
/// names the identity and holds no token (see docs/api.md: provider-local needs none, and
/// issuing tokens for cloud providers is not implemented).
async fn deploy_cloudprovider_secret(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let garden_ns = ctx.values.garden_namespace.clone();
    let mut secret = Secret {
        metadata: ObjectMeta { name: Some(ext::CLOUDPROVIDER_SECRET.into()), ..Default::default() },
        type_: Some("Opaque".into()),
        ..Default::default()
    };
    if let Some(binding) = &ctx.shoot.spec.secret_binding_name {
        let bindings: Api<SecretBinding> = Api::namespaced(ctx.garden.clone(), &garden_ns);
        let b = bindings.get(binding).await.map_err(|e| {
            TaskError::msg(format!("reading SecretBinding {garden_ns}/{binding} (spec.secretBindingName): {e}"))
        })?;
        let ns = b.spec.secret_ref.namespace.clone().unwrap_or_else(|| garden_ns.clone());
        let what = format!("Secret {ns}/{} of SecretBinding {binding}", b.spec.secret_ref.name);
        secret.data = credentials_secret_data(&ctx, &ns, &b.spec.secret_ref.name, &what).await?;
    } else if let Some(binding) = &ctx.shoot.spec.credentials_binding_name {
        let bindings: Api<CredentialsBinding> = Api::namespaced(ctx.garden.clone(), &garden_ns);
        let b = bindings.get(binding).await.map_err(|e| {
            TaskError::msg(format!(
                "reading CredentialsBinding {garden_ns}/{binding} (spec.credentialsBindingName): {e}"
            ))
        })?;
        let r = &b.spec.credentials_ref;
        let ns = r.namespace.clone().unwrap_or_else(|| garden_ns.clone());
        match r.kind.as_deref() {
            Some("Secret") => {
                let what = format!("Secret {ns}/{} of CredentialsBinding {binding}", r.name);
                secret.data = credentials_secret_data(&ctx, &ns, &r.name, &what).await?;
            }
            Some("WorkloadIdentity") => {
                secret.metadata.labels = Some(BTreeMap::from([(
                    "security.gardener.cloud/purpose".to_string(),
                    "workload-identity-token-requestor".to_string(),
                )]));
                secret.metadata.annotations = Some(BTreeMap::from([
                    ("workloadidentity.security.gardener.cloud/name".to_string(), r.name.clone()),
                    ("workloadidentity.security.gardener.cloud/namespace".to_string(), ns),
                ]));
            }
            other => {
                return Err(TaskError::msg(format!(
                    "CredentialsBinding {garden_ns}/{binding}: credentialsRef.kind {other:?} is neither Secret nor WorkloadIdentity"
                )));
            }
        }
    }
    apply(&ctx, &secret).await.map(|_| ())
}

async fn credentials_secret_data(
    ctx: &OperationContext,
    namespace: &str,
    name: &str,
    what: &str,
) -> Result<Option<BTreeMap<String, ByteString>>, TaskError> {
    let secret = Api::<Secret>::namespaced(ctx.garden.clone(), namespace)
        .get(name)
        .await
        .map_err(|e| TaskError::msg(format!("reading {what}: {e}")))?;
    // Provider credentials must not come back in an extension's error.
    ctx.add_secrets(secret.data.iter().flatten().filter_map(|(_, v)| std::str::from_utf8(&v.0).ok()));
    Ok(secret.data.filter(|d| !d.is_empty()))
}

async fn deploy_apiserver_service(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let values = ctx.values.control_plane(&ctx.config.images, true, ctx.config.control_plane_requests_percent);
    // The shoot's ExposureClass handler must be one this seed offers (Gardener fails the same way).
    let handler = references::read_exposure_handler(&ctx.garden, &ctx.shoot, &ctx.config.exposure_class_handlers)
        .await
        .map_err(task_err)?;
    apply(&ctx, &kube_apiserver::service(&values, ctx.config.kube_apiserver_service_type, handler)).await?;
    let svc: Service = wait_for(&ctx, kube_apiserver::NAME, |s: &Service| {
        kube_apiserver::service_address(s).map(|_| ()).ok_or_else(|| "no address yet".to_string())
    })
    .await?;
    ctx.found().address = kube_apiserver::service_address(&svc);
    Ok(())
}

async fn deploy_secrets(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let address = ctx.found().address.clone();
    let mut inputs = ctx.values.pki_inputs(address.as_deref());
    inputs.ssh_keypair = ctx
        .shoot
        .spec
        .provider
        .ssh_access()
        .then(|| crate::shoot::credentials::rotation::ssh_keypair(ctx.rotation.as_ref()));
    let configs = pki::shoot_set::shoot_set(&inputs);
    let set =
        secrets::reconcile(&ctx.garden, &ctx.seed, &ctx.values, &configs, ctx.rotation.as_ref(), ctx.shoot_owner())
            .await
            .map_err(task_err)?;
    crate::shoot::credentials::garden_ca::publish(
        &ctx.garden,
        &ctx.values.garden_namespace,
        &ctx.values.name,
        &set,
        ctx.shoot_owner(),
    )
    .await
    .map_err(task_err)?;
    crate::shoot::credentials::garden_ssh::publish(
        &ctx.garden,
        &ctx.values.garden_namespace,
        &ctx.values.name,
        &set,
        ctx.shoot_owner(),
    )
    .await
    .map_err(task_err)?;
    ctx.add_secrets(set.iter().flat_map(|s| s.data.values()));
    ctx.found().secrets = Some(set);
    Ok(())
}

async fn deploy_infrastructure(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let infra = deploy_extension(&ctx, &ext::infrastructure(&ctx.values, &ctx.shoot)).await?;
    ctx.found().infrastructure_status = infra.status.and_then(|s| s.default.provider_status);
    Ok(())
}

async fn deploy_dns_records(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let Some(address) = ctx.found().address.clone() else {
        return Err(TaskError::msg("the kube-apiserver Service has no address"));
    };
    for record in ext::dns_records(&ctx.values, &ctx.shoot, &address) {
        deploy_extension(&ctx, &record).await?;
    }
    Ok(())
}

/// Control-plane values with the owner and the checksums of the secrets they mount.
pub(crate) fn control_plane_values(ctx: &OperationContext) -> crate::components::ControlPlaneValues {
    let mut values = ctx.values.control_plane(&ctx.config.images, true, ctx.config.control_plane_requests_percent);
    let found = ctx.found();
    values.owner = found.cluster_owner.clone();
    if let Some(set) = &found.secrets {
        values.secret_checksums = set.iter().map(|s| (s.name.clone(), secrets::checksum(s))).collect();
        // The EncryptionConfiguration changes exactly when its keys do.
        let key = pki::shoot_set::names::ETCD_ENCRYPTION_KEY;
        let keys: Vec<&str> = [key.to_string(), pki::config::old_name(key)]
            .iter()
            .filter_map(|k| values.secret_checksums.get(k))
            .map(String::as_str)
            .collect();
        if !keys.is_empty() {
            let checksum = crate::components::common::checksum(&keys.join(","));
            values.secret_checksums.insert(kube_apiserver::ENCRYPTION_CONFIG_SECRET.to_string(), checksum);
        }
    }
    values.etcd_backup_dir = found.backup_dir.clone();
    values
}

async fn deploy_etcd(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    verify_final_snapshot(&ctx).await?;
    let values = control_plane_values(&ctx);
    apply(&ctx, &etcd::client_service(&values)).await?;
    apply(&ctx, &etcd::peer_service(&values)).await?;
    apply(&ctx, &etcd::statefulset(&values)).await?;
    wait_for::<StatefulSet>(&ctx, etcd::NAME, checks::statefulset_ready).await.map(|_| ())
}

async fn deploy_deployment(ctx: &OperationContext, deployment: Deployment) -> Result<(), TaskError> {
    let name = deployment.name_any();
    apply(ctx, &deployment).await?;
    wait_for::<Deployment>(ctx, &name, checks::deployment_rolled_out).await.map(|_| ())
}

async fn deploy_kube_apiserver(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let values = control_plane_values(&ctx);
    // Secrets at rest: the EncryptionConfiguration from the shoot's persisted key.
    let name = pki::shoot_set::names::ETCD_ENCRYPTION_KEY;
    let key = secret_value(&ctx, name, pki::data_keys::VALUE)?;
    let previous = secret_value(&ctx, &pki::config::old_name(name), pki::data_keys::VALUE).ok();
    apply(&ctx, &kube_apiserver::encryption_config_secret(&values, &key, previous.as_deref())).await?;
    deploy_deployment(&ctx, kube_apiserver::deployment(&values)).await
}

async fn deploy_kcm(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    deploy_deployment(&ctx, kube_controller_manager::deployment(&control_plane_values(&ctx))).await
}

async fn deploy_scheduler(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    deploy_deployment(&ctx, kube_scheduler::deployment(&control_plane_values(&ctx))).await
}

async fn deploy_control_plane(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let infra = ctx.found().infrastructure_status.clone();
    deploy_extension(&ctx, &ext::control_plane(&ctx.values, &ctx.shoot, infra)).await.map(|_| ())
}

async fn deploy_backup_entry(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let (Some(seed), Some(uid)) = (ctx.seed_object.as_ref(), ctx.shoot.metadata.uid.as_deref()) else {
        return Err(TaskError::msg("the seed or the shoot's UID is unknown"));
    };
    let Some(mut entry) = ext::backup_entry(&ctx.values, seed, uid) else {
        return Err(TaskError::msg(format!(
            "seed {} has a backup section without a provider type (spec.backup.provider)",
            seed.name_any()
        )));
    };
    // After a migration the shoot keeps the bucket its data is in.
    if let Some(record) = ctx.snapshot_record.as_ref().filter(|r| r.entry_name == entry.name_any()) {
        entry.spec.bucket_name = record.bucket_name.clone();
    }
    let ready = deploy_extension(&ctx, &entry).await?;
    ctx.found().backup_dir = backup::host_path(&ready);
    Ok(())
}

/// Before etcd starts from a final snapshot: the file must be the one the source recorded, or
/// etcd would silently start empty (missing file) or from other data.
async fn verify_final_snapshot(ctx: &OperationContext) -> Result<(), TaskError> {
    // A hibernated shoot's etcd does not start: the snapshot waits for the wake-up.
    let pending = ctx.snapshot_record.as_ref().filter(|r| !r.is_restored() && !ctx.values.hibernated);
    let Some(record) = pending else {
        return Ok(());
    };
    let Some(dir) = ctx.found().backup_dir.clone() else {
        return Err(TaskError::msg(format!(
            "the final etcd snapshot of shoot {} is recorded, but its BackupEntry {} publishes no directory",
            ctx.values.technical_id, record.entry_name
        )));
    };
    let path = std::path::Path::new(&dir).join(&record.file);
    let consumed = std::path::Path::new(&dir).join(etcd::RESTORED_SNAPSHOT);
    // Renamed by an earlier run whose record update did not land: etcd was restored then.
    let path = if !path.exists() && consumed.exists() { consumed } else { path };
    let sha256 = etcd_snapshot::file_sha256(&path).await.map_err(task_err)?;
    if sha256 != record.sha256 {
        return Err(TaskError::msg(format!(
            "the final etcd snapshot {} does not match its record in the ShootState (sha256 {sha256}, recorded {})",
            path.display(),
            record.sha256
        )));
    }
    Ok(())
}

/// After a successful restore from a final snapshot: rename the file (so a later loss of
/// etcd's volume does not bring back this old state unnoticed) and mark the record restored.
async fn complete_restore(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let Some(record) = ctx.snapshot_record.clone().filter(|r| !r.is_restored()) else {
        return Ok(());
    };
    // etcd must really hold the restored data: the API server's list revision is etcd's
    // revision, at least the snapshot's.
    let client = shoot_client(&ctx).await?;
    let namespaces: Api<Namespace> = Api::all(client);
    let listed = namespaces.list_metadata(&kube::api::ListParams::default().limit(1)).await.map_err(task_err)?;
    let revision: i64 = listed.metadata.resource_version.as_deref().and_then(|r| r.parse().ok()).unwrap_or(0);
    let recorded: i64 = record.revision.parse().unwrap_or(0);
    if revision < recorded {
        return Err(TaskError::msg(format!(
            "etcd of shoot {} is at revision {revision}, below the final snapshot's {recorded}: the restore did not happen",
            ctx.values.technical_id
        )));
    }
    let dir = ctx.found().backup_dir.clone();
    if let Some(dir) = dir {
        let from = std::path::Path::new(&dir).join(&record.file);
        let to = std::path::Path::new(&dir).join(etcd::RESTORED_SNAPSHOT);
        if let Err(e) = tokio::fs::rename(&from, &to).await
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(TaskError::msg(format!("renaming {} to {}: {e}", from.display(), to.display())));
        }
    }
    let restored = backup::SnapshotRecord { restored: "true".to_string(), ..record };
    backup::write_record(&ctx.garden, &ctx.values.garden_namespace, &ctx.values.name, &restored).await.map_err(task_err)
}

async fn deploy_extensions(ctx: Arc<OperationContext>, stage: Stage) -> Result<(), TaskError> {
    for e in ext::extensions(&ctx.values, &ctx.shoot, &ctx.registrations, stage) {
        deploy_extension(&ctx, &e).await?;
    }
    Ok(())
}

async fn deploy_network(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    match ext::network(&ctx.values, &ctx.shoot) {
        Some(n) => deploy_extension(&ctx, &n).await.map(|_| ()),
        None => Ok(()),
    }
}

/// The bootstrap token, kept in the seed namespace (not labelled as a pki secret, so the
/// secrets plan leaves it alone) and reused while it has more than half of its lifetime left,
/// so an unchanged shoot does not rotate it on every reconcile.
async fn bootstrap_token(ctx: &OperationContext) -> Result<pki::Secret, TaskError> {
    const STORE: &str = "bootstrap-token";
    let api: Api<Secret> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    if let Some(existing) = api.get_opt(STORE).await.map_err(task_err)? {
        let stored = secrets::from_k8s(&existing);
        let fresh = stored
            .get("expiration")
            .and_then(|e| e.parse::<k8s_openapi::jiff::Timestamp>().ok())
            .is_some_and(|exp| exp.duration_since(k8s_openapi::jiff::Timestamp::now()).as_secs() > 12 * 3600);
        if fresh && let Some(id) = stored.get("token-id") {
            let mut token = stored.clone();
            token.name = format!("bootstrap-token-{id}");
            token.type_ = pki::secret_types::BOOTSTRAP_TOKEN.to_string();
            token.labels.clear();
            return Ok(token);
        }
    }
    let token = pki::bootstrap::BootstrapToken::generate().map_err(task_err)?;
    let options = pki::bootstrap::TokenOptions::default();
    let secret = pki::bootstrap::secret(&token, &options, std::time::SystemTime::now()).map_err(task_err)?;
    let stored = Secret {
        metadata: ObjectMeta { name: Some(STORE.into()), ..Default::default() },
        type_: Some("Opaque".into()),
        data: Some(secret.data.iter().map(|(k, v)| (k.clone(), ByteString(v.as_bytes().to_vec()))).collect()),
        ..Default::default()
    };
    apply(ctx, &stored).await?;
    Ok(secret)
}

fn server(ctx: &OperationContext) -> String {
    match ctx.found().address.clone() {
        Some(a) => format!("https://{a}"),
        None => format!("https://{}", ctx.values.advertised_host()),
    }
}

async fn deploy_system_resources(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let client = shoot_client(&ctx).await?;
    let token = bootstrap_token(&ctx).await?;
    let ca = secret_value(&ctx, crate::components::common::secrets::CA_BUNDLE, pki::data_keys::BUNDLE)?;
    let info = pki::bootstrap::cluster_info_kubeconfig(&server(&ctx), &ca).map_err(task_err)?;
    let images = &ctx.config.images;
    let version = &ctx.values.kubernetes_version;
    let components = system::Components {
        kube_proxy: kube_proxy::Values {
            server: server(&ctx),
            pod_cidr: ctx.values.pods.map(|p| p.to_string()),
            image: crate::components::Images::resolve(&images.kube_proxy, version),
        },
        cluster_dns: cluster_dns::Values {
            server: server(&ctx),
            service_ip: ext::cluster_dns(&ctx.values).to_string(),
            domain: "cluster.local".into(),
            image: crate::components::Images::resolve(&images.cluster_dns, version),
        },
    };
    system::apply(&client, &token, &info, &components)
        .await
        .map_err(|e| TaskError::msg(format!("applying shoot system resources: {e}")))
}

async fn deploy_operating_system_configs(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let token = bootstrap_token(&ctx).await?;
    let ca = secret_value(&ctx, crate::components::common::secrets::CA_BUNDLE, pki::data_keys::BUNDLE)?;
    let token_text =
        format!("{}.{}", token.get("token-id").unwrap_or_default(), token.get("token-secret").unwrap_or_default());
    let bootstrap_kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: shoot\n  cluster:\n    server: {}\n    certificate-authority: /var/lib/kubelet/ca.crt\ncontexts:\n- name: kubelet-bootstrap\n  context:\n    cluster: shoot\n    user: kubelet-bootstrap\ncurrent-context: kubelet-bootstrap\nusers:\n- name: kubelet-bootstrap\n  user:\n    token: {token_text}\n",
        server(&ctx)
    );
    let kubelet_ca = secret_value(&ctx, crate::components::common::secrets::CA_KUBELET_BUNDLE, pki::data_keys::BUNDLE)?;
    let secrets_api: Api<Secret> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    let authorized_keys = authorized_keys(&ctx);
    let oscs = ext::operating_system_configs(
        &ctx.values,
        &ctx.shoot,
        &bootstrap_kubeconfig,
        &ca,
        &kubelet_ca,
        authorized_keys.as_deref(),
    );
    for (osc, pool) in oscs.into_iter().zip(ctx.shoot.spec.provider.workers.iter().map(|w| w.name.clone())) {
        let key = ext::node_agent_secret_name(&pool, &osc);
        let ready = deploy_extension(&ctx, &osc).await?;
        let Some(reference) = ready.status.as_ref().and_then(|s| s.cloud_config.as_ref()).map(|c| c.secret_ref.clone())
        else {
            return Err(TaskError::msg(format!(
                "OperatingSystemConfig {} reports no cloudConfig secret",
                osc.name_any()
            )));
        };
        let secret = secrets_api.get(&reference.name).await.map_err(task_err)?;
        let user_data = secret
            .data
            .as_ref()
            .and_then(|d| d.get("cloud_config").or_else(|| d.values().next()))
            .map(|ByteString(b)| secrets::b64(&String::from_utf8_lossy(b)))
            .unwrap_or_default();
        let mut found = ctx.found();
        found.user_data.insert(pool.clone(), user_data);
        found.pool_keys.insert(pool, key);
    }
    Ok(())
}

async fn deploy_worker(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let (infra, user_data, keys) = {
        let f = ctx.found();
        (f.infrastructure_status.clone(), f.user_data.clone(), f.pool_keys.clone())
    };
    let public_key = ctx
        .found()
        .secrets
        .as_ref()
        .and_then(|s| s.value(pki::shoot_set::names::SSH_KEYPAIR, pki::data_keys::SSH_PUBLIC_KEY))
        .map(str::to_string);
    let worker = ext::worker(&ctx.values, &ctx.shoot, infra, &user_data, &keys, public_key.as_deref());
    deploy_extension(&ctx, &worker).await.map(|_| ())
}

/// The nodes' `authorized_keys` when the shoot has an SSH key pair: its public key and, after
/// a key-pair rotation, the previous one's.
fn authorized_keys(ctx: &OperationContext) -> Option<String> {
    let found = ctx.found();
    let set = found.secrets.as_ref()?;
    let name = pki::shoot_set::names::SSH_KEYPAIR;
    let current = set.value(name, pki::data_keys::SSH_PUBLIC_KEY)?;
    let previous = set.value(&pki::config::old_name(name), pki::data_keys::SSH_PUBLIC_KEY);
    Some([Some(current), previous].into_iter().flatten().map(|k| format!("{}\n", k.trim_end())).collect())
}

/// Owner references for objects in the seed namespace, for reuse by other flows.
pub fn cluster_owner(ctx: &OperationContext) -> Option<OwnerReference> {
    ctx.found().cluster_owner.clone()
}
