//! What every operation runs on: its context, and its flow with coalesced progress writes.

use super::now;
use crate::flow::{Progress, RunOptions};
use crate::shoot::controller::{ShootController, ShootError};
use crate::shoot::operation::context::OperationContext;
use crate::shoot::operation::values::ShootValues;
use crate::shoot::status::last_operation::progressed;
use api::common::{LastOperation, LastOperationType};
use api::core::shoot::credentials::ShootCredentialsRotation;
use api::core::{Seed, Shoot};
use extension_sdk::deployer::Deployer;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The least time between two progress writes of one operation.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

impl ShootController {
    /// Runs a flow, writing progress to the Shoot as tasks finish (the latest value wins).
    pub(crate) async fn run_flow(
        &self,
        shoot: &Shoot,
        type_: LastOperationType,
        flow: crate::flow::Flow,
        as_owner: bool,
        redact: crate::flow::RedactFn,
        report_progress: bool,
    ) -> crate::flow::FlowResult {
        let (tx, mut rx) = tokio::sync::watch::channel::<Option<LastOperation>>(None);
        let options = RunOptions {
            on_progress: report_progress.then(|| -> Arc<dyn Fn(&Progress) + Send + Sync> {
                Arc::new(move |p: &Progress| {
                    let running: Vec<&str> = p.running.iter().map(|t| t.0.as_str()).collect();
                    let _ = tx.send(Some(progressed(type_, p.percent, &p.finished.0, &running, &now())));
                })
            }),
            task_duration: self.metrics.as_ref().map(|m| m.task_duration.clone()),
            redact: Some(redact),
            ..Default::default()
        };
        let writer = {
            let shoot = shoot.clone();
            let this = self.clone_handle();
            async move {
                // Coalesced: at most one progress write per PROGRESS_INTERVAL (the latest value
                // wins; a value held back is written when the interval is over). The final
                // status write follows the flow anyway.
                let mut last_write: Option<std::time::Instant> = None;
                let mut pending: Option<LastOperation> = None;
                loop {
                    let changed = match (&pending, last_write) {
                        (Some(_), Some(at)) => {
                            let rest = PROGRESS_INTERVAL.saturating_sub(at.elapsed());
                            tokio::time::timeout(rest, rx.changed()).await
                        }
                        _ => Ok(rx.changed().await),
                    };
                    match changed {
                        Ok(Err(_)) => break,
                        Ok(Ok(())) => {
                            pending = rx.borrow_and_update().clone().or(pending);
                            if last_write.is_some_and(|at| at.elapsed() < PROGRESS_INTERVAL) {
                                continue;
                            }
                        }
                        Err(_interval_over) => {}
                    }
                    let Some(op) = pending.take() else { continue };
                    last_write = Some(std::time::Instant::now());
                    let status = json!({ "lastOperation": op });
                    let written = if as_owner {
                        this.patch_status_as_owner(&shoot, |_| Some(status.clone())).await.map(|_| ())
                    } else {
                        this.patch_status(&shoot, status).await
                    };
                    if let Err(e) = written {
                        tracing::debug!(error = %runtime::events::error_chain(&e), "progress update failed");
                    }
                }
            }
        };
        let (result, ()) = tokio::join!(async move { flow.run(&options).await }, writer);
        result
    }

    pub(crate) fn clone_handle(&self) -> Self {
        Self {
            garden: self.garden.clone(),
            seed: self.seed.clone(),
            config: self.config.clone(),
            wait_timeout: self.wait_timeout,
            backoff: self.backoff.clone(),
            metrics: self.metrics.clone(),
            caches: self.caches.clone(),
        }
    }

    pub(crate) async fn context(
        &self,
        shoot: &Shoot,
        force: bool,
        restore: bool,
        rotation: Option<ShootCredentialsRotation>,
    ) -> Result<Arc<OperationContext>, ShootError> {
        let seeds: Api<Seed> = Api::all(self.garden.clone());
        let seed = match self.caches.seed(&self.config.seed.name) {
            Some(cached) => cached,
            None => seeds.get_opt(&self.config.seed.name).await.map_err(|source| ShootError::Kube {
                what: "reading the Seed",
                shoot: shoot.name_any(),
                source,
            })?,
        };
        let values = ShootValues::new(shoot, seed.as_ref())?;
        let registrations = match self.caches.registrations() {
            Some(cached) => cached,
            None => {
                Api::<api::core::ControllerRegistration>::all(self.garden.clone())
                    .list(&Default::default())
                    .await
                    .map_err(|source| ShootError::Kube {
                        what: "listing ControllerRegistrations",
                        shoot: shoot.name_any(),
                        source,
                    })?
                    .items
            }
        };
        let states: Api<api::core::ShootState> =
            Api::namespaced(self.garden.clone(), &shoot.namespace().unwrap_or_default());
        let state = states.get_opt(&shoot.name_any()).await.map_err(|source| ShootError::Kube {
            what: "reading the ShootState",
            shoot: shoot.name_any(),
            source,
        })?;
        let deployer = Deployer::new(self.seed.clone()).with_timeout(self.wait_timeout);
        Ok(Arc::new(
            OperationContext::new(
                self.garden.clone(),
                self.seed.clone(),
                self.config.clone(),
                deployer,
                shoot.clone(),
                seed,
                values,
                force,
                self.wait_timeout,
            )
            .with_registrations(registrations)
            .with_cloud_profile(self.caches.cloud_profile(shoot))
            .with_shoot_state(state.as_ref(), restore)
            .with_rotation(rotation),
        ))
    }
}
