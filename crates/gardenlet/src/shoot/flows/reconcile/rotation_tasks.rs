//! The tasks of credential rotations inside the shoot: service-account token Secrets and the rewrite of every Secret with a new etcd encryption key.

use crate::flow::TaskError;
use crate::shoot::operation::apply::task_err;
use crate::shoot::operation::clients::shoot_client;
use crate::shoot::operation::context::OperationContext;
use api::core::shoot::credentials::RotationPhase;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};
use std::sync::Arc;

/// The token Secrets of a service-account key rotation: new ones in phase one, the old ones
/// deleted in phase two.
pub(super) async fn service_account_tokens(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
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
pub(super) async fn rewrite_secrets(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let client = shoot_client(&ctx).await?;
    let secrets: Api<Secret> = Api::all(client.clone());
    let rewritten = super::encryption::rewrite_all(&secrets, |secret| {
        Api::namespaced(client.clone(), &secret.namespace().unwrap_or_default())
    })
    .await?;
    tracing::info!(rewritten, "Secrets rewritten with the new etcd encryption key");
    // The resources of encryptionConfig.resources are encrypted with the same key.
    for resource in
        crate::components::kube_apiserver::listed_encrypted_resources(&ctx.values.apiserver.encrypted_resources)
    {
        let rewritten = super::encryption::rewrite(&client, &resource).await?;
        tracing::info!(%resource, rewritten, "objects rewritten with the new etcd encryption key");
    }
    Ok(())
}
