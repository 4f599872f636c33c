//! The control plane in the seed: the kube-apiserver Service, the secrets, etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the `ControlPlane` extension object.

use super::backup::verify_final_snapshot;
use crate::components::{availability, etcd, etcd_backup, kube_apiserver, kube_controller_manager, kube_scheduler};
use crate::flow::TaskError;
use crate::shoot::credentials::{self, secrets};
use crate::shoot::objects::extensions as ext;
use crate::shoot::operation::apply::{apply, deploy_extension, disruption_budgets, task_err, wait_for};
use crate::shoot::operation::audit_policy;
use crate::shoot::operation::context::OperationContext;
use crate::shoot::operation::context::secret_value;
use crate::shoot::operation::readiness as checks;
use crate::shoot::operation::references;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use std::sync::Arc;

pub(super) async fn deploy_apiserver_service(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
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

pub(super) async fn deploy_secrets(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
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
    let project = credentials::Project {
        garden: &ctx.garden,
        namespace: &ctx.values.garden_namespace,
        shoot: &ctx.values.name,
        owner: ctx.shoot_owner(),
    };
    credentials::garden_ca::publish(&project, &set).await.map_err(task_err)?;
    credentials::garden_ssh::publish(&project, &set).await.map_err(task_err)?;
    ctx.add_secrets(set.iter().flat_map(|s| s.data.values()));
    ctx.found().secrets = Some(set);
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
    values.etcd_backup = found.backup_dir.clone().map(|dir| etcd_backup::EtcdBackup {
        dir,
        settings: ctx.config.etcd_backup.clone(),
        full_snapshot_schedule: etcd_backup::full_snapshot_schedule(ctx.values.maintenance_begin),
    });
    values
}

pub(super) async fn deploy_etcd(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    verify_final_snapshot(&ctx).await?;
    let values = control_plane_values(&ctx);
    apply(&ctx, &etcd::client_service(&values)).await?;
    apply(&ctx, &etcd::peer_service(&values)).await?;
    apply(&ctx, &etcd::statefulset(&values)).await?;
    if let Some(budget) = etcd::disruption_budget(&values) {
        apply_disruption_budget(&ctx, budget).await?;
    }
    wait_for::<StatefulSet>(&ctx, etcd::NAME, checks::statefulset_ready).await.map(|_| ())
}

pub(super) async fn deploy_deployment(ctx: &OperationContext, deployment: Deployment) -> Result<(), TaskError> {
    let name = deployment.name_any();
    apply(ctx, &deployment).await?;
    let selector = deployment.spec.as_ref().map(|s| s.selector.clone()).unwrap_or_default();
    let tolerance = ctx.values.failure_tolerance;
    if let Some(budget) = availability::disruption_budget(tolerance, deployment.metadata.clone(), &selector) {
        apply_disruption_budget(ctx, budget).await?;
    }
    wait_for::<Deployment>(ctx, &name, checks::deployment_rolled_out).await.map(|_| ())
}

/// Server-side apply of a highly available component's PodDisruptionBudget in the seed.
async fn apply_disruption_budget(ctx: &OperationContext, budget: serde_json::Value) -> Result<(), TaskError> {
    let name = budget["metadata"]["name"].as_str().unwrap_or_default().to_string();
    disruption_budgets(&ctx.seed, ctx.values.namespace())
        .patch(&name, &PatchParams::apply("gardenlet").force(), &Patch::Apply(&budget))
        .await
        .map_err(|e| TaskError::context(format!("applying PodDisruptionBudget {name}"), &e))?;
    Ok(())
}

pub(super) async fn deploy_kube_apiserver(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let mut values = control_plane_values(&ctx);
    // The shoot's audit policy lives in its garden namespace; the API server mounts a copy.
    let policy = &values.apiserver.audit_policy_config_map;
    values.apiserver.audit_policy =
        audit_policy::read(&ctx.garden, &ctx.values.garden_namespace, policy.as_deref()).await.map_err(task_err)?;
    let files = kube_apiserver::config_maps(&values);
    for config_map in &files {
        apply(&ctx, config_map).await?;
    }
    // Secrets at rest: the EncryptionConfiguration from the shoot's persisted key.
    let name = pki::shoot_set::names::ETCD_ENCRYPTION_KEY;
    let key = secret_value(&ctx, name, pki::data_keys::VALUE)?;
    let previous = secret_value(&ctx, &pki::config::old_name(name), pki::data_keys::VALUE).ok();
    apply(&ctx, &kube_apiserver::encryption_config_secret(&values, &key, previous.as_deref())).await?;
    deploy_deployment(&ctx, kube_apiserver::deployment(&values)).await?;
    if values.replicas > 0 {
        // Objects of a resource newly listed in encryptionConfig.resources are stored encrypted.
        super::encryption::rewrite_newly_encrypted(&ctx).await?;
    }
    // ConfigMaps the settings no longer call for go once no pod mounts them.
    let api: Api<ConfigMap> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    for stale in kube_apiserver::CONFIG_MAPS.iter().filter(|n| !files.iter().any(|f| f.name_any() == **n)) {
        match api.delete(stale, &Default::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(task_err(e)),
        }
    }
    Ok(())
}

pub(super) async fn deploy_kcm(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    deploy_deployment(&ctx, kube_controller_manager::deployment(&control_plane_values(&ctx))).await
}

pub(super) async fn deploy_scheduler(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let values = control_plane_values(&ctx);
    apply(&ctx, &kube_scheduler::config_map(&values).map_err(task_err)?).await?;
    deploy_deployment(&ctx, kube_scheduler::deployment(&values)).await
}

pub(super) async fn deploy_control_plane(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let infra = ctx.found().infrastructure_status.clone();
    deploy_extension(&ctx, &ext::control_plane(&ctx.values, &ctx.shoot, infra)).await.map(|_| ())
}
