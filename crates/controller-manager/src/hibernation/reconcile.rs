//! One Shoot with hibernation schedules: parse them, decide with [`super::decide`], and when a
//! tick is due set `spec.hibernation.enabled` (a merge patch guarded by the resourceVersion that
//! was read, only when the value changes: the field belongs to the user, so it is not taken over
//! with server-side apply) and record `status.lastHibernationTriggerTime` (server-side apply,
//! field manager `gardener-controller-manager/shoot-hibernation`).

use super::Context;
use super::decide::{self, Facts};
use super::schedule::{self, Operation};
use crate::runtime::{self, field_manager};
use api::common::LastOperationState;
use api::core::Shoot;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;

pub const NAME: &str = "shoot-hibernation";

/// A failed API call, with what was being done.
pub use crate::runtime::KubeError as Error;
use crate::runtime::kube_err;

pub async fn reconcile(guard: Arc<DeserializeGuard<Shoot>>, ctx: Arc<Context>) -> Result<Action, Error> {
    let shoot = match &guard.0 {
        Ok(shoot) => shoot,
        Err(invalid) => {
            tracing::warn!(shoot = ?invalid.metadata.name, error = %invalid, "cannot read shoot; its schedules are not evaluated");
            return Ok(Action::await_change());
        }
    };
    runtime::instrumented(&ctx.common, shoot, reconcile_shoot(shoot, &ctx)).await
}

pub fn error_policy(guard: Arc<DeserializeGuard<Shoot>>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common.retry_after_failure(guard.as_ref())
}

/// A failed shoot whose failure is about its current spec is not hibernated or woken up.
fn failed_and_up_to_date(shoot: &Shoot) -> bool {
    let status = shoot.status.as_ref();
    status.and_then(|s| s.last_operation.as_ref()).is_some_and(|op| op.state == LastOperationState::Failed)
        && status.and_then(|s| s.observed_generation) == shoot.metadata.generation
}

#[tracing::instrument(skip_all, fields(shoot = %format!("{}/{}", shoot.namespace().unwrap_or_default(), shoot.name_any())))]
async fn reconcile_shoot(shoot: &Shoot, ctx: &Context) -> Result<Action, Error> {
    let schedules = shoot.spec.hibernation.as_ref().map(|h| h.schedules.as_slice()).unwrap_or_default();
    if shoot.metadata.deletion_timestamp.is_some() || schedules.is_empty() {
        return Ok(Action::await_change());
    }
    let (namespace, name) = (shoot.namespace().unwrap_or_default(), shoot.name_any());
    let parsed = match schedule::parse(schedules) {
        Ok(p) => p,
        Err(invalid) => {
            let message = format!("shoot {namespace}/{name}: {invalid}");
            ctx.common.event(shoot, EventType::Warning, "InvalidHibernationSchedule", "Hibernate", message).await;
            return Ok(Action::await_change());
        }
    };
    let now = ctx.common.clock.now();
    let facts = Facts {
        created: shoot.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0),
        last_trigger: shoot.status.as_ref().and_then(|s| s.last_hibernation_trigger_time.as_ref()).map(|t| t.0),
        now,
        trigger_deadline: ctx.config.trigger_deadline(),
    };
    let decision = decide::decide(&parsed, &facts);
    let requeue = decision.requeue_after.map_or_else(Action::await_change, Action::requeue);
    if failed_and_up_to_date(shoot) {
        return Ok(requeue);
    }
    let Some((operation, tick, field)) = decision.due else { return Ok(requeue) };
    let api: Api<Shoot> = Api::namespaced(ctx.common.client.clone(), &namespace);
    let enabled = operation.enabled();
    if shoot.spec.hibernation.as_ref().and_then(|h| h.enabled) != Some(enabled) {
        let patch = json!({
            "metadata": {"resourceVersion": shoot.resource_version()},
            "spec": {"hibernation": {"enabled": enabled}},
        });
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(kube_err(
            "WriteHibernationFailed",
            format!("setting spec.hibernation.enabled={enabled} on shoot {namespace}/{name}"),
        ))?;
        let (reason, what) = match operation {
            Operation::Hibernate => ("HibernationEnabled", "Hibernating cluster"),
            Operation::WakeUp => ("HibernationDisabled", "Waking up cluster"),
        };
        let message = format!("{what} due to schedule {field} (tick at {tick})");
        tracing::info!(%message);
        ctx.common.event(shoot, EventType::Normal, reason, "Hibernate", message).await;
    }
    let body = json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "Shoot",
        "status": {"lastHibernationTriggerTime": Time(now)},
    });
    api.patch_status(&name, &PatchParams::apply(&field_manager(NAME)).force(), &Patch::Apply(&body)).await.map_err(
        kube_err("WriteStatusFailed", format!("recording the hibernation trigger of shoot {namespace}/{name}")),
    )?;
    Ok(requeue)
}
