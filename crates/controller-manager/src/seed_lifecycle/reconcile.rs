//! One Seed: read its heartbeat Lease, decide with [`super::decide`], and write the Seed's
//! `GardenletReady` condition and (after the shoot grace period) the conditions of its Shoots.
//! Both are shared with gardenlet, which writes whole condition lists, so every write is a merge
//! patch on the status subresource guarded by the resourceVersion that was read: a concurrent
//! gardenlet write makes ours fail (and retry) instead of being overwritten.

use super::decide::{self, Facts};
use super::{Context, SEED_LEASE_NAMESPACE};
use crate::runtime;
use api::core::{Seed, Shoot};
use api::helpers::constants::conditions::GARDENLET_READY;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{ListParams, Patch, PatchParams};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;

pub const NAME: &str = "seed-lifecycle";

/// A failed API call, with what was being done.
pub use crate::runtime::KubeError as Error;
use crate::runtime::kube_err;

pub async fn reconcile(seed: Arc<Seed>, ctx: Arc<Context>) -> Result<Action, Error> {
    runtime::instrumented(&ctx.common, seed.as_ref(), reconcile_seed(&seed, &ctx)).await
}

pub fn error_policy(seed: Arc<Seed>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common.retry_after_failure(seed.as_ref())
}

#[tracing::instrument(skip_all, fields(seed = %seed.name_any()))]
async fn reconcile_seed(seed: &Seed, ctx: &Context) -> Result<Action, Error> {
    if seed.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let name = seed.name_any();
    let lease = ctx.leases.get(&ObjectRef::<Lease>::new(&name).within(SEED_LEASE_NAMESPACE));
    let now = ctx.common.clock.now();
    let facts = Facts {
        seed: &name,
        created: seed.metadata.creation_timestamp.as_ref().map(|t| t.0),
        renewed: lease.as_ref().and_then(|l| l.spec.as_ref()?.renew_time.as_ref().map(|t| t.0)),
        gardenlet_ready: seed.status.as_ref().and_then(|s| s.condition(GARDENLET_READY)),
        now,
    };
    let decision = decide::decide(&facts, ctx.config.gardenlet_grace_period(), ctx.config.shoot_grace_period());
    if let Some(message) = &decision.seed_unknown {
        let current = seed.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        if let Some(conditions) = decide::seed_conditions(current, message, now) {
            tracing::info!(%message, "gardenlet stopped renewing its lease; GardenletReady is Unknown");
            let patch =
                json!({"metadata": {"resourceVersion": seed.resource_version()}, "status": {"conditions": conditions}});
            Api::<Seed>::all(ctx.common.client.clone())
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(kube_err("WriteSeedStatusFailed", format!("setting GardenletReady=Unknown on seed {name}")))?;
        }
    }
    if decision.shoots_unknown {
        mark_shoots_unknown(ctx, &name).await?;
    }
    Ok(decision.requeue_after.map_or_else(Action::await_change, Action::requeue))
}

/// Sets the conditions of every Shoot whose `spec.seedName` is the seed to `Unknown`. (Shoots
/// are listed only here, when a seed has been dead for the shoot grace period, so the
/// controller keeps no cache of them.)
async fn mark_shoots_unknown(ctx: &Context, seed: &str) -> Result<(), Error> {
    let all: Api<DeserializeGuard<Shoot>> = Api::all(ctx.common.client.clone());
    let shoots = all
        .list(&ListParams::default())
        .await
        .map_err(kube_err("ListShootsFailed", format!("listing the shoots of seed {seed}")))?;
    let now = ctx.common.clock.now();
    for guard in shoots.items {
        let shoot = match guard.0 {
            Ok(shoot) => shoot,
            Err(invalid) => {
                tracing::warn!(shoot = ?invalid.metadata.name, error = %invalid, "cannot read shoot; skipped");
                continue;
            }
        };
        if shoot.spec.seed_name.as_deref() != Some(seed) {
            continue;
        }
        let Some((conditions, constraints)) = decide::shoot_status(shoot.status.as_ref(), now) else { continue };
        let (namespace, name) = (shoot.namespace().unwrap_or_default(), shoot.name_any());
        tracing::info!(shoot = %format!("{namespace}/{name}"), "setting the shoot's conditions to Unknown");
        let patch = json!({
            "metadata": {"resourceVersion": shoot.resource_version()},
            "status": {"conditions": conditions, "constraints": constraints},
        });
        Api::<Shoot>::namespaced(ctx.common.client.clone(), &namespace)
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(kube_err(
                "WriteShootStatusFailed",
                format!("setting the conditions of shoot {namespace}/{name} (seed {seed}) to Unknown"),
            ))?;
    }
    Ok(())
}
