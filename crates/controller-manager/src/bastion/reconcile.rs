//! One Bastion: read its Shoot, decide with [`super::decide`], then record the heartbeat
//! (server-side apply of `status.lastHeartbeatTimestamp` and `status.expirationTimestamp` with
//! the field manager `gardener-controller-manager/bastion`; gardenlet owns the rest of the
//! status), remove a handled keep-alive annotation, or delete the Bastion.

use super::Context;
use super::decide::{self, Decision, Facts, ShootState};
use crate::runtime::{self, field_manager};
use api::core::Shoot;
use api::helpers::constants::{ANNOTATION_OPERATION, operation};
use api::operations::Bastion;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;

pub const NAME: &str = "bastion";

/// A failed API call, with what was being done.
pub use crate::runtime::KubeError as Error;
use crate::runtime::kube_err;

pub async fn reconcile(bastion: Arc<Bastion>, ctx: Arc<Context>) -> Result<Action, Error> {
    runtime::instrumented(&ctx.common, bastion.as_ref(), reconcile_bastion(&bastion, &ctx)).await
}

pub fn error_policy(bastion: Arc<Bastion>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common.retry_after_failure(bastion.as_ref())
}

#[tracing::instrument(skip_all, fields(bastion = %format!("{}/{}", bastion.namespace().unwrap_or_default(), bastion.name_any())))]
async fn reconcile_bastion(bastion: &Bastion, ctx: &Context) -> Result<Action, Error> {
    if bastion.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let (namespace, name) = (bastion.namespace().unwrap_or_default(), bastion.name_any());
    let shoot_name = &bastion.spec.shoot_ref.name;
    let shoots: Api<DeserializeGuard<Shoot>> = Api::namespaced(ctx.common.client.clone(), &namespace);
    let shoot = shoots
        .get_opt(shoot_name)
        .await
        .map_err(kube_err("ReadShootFailed", format!("reading Shoot {namespace}/{shoot_name} of Bastion {name}")))?;
    let shoot = match shoot {
        None => ShootState::Missing,
        Some(DeserializeGuard(Ok(s))) if s.metadata.deletion_timestamp.is_some() => ShootState::Deleting,
        Some(DeserializeGuard(Ok(s))) => ShootState::Present(s.spec.seed_name),
        // A shoot we cannot read still exists; its seed is unknown, so it is not a migration.
        Some(DeserializeGuard(Err(invalid))) if invalid.metadata.deletion_timestamp.is_some() => ShootState::Deleting,
        Some(DeserializeGuard(Err(_))) => ShootState::Present(None),
    };
    let status = bastion.status.as_ref();
    let keepalive = bastion.annotations().get(ANNOTATION_OPERATION).map(String::as_str) == Some(operation::KEEPALIVE);
    let facts = Facts {
        created: bastion.metadata.creation_timestamp.as_ref().map_or(ctx.common.clock.now(), |t| t.0),
        last_heartbeat: status.and_then(|s| s.last_heartbeat_timestamp.as_ref()).map(|t| t.0),
        expiration: status.and_then(|s| s.expiration_timestamp.as_ref()).map(|t| t.0),
        keepalive,
        seed: bastion.spec.seed_name.as_deref(),
        shoot,
        now: ctx.common.clock.now(),
    };
    let api: Api<Bastion> = Api::namespaced(ctx.common.client.clone(), &namespace);
    match decide::decide(&facts, ctx.config.max_lifetime(), ctx.config.heartbeat_timeout()) {
        Decision::Delete { reason, message } => {
            let message = format!("Bastion {name} is deleted: {message}");
            tracing::info!(%reason, %message, "deleting the bastion");
            ctx.common.event(bastion, EventType::Normal, reason, "Delete", message).await;
            let params = DeleteParams {
                preconditions: Some(Preconditions { uid: bastion.uid(), resource_version: None }),
                ..Default::default()
            };
            match api.delete(&name, &params).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(kube_err("DeleteBastionFailed", format!("deleting Bastion {namespace}/{name}"))(e));
                }
            }
            Ok(Action::await_change())
        }
        Decision::Keep { last_heartbeat, expiration, remove_keepalive, requeue_after } => {
            // The resourceVersion the annotation removal is guarded by: the status write's, when
            // there is one (it moves the object's resourceVersion).
            let mut resource_version = bastion.resource_version();
            if facts.last_heartbeat != Some(last_heartbeat) || facts.expiration != Some(expiration) {
                let body = json!({
                    "apiVersion": "operations.gardener.cloud/v1alpha1",
                    "kind": "Bastion",
                    "status": {"lastHeartbeatTimestamp": Time(last_heartbeat), "expirationTimestamp": Time(expiration)},
                });
                let written = api
                    .patch_status(&name, &PatchParams::apply(&field_manager(NAME)).force(), &Patch::Apply(&body))
                    .await
                    .map_err(kube_err(
                        "WriteStatusFailed",
                        format!("recording the heartbeat of Bastion {namespace}/{name}"),
                    ))?;
                resource_version = written.resource_version();
            }
            if remove_keepalive {
                let patch = json!({"metadata": {
                    "resourceVersion": resource_version,
                    "annotations": {ANNOTATION_OPERATION: null},
                }});
                match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                    Ok(_) => {}
                    // Changed meanwhile (perhaps another keep-alive): the next round handles it.
                    Err(kube::Error::Api(s)) if s.code == 409 => return Ok(Action::requeue(std::time::Duration::ZERO)),
                    Err(e) => {
                        return Err(kube_err(
                            "WriteAnnotationFailed",
                            format!("removing the keep-alive of Bastion {namespace}/{name}"),
                        )(e));
                    }
                }
            }
            Ok(Action::requeue(requeue_after))
        }
    }
}
