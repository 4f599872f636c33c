//! The deletion flow: extension objects deleted and waited for in reverse order of creation,
//! the control plane removed, the namespace deleted and waited for, the ShootState removed.
//! A shoot whose creation never got far deletes cleanly too: every step tolerates objects
//! that were never created.

use crate::components::{etcd, kube_apiserver, kube_controller_manager, kube_scheduler};
use crate::flow::{Flow, FlowBuilder, GraphError, TaskError};
use crate::shoot::operation::apply::{deploy_err, t, task_err};
use crate::shoot::operation::context::OperationContext;
use api::core::ShootState;
use api::extensions::{
    Cluster, ControlPlane, DNSRecord, Extension, Infrastructure, Network, OperatingSystemConfig, Worker,
};
use extension_sdk::kinds::ExtensionResource;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Service};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::sync::Arc;

/// Deletes every object of kind `K` in the shoot namespace and waits until they are gone.
pub(crate) async fn delete_all<K>(ctx: Arc<OperationContext>) -> Result<(), TaskError>
where
    K: ExtensionResource<KindScope = NamespaceResourceScope>,
{
    let api: Api<K> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    let names: Vec<String> =
        api.list(&ListParams::default()).await.map_err(task_err)?.items.iter().map(|o| o.name_any()).collect();
    for name in names {
        ctx.deployer.delete_and_wait::<K>(Some(ctx.values.namespace()), &name).await.map_err(deploy_err)?;
    }
    Ok(())
}

async fn delete_object<K>(ctx: &OperationContext, name: &str) -> Result<(), TaskError>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + Debug + DeserializeOwned,
{
    let api: Api<K> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(TaskError::context(format!("deleting {} {}/{name}", K::kind(&()), ctx.values.namespace()), &e)),
    }
}

pub(crate) async fn delete_control_plane(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    for name in [kube_scheduler::NAME, kube_controller_manager::NAME, kube_apiserver::NAME] {
        delete_object::<Deployment>(&ctx, name).await?;
    }
    delete_object::<Service>(&ctx, kube_apiserver::NAME).await
}

pub(crate) async fn delete_etcd(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    delete_object::<StatefulSet>(&ctx, etcd::NAME).await?;
    delete_object::<Service>(&ctx, etcd::CLIENT_SERVICE).await?;
    delete_object::<Service>(&ctx, etcd::PEER_SERVICE).await
}

pub(crate) async fn delete_cluster(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let api: Api<Cluster> = Api::all(ctx.seed.clone());
    match api.delete(ctx.values.namespace(), &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(task_err(e)),
    }
}

/// Deletes the namespace and waits until it is gone (namespace finalization needs
/// kube-controller-manager in the seed).
pub(crate) async fn delete_namespace(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let api: Api<Namespace> = Api::all(ctx.seed.clone());
    let Some(current) = api.get_opt(ctx.values.namespace()).await.map_err(task_err)? else {
        return Ok(());
    };
    let uid = current.uid().unwrap_or_default();
    match api.delete(ctx.values.namespace(), &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        Err(e) => return Err(task_err(e)),
    }
    // Gone, or replaced by a namespace with another UID.
    let gone = kube::runtime::wait::await_condition(
        api,
        ctx.values.namespace(),
        kube::runtime::wait::conditions::is_deleted(&uid),
    );
    match tokio::time::timeout(ctx.wait_timeout, gone).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(task_err(e)),
        Err(_) => Err(TaskError::msg(format!(
            "namespace {} still exists after {:?}",
            ctx.values.namespace(),
            ctx.wait_timeout
        ))),
    }
}

async fn delete_shootstate(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let api: Api<ShootState> = Api::namespaced(ctx.garden.clone(), &ctx.values.garden_namespace);
    match api.delete(&ctx.values.name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(task_err(e)),
    }
}

/// Deletes the shoot's extension BackupEntry in this seed and waits until it is gone (the
/// provider deletes the data): a migration's source, once the destination has the data.
pub(crate) async fn delete_extension_backup_entry(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let Some(uid) = ctx.shoot.metadata.uid.as_deref() else { return Ok(()) };
    let name = crate::shoot::objects::extensions::backup_entry_name(&ctx.values, uid);
    ctx.deployer.delete_and_wait::<api::extensions::BackupEntry>(None, &name).await.map_err(deploy_err)
}

/// Deletes the shoot's garden BackupEntry: the BackupEntry controller keeps the backups for
/// the deletion grace period, then deletes the extension entry and with it the data
/// ([`crate::backupentry`]). A shoot without a garden entry (created before there were any) has
/// its extension entry deleted now.
pub(crate) async fn delete_backup_entry(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let Some(uid) = ctx.shoot.metadata.uid.as_deref() else { return Ok(()) };
    let name = crate::shoot::objects::extensions::backup_entry_name(&ctx.values, uid);
    let api: Api<api::core::BackupEntry> = Api::namespaced(ctx.garden.clone(), &ctx.values.garden_namespace);
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        // Missing; through the seed authorizer a missing entry is refused (403) rather than not
        // found, since only an existing entry relates to the seed.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 403 => delete_extension_backup_entry(ctx).await,
        Err(e) => Err(task_err(e)),
    }
}

/// Builds the deletion flow for one shoot.
pub fn flow(ctx: &Arc<OperationContext>) -> Result<Flow, GraphError> {
    let mut f = FlowBuilder::new("Shoot deletion");
    let worker = f.task("Deleting Worker", &[], t(ctx, delete_all::<Worker>));
    let osc = f.task("Deleting OperatingSystemConfigs", &[&worker], t(ctx, delete_all::<OperatingSystemConfig>));
    let network = f.task("Deleting Network", &[&worker], t(ctx, delete_all::<Network>));
    let extensions = f.task("Deleting extensions", &[&worker], t(ctx, delete_all::<Extension>));
    let cp = f.task("Deleting ControlPlane", &[&worker], t(ctx, delete_all::<ControlPlane>));
    let control_plane = f.task(
        "Deleting kube-apiserver, kube-controller-manager, kube-scheduler",
        &[&cp, &extensions, &network],
        t(ctx, delete_control_plane),
    );
    let etcd_task = f.task("Deleting etcd", &[&control_plane], t(ctx, delete_etcd));
    let dns = f.task("Deleting DNS records", &[&control_plane], t(ctx, delete_all::<DNSRecord>));
    let infra = f.task("Deleting Infrastructure", &[&worker, &cp], t(ctx, delete_all::<Infrastructure>));
    let backup = f.task("Deleting BackupEntry", &[&etcd_task], t(ctx, delete_backup_entry));
    let cluster =
        f.task("Deleting Cluster resource", &[&osc, &dns, &infra, &etcd_task, &backup], t(ctx, delete_cluster));
    let ns = f.task("Deleting namespace", &[&cluster], t(ctx, delete_namespace));
    f.task("Deleting ShootState", &[&ns], t(ctx, delete_shootstate));
    f.build()
}
