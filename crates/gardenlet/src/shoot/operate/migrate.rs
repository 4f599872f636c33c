//! Migrating a shoot's control plane away from this seed and handing the shoot over.

use super::now;
use crate::shoot::controller::{ShootController, ShootError, backoff_key};
use crate::shoot::flows::migrate;
use crate::shoot::status::last_operation::{finished, started};
use api::common::LastOperationType;
use api::core::Shoot;
use kube::ResourceExt;
use kube::runtime::controller::Action as RequeueAction;
use serde_json::json;
use std::time::Duration;

impl ShootController {
    /// Migrates the shoot away from this seed and hands it over to `spec.seedName` (only
    /// after the whole flow succeeded: until then this seed stays the owner).
    #[tracing::instrument(skip_all, fields(shoot = %shoot.name_any(), namespace = ?shoot.namespace()))]
    pub(crate) async fn migrate_shoot(&self, shoot: &Shoot) -> Result<RequeueAction, ShootError> {
        let Some(destination) = shoot.spec.seed_name.clone() else {
            return Ok(RequeueAction::await_change());
        };
        let ctx = self.context(shoot, true, false, api::helpers::rotation::status(shoot).cloned()).await?;
        let start = json!({ "lastOperation": started(LastOperationType::Migrate, &now()) });
        if !self.patch_status_as_owner(shoot, |_| Some(start.clone())).await? {
            return Ok(RequeueAction::await_change());
        }
        let flow = migrate::flow(&ctx).map_err(|source| ShootError::Graph { shoot: shoot.name_any(), source })?;
        let result = self.run_flow(shoot, LastOperationType::Migrate, flow, true, ctx.redaction(), true).await;
        let retry_window = Duration::from_secs(self.config.controllers.shoot_retry_window_seconds);
        let outcome = finished(LastOperationType::Migrate, shoot.status.as_ref(), &result, retry_window, &now());
        if !result.is_success() {
            let status = json!({
                "lastOperation": outcome.last_operation,
                "lastErrors": outcome.last_errors,
                "retryCycleStartTime": outcome.retry_cycle_start_time,
            });
            self.patch_status_as_owner(shoot, |_| Some(status.clone())).await?;
            if outcome.failed {
                return Ok(RequeueAction::await_change());
            }
            return Err(ShootError::Flow { shoot: shoot.name_any(), summary: result.summary() });
        }
        // Hand over only while this seed still owns the shoot, and only to the seed the
        // latest spec names (if it names another one at all).
        let own = self.config.seed.name.clone();
        let handed_over = self
            .patch_status_as_owner(shoot, |latest| {
                let destination = latest.spec.seed_name.clone().filter(|d| *d != own)?;
                tracing::info!(%destination, "control plane migrated; handing the shoot over");
                Some(json!({ "lastOperation": outcome.last_operation, "lastErrors": [], "seedName": destination }))
            })
            .await?;
        if !handed_over {
            tracing::warn!(%destination, "not handed over: the shoot changed owner or no longer names another seed");
            return Ok(RequeueAction::await_change());
        }
        self.backoff.reset(&backoff_key(shoot));
        Ok(RequeueAction::await_change())
    }
}
