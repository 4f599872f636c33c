//! The hibernation flow: the Worker first (the provider sees hibernation through the Cluster
//! and scales machines to zero), then kube-controller-manager and kube-scheduler, then
//! kube-apiserver, then etcd; DNS records are removed once the API server is down. Waking up
//! is an ordinary reconcile (with every extension object reconciled again).
//!
//! A shoot created with hibernation enabled is created "never started": the reconcile flow
//! creates its infrastructure, secrets and control-plane objects with zero replicas.

use crate::components::{etcd, kube_apiserver, kube_controller_manager, kube_scheduler};
use crate::flow::{Flow, FlowBuilder, GraphError, TaskError};
use crate::shoot::flows::reconcile::{control_plane_values, deploy_cluster};
use crate::shoot::health::checks as health;
use crate::shoot::operation::apply::{apply, deploy_err, t, task_err, wait_for};
use crate::shoot::operation::context::OperationContext;
use crate::shoot::operation::readiness as checks;
use api::extensions::{DNSRecord, Worker};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use std::sync::Arc;

async fn hibernate_worker(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let ns = ctx.values.namespace();
    let workers: Api<Worker> = Api::namespaced(ctx.seed.clone(), ns);
    for w in workers.list(&ListParams::default()).await.map_err(task_err)? {
        ctx.deployer.request_reconcile::<Worker>(Some(ns), &w.name_any()).await.map_err(deploy_err)?;
        ctx.deployer.wait::<Worker>(Some(ns), &w.name_any(), None).await.map_err(deploy_err)?;
    }
    Ok(())
}

async fn scale_deployments(ctx: &OperationContext, deployments: Vec<Deployment>) -> Result<(), TaskError> {
    let api: Api<Deployment> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    for d in deployments {
        let name = d.name_any();
        if api.get_opt(&name).await.map_err(task_err)?.is_none() {
            continue;
        }
        apply(ctx, &d).await?;
        wait_for::<Deployment>(ctx, &name, checks::deployment_rolled_out).await?;
    }
    Ok(())
}

async fn scale_down_controllers(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let v = control_plane_values(&ctx);
    scale_deployments(&ctx, vec![kube_controller_manager::deployment(&v), kube_scheduler::deployment(&v)]).await
}

async fn scale_down_apiserver(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let v = control_plane_values(&ctx);
    scale_deployments(&ctx, vec![kube_apiserver::deployment(&v)]).await
}

async fn scale_down_etcd(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let v = control_plane_values(&ctx);
    let api: Api<StatefulSet> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    if api.get_opt(etcd::NAME).await.map_err(task_err)?.is_none() {
        return Ok(());
    }
    apply(&ctx, &etcd::statefulset(&v)).await?;
    wait_for::<StatefulSet>(&ctx, etcd::NAME, checks::statefulset_ready).await.map(|_| ())
}

async fn delete_dns_records(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let ns = ctx.values.namespace();
    let api: Api<DNSRecord> = Api::namespaced(ctx.seed.clone(), ns);
    for r in api.list(&ListParams::default()).await.map_err(task_err)? {
        ctx.deployer.delete_and_wait::<DNSRecord>(Some(ns), &r.name_any()).await.map_err(deploy_err)?;
    }
    Ok(())
}

async fn hibernated_conditions(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    ctx.found().conditions = health::hibernated();
    Ok(())
}

/// Builds the hibernation flow (see the module documentation for the order).
pub fn flow(ctx: &Arc<OperationContext>) -> Result<Flow, GraphError> {
    let mut f = FlowBuilder::new("Shoot hibernation");
    let cluster = f.task("Deploying Cluster resource", &[], t(ctx, deploy_cluster));
    let worker = f.task("Hibernating Worker", &[&cluster], t(ctx, hibernate_worker));
    let controllers = f.task(
        "Scaling kube-controller-manager and kube-scheduler to zero",
        &[&worker],
        t(ctx, scale_down_controllers),
    );
    let apiserver = f.task("Scaling kube-apiserver to zero", &[&controllers], t(ctx, scale_down_apiserver));
    let etcd_task = f.task("Scaling etcd to zero", &[&apiserver], t(ctx, scale_down_etcd));
    let dns = f.task("Deleting DNS records", &[&apiserver], t(ctx, delete_dns_records));
    f.task("Reporting hibernated conditions", &[&etcd_task, &dns], t(ctx, hibernated_conditions));
    f.build()
}
