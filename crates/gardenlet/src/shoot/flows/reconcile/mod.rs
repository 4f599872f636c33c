//! The reconcile flow: every step of bringing a shoot's control plane and extension objects
//! to their desired state, as a task graph (see `describe` for the generated list).

mod backup;
mod control_plane;
mod encryption;
mod extension_objects;
mod foundation;
mod nodes;
mod rotation_tasks;

use crate::flow::{Flow, FlowBuilder, GraphError, TaskError};
use crate::shoot::health::checks as health;
use crate::shoot::operation::apply::t;
use crate::shoot::operation::clients::shoot_client;
use crate::shoot::operation::context::OperationContext;
use api::core::controller::ControllerResourceLifecycleStrategy as Stage;
use api::core::shoot::credentials::RotationPhase;
use backup::complete_restore;
use backup::deploy_backup_entry;
pub(crate) use control_plane::control_plane_values;
use control_plane::deploy_apiserver_service;
use control_plane::deploy_control_plane;
use control_plane::deploy_etcd;
use control_plane::deploy_kcm;
use control_plane::deploy_kube_apiserver;
use control_plane::deploy_scheduler;
use control_plane::deploy_secrets;
use extension_objects::deploy_dns_records;
use extension_objects::deploy_extensions;
use extension_objects::deploy_infrastructure;
use extension_objects::deploy_network;
use foundation::deploy_cloudprovider_secret;
pub(crate) use foundation::deploy_cluster;
use foundation::deploy_namespace;
pub use foundation::embedded_shoot;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use nodes::deploy_operating_system_configs;
use nodes::deploy_system_resources;
use nodes::deploy_worker;
use nodes::wait_kcm_controllers;
use nodes::wait_system_components;
use rotation_tasks::rewrite_secrets;
use rotation_tasks::service_account_tokens;
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
    let kcm_controllers = f.task_if(
        "Waiting until kube-controller-manager's controllers run",
        &[&kcm],
        running && has_workers,
        t(ctx, wait_kcm_controllers),
    );
    let worker = f.task_if(
        "Deploying Worker",
        &[&osc, &infra, &control_plane, &kcm_controllers],
        has_workers,
        t(ctx, deploy_worker),
    );
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
    // Nodes become ready only with the pod network: without the Network, this wait could only
    // run into its timeout, holding the whole operation after the Network task failed.
    let system_components = f.task_if(
        "Waiting until shoot system components are healthy",
        &[&worker, &network, &system_resources, &kcm, &scheduler, &new_tokens],
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
        kube_proxy_enabled: crate::components::kube_proxy::enabled(&ctx.shoot),
        tunnel: ctx.values.workers,
        shoot,
        workloads: None,
    })
    .await
}

async fn check_health(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let conditions = conditions(&ctx).await;
    ctx.found().conditions = conditions;
    if ctx.restore.is_some() && !ctx.values.hibernated {
        let pods = health::etcd_pods(&ctx.seed, ctx.values.namespace()).await;
        ctx.found().etcd_restore = health::restore_note(&pods);
    }
    Ok(())
}

/// Owner references for objects in the seed namespace, for reuse by other flows.
pub fn cluster_owner(ctx: &OperationContext) -> Option<OwnerReference> {
    ctx.found().cluster_owner.clone()
}
