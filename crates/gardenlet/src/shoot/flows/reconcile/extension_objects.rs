//! The extension objects that are neither control plane nor nodes: Infrastructure, DNS records, Network and the shoot's `Extension`s at their lifecycle stage.

use crate::flow::TaskError;
use crate::shoot::objects::extensions as ext;
use crate::shoot::operation::apply::deploy_extension;
use crate::shoot::operation::context::OperationContext;
use api::core::controller::ControllerResourceLifecycleStrategy as Stage;
use std::sync::Arc;

pub(super) async fn deploy_infrastructure(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let infra = deploy_extension(&ctx, &ext::infrastructure(&ctx.values, &ctx.shoot)).await?;
    ctx.found().infrastructure_status = infra.status.and_then(|s| s.default.provider_status);
    Ok(())
}

pub(super) async fn deploy_dns_records(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let Some(address) = ctx.found().address.clone() else {
        return Err(TaskError::msg("the kube-apiserver Service has no address"));
    };
    for record in ext::dns_records(&ctx.values, &ctx.shoot, &address) {
        deploy_extension(&ctx, &record).await?;
    }
    Ok(())
}

pub(super) async fn deploy_extensions(ctx: Arc<OperationContext>, stage: Stage) -> Result<(), TaskError> {
    for e in ext::extensions(&ctx.values, &ctx.shoot, &ctx.registrations, stage) {
        deploy_extension(&ctx, &e).await?;
    }
    Ok(())
}

pub(super) async fn deploy_network(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    match ext::network(&ctx.values, &ctx.shoot) {
        Some(n) => deploy_extension(&ctx, &n).await.map(|_| ()),
        None => Ok(()),
    }
}
