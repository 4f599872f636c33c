//! Deleting a shoot, with or without the cleanup of its extension objects.

use super::now;
use crate::shoot::controller::{ShootController, ShootError};
use crate::shoot::flows::{delete, force_delete};
use crate::shoot::status::last_operation::{finished, started};
use api::common::LastOperationType;
use api::core::Shoot;
use api::helpers::constants::FINALIZER_GARDENER;
use kube::ResourceExt;
use kube::runtime::controller::Action as RequeueAction;
use serde_json::json;
use std::time::Duration;

impl ShootController {
    #[tracing::instrument(skip_all, fields(shoot = %shoot.name_any(), namespace = ?shoot.namespace()))]
    /// Deletes the shoot. `cancel` ends the flow early when the shoot is force-deleted meanwhile
    /// ([`crate::shoot::controller::cancel`]): nothing more is written, and the force-deletion
    /// runs next.
    pub(crate) async fn delete_shoot(
        &self,
        shoot: &Shoot,
        cancel: Option<&crate::shoot::controller::cancel::Cancel>,
    ) -> Result<RequeueAction, ShootError> {
        self.run_deletion(shoot, false, cancel).await
    }

    /// Deletes the shoot without the cleanup of its extension objects
    /// ([`crate::shoot::flows::force_delete`]), as `confirmation.gardener.cloud/force-deletion`
    /// confirms; the status and the finalizer are handled as for a deletion.
    #[tracing::instrument(skip_all, fields(shoot = %shoot.name_any(), namespace = ?shoot.namespace()))]
    pub(crate) async fn force_delete_shoot(&self, shoot: &Shoot) -> Result<RequeueAction, ShootError> {
        self.run_deletion(shoot, true, None).await
    }

    async fn run_deletion(
        &self,
        shoot: &Shoot,
        force: bool,
        cancel: Option<&crate::shoot::controller::cancel::Cancel>,
    ) -> Result<RequeueAction, ShootError> {
        if !shoot.finalizers().iter().any(|f| f == FINALIZER_GARDENER) {
            return Ok(RequeueAction::await_change());
        }
        let ctx = self.context(shoot, true, false, api::helpers::rotation::status(shoot).cloned()).await?;
        self.patch_status(shoot, json!({ "lastOperation": started(LastOperationType::Delete, &now()) })).await?;
        let flow = if force { force_delete::flow(&ctx) } else { delete::flow(&ctx) }
            .map_err(|source| ShootError::Graph { shoot: shoot.name_any(), source })?;
        let run = self.run_flow(shoot, LastOperationType::Delete, flow, false, ctx.redaction(), true);
        let result = match cancel {
            None => run.await,
            Some(cancel) => tokio::select! {
                result = run => result,
                () = cancel.cancelled() => {
                    // As for a cancelled reconcile: the running tasks are dropped where they
                    // are, and the force-deletion's flow takes over.
                    tracing::info!("cancelled: the shoot is being force-deleted");
                    return Ok(RequeueAction::requeue(Duration::ZERO));
                }
            },
        };
        if !result.is_success() {
            let retry_window = Duration::from_secs(self.config.controllers.shoot_retry_window_seconds);
            let outcome = finished(LastOperationType::Delete, shoot.status.as_ref(), &result, retry_window, &now());
            self.patch_status(
                shoot,
                json!({ "lastOperation": outcome.last_operation, "lastErrors": outcome.last_errors }),
            )
            .await?;
            return Err(ShootError::Flow { shoot: shoot.name_any(), summary: result.summary() });
        }
        let remaining: Vec<String> = shoot.finalizers().iter().filter(|f| *f != FINALIZER_GARDENER).cloned().collect();
        self.patch_meta(shoot, json!({ "metadata": { "finalizers": remaining } }), "releasing the finalizer").await?;
        Ok(RequeueAction::await_change())
    }
}
