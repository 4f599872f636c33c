//! One operation on one shoot from start to end, as the controller dispatches it: prepare the
//! Shoot (finalizer, operation annotation), build the operation's context, record the start,
//! run the flow with coalesced progress writes, and record the outcome. Every write to a Shoot
//! of an operation goes through the writers here, guarded by ownership where a migration or a
//! takeover could race (see `ShootController::patch_status_as_owner`).

use crate::flow::{Progress, RunOptions};
use crate::shoot::controller::{ShootController, ShootError, backoff_key, rollout};
use crate::shoot::flows::{delete, force_delete, hibernate, migrate, reconcile};
use crate::shoot::operation::context::OperationContext;
use crate::shoot::operation::values::ShootValues;
use crate::shoot::status::last_operation::{finished, progressed, quiet_resync, reconcile_type, started, unchanged};
use api::common::{LastOperation, LastOperationType};
use api::core::shoot::credentials::ShootCredentialsRotation;
use api::core::{Seed, Shoot};
use api::helpers::constants::{ANNOTATION_OPERATION, FINALIZER_GARDENER};
use extension_sdk::deployer::Deployer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action as RequeueAction;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The least time between two progress writes of one operation.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

fn now() -> Time {
    Time(Timestamp::now())
}

impl ShootController {
    pub(crate) fn shoots(&self, namespace: &str) -> Api<Shoot> {
        Api::namespaced(self.garden.clone(), namespace)
    }

    pub(crate) async fn patch_status(&self, shoot: &Shoot, status: serde_json::Value) -> Result<(), ShootError> {
        let ns = shoot.namespace().unwrap_or_default();
        self.shoots(&ns)
            .patch_status(&shoot.name_any(), &PatchParams::default(), &Patch::Merge(&json!({ "status": status })))
            .await
            .map_err(|source| ShootError::Kube { what: "writing the status", shoot: shoot.name_any(), source })?;
        Ok(())
    }

    /// Writes the status only while this seed owns the shoot (`status.seedName`), guarded by
    /// the resourceVersion it checked: a source seed that lost the shoot to a forced takeover
    /// must not overwrite the new owner's status. `status` builds the write from the latest
    /// Shoot (`None`: write nothing). `Ok(false)` when nothing was written.
    pub(crate) async fn patch_status_as_owner(
        &self,
        shoot: &Shoot,
        status: impl Fn(&Shoot) -> Option<serde_json::Value>,
    ) -> Result<bool, ShootError> {
        let ns = shoot.namespace().unwrap_or_default();
        let err = |what| move |source| ShootError::Kube { what, shoot: shoot.name_any(), source };
        for attempt in 1..=3 {
            // First from the watch cache: a write is conditional on the resourceVersion it was
            // decided on, so a stale copy costs a conflict and a fresh read. Deciding *not* to
            // write is only ever done on a fresh read.
            let cached = (attempt == 1)
                .then(|| self.caches.shoots().get(&kube::runtime::reflector::ObjectRef::from_obj(shoot)))
                .flatten();
            let from_cache = cached.as_deref().and_then(|latest| self.owner_status(latest, &status));
            let (latest_version, status) = match from_cache {
                Some(decided) => decided,
                None => {
                    let Some(latest) =
                        self.shoots(&ns).get_opt(&shoot.name_any()).await.map_err(err("reading the shoot"))?
                    else {
                        return Ok(false);
                    };
                    if latest.status.as_ref().and_then(|s| s.seed_name.as_deref())
                        != Some(self.config.seed.name.as_str())
                    {
                        tracing::warn!("another seed owns the shoot now; this seed writes nothing");
                        return Ok(false);
                    }
                    let Some(status) = status(&latest) else { return Ok(false) };
                    (latest.resource_version(), status)
                }
            };
            let patch = json!({ "metadata": { "resourceVersion": latest_version }, "status": status });
            match self.shoots(&ns).patch_status(&shoot.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await
            {
                Ok(_) => return Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 && attempt < 3 => continue,
                Err(e) => return Err(err("writing the status")(e)),
            }
        }
        Ok(false)
    }

    /// The write `status` asks for on `latest`, with its resourceVersion, when this seed owns
    /// the shoot according to `latest`; `None` otherwise (then a fresh read decides).
    pub(crate) fn owner_status(
        &self,
        latest: &Shoot,
        status: &impl Fn(&Shoot) -> Option<serde_json::Value>,
    ) -> Option<(Option<String>, serde_json::Value)> {
        let owner = latest.status.as_ref().and_then(|s| s.seed_name.as_deref());
        if owner != Some(self.config.seed.name.as_str()) {
            return None;
        }
        status(latest).map(|s| (latest.resource_version(), s))
    }

    pub(crate) async fn patch_meta(
        &self,
        shoot: &Shoot,
        patch: serde_json::Value,
        what: &'static str,
    ) -> Result<(), ShootError> {
        let ns = shoot.namespace().unwrap_or_default();
        self.shoots(&ns)
            .patch(&shoot.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| ShootError::Kube { what, shoot: shoot.name_any(), source })?;
        Ok(())
    }

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

    #[tracing::instrument(skip_all, fields(shoot = %shoot.name_any(), namespace = ?shoot.namespace()))]
    /// Reconciles the shoot. `cancel` ends the flow early when the shoot is being deleted
    /// ([`crate::shoot::controller::cancel`]): nothing more is written, and the deletion runs next.
    pub(crate) async fn reconcile_shoot(
        &self,
        shoot: &Shoot,
        requested: bool,
        cancel: Option<&crate::shoot::controller::cancel::Cancel>,
    ) -> Result<RequeueAction, ShootError> {
        let finalizers = shoot.finalizers();
        let mut meta = json!({});
        if !finalizers.iter().any(|f| f == FINALIZER_GARDENER) {
            let mut all = finalizers.to_vec();
            all.push(FINALIZER_GARDENER.to_string());
            meta["metadata"]["finalizers"] = json!(all);
        }
        // Taking over a shoot another seed owns (only forced, see `decide`) is a Restore. Its
        // `force-restore` annotation is consumed only once the claim below is written, so a
        // failure in between leaves the operator's request in place.
        let owner = shoot.status.as_ref().and_then(|s| s.seed_name.as_deref()).filter(|s| !s.is_empty());
        let takeover = owner.is_some_and(|o| o != self.config.seed.name);
        let type_ = reconcile_type(shoot.status.as_ref(), takeover);
        // A rotation request is recorded in the status before its annotation goes, so that a
        // failure in between loses nothing.
        let (rotation, rotating) = rotation_for(shoot, requested, &now());
        let at_once = if rotating { at_once(shoot) } else { Vec::new() };
        if requested && !takeover && !rotating {
            meta["metadata"]["annotations"] = json!({ ANNOTATION_OPERATION: null });
        }
        // Rollouts of worker pools wait in an annotation until the Worker has their stamps.
        let pending = rollout::requested(shoot, requested, &now().0.to_string());
        if pending != rollout::pending(shoot) {
            meta["metadata"]["annotations"][rollout::PENDING] = json!(rollout::encode(&pending));
        }
        if meta != json!({}) {
            self.patch_meta(shoot, meta, "preparing the shoot").await?;
        }
        // A change of hibernation re-reconciles every extension object: the providers see it
        // only through the Cluster.
        let was_hibernated = shoot.status.as_ref().is_some_and(|s| s.hibernated);
        let transition = was_hibernated != shoot.spec.hibernation_enabled();
        let restore = type_ == LastOperationType::Restore;
        let mut ctx = self.context(shoot, requested || transition, restore, rotation.clone()).await?;
        // The pools' rollout stamps: carried forward from the Worker, new ones from the request.
        let worker = self.deployed_worker(&ctx).await?;
        let stamped = rollout::stamped(shoot, &rollout::deployed(worker.as_ref()), &pending);
        if let Some(stamped) = &stamped {
            ctx = self.context(stamped, requested || transition, restore, rotation.clone()).await?;
        }
        let quiet = quiet_resync(shoot, type_, requested || transition || takeover);
        if !quiet {
            let mut start = json!({
                "lastOperation": started(type_, &now()),
                "technicalID": ctx.values.namespace(),
                "seedName": self.config.seed.name,
                "uid": shoot.uid(),
            });
            if let (true, Some(r)) = (rotating, &rotation) {
                start["credentials"] = crate::shoot::credentials::rotation::status_patch(r);
            }
            self.patch_status(shoot, start).await?;
        }
        if takeover || rotating {
            let consume = json!({ "metadata": { "annotations": { ANNOTATION_OPERATION: null } } });
            self.patch_meta(shoot, consume, "consuming the operation annotation").await?;
        }
        // Hibernating an existing shoot has its own order; a shoot created hibernated is
        // created never started by the reconcile flow.
        let flow = if ctx.values.hibernated && !matches!(type_, LastOperationType::Create | LastOperationType::Restore)
        {
            hibernate::flow(&ctx)
        } else {
            reconcile::flow(&ctx)
        }
        .map_err(|source| ShootError::Graph { shoot: shoot.name_any(), source })?;
        let Some(mut result) = self.run_cancellable(shoot, type_, flow, &ctx, quiet, cancel).await else {
            return Ok(RequeueAction::requeue(Duration::ZERO));
        };
        // `rotate-etcd-encryption-key`: once phase one succeeded, phase two runs in the same
        // operation (recorded as `Completing` first, so that a restart goes on with it).
        let (mut ctx, mut rotation) = (ctx, rotation);
        if result.is_success()
            && let Some(second) = second_phase(rotation.as_ref(), &at_once, &now())
        {
            let credentials = crate::shoot::credentials::rotation::status_patch(&second);
            self.patch_status(shoot, json!({ "credentials": credentials })).await?;
            ctx = self.context(stamped.as_ref().unwrap_or(shoot), true, restore, Some(second.clone())).await?;
            rotation = Some(second);
            let flow = reconcile::flow(&ctx).map_err(|source| ShootError::Graph { shoot: shoot.name_any(), source })?;
            let Some(again) = self.run_cancellable(shoot, type_, flow, &ctx, quiet, cancel).await else {
                return Ok(RequeueAction::requeue(Duration::ZERO));
            };
            result = again;
        }
        let retry_window = Duration::from_secs(self.config.controllers.shoot_retry_window_seconds);
        let outcome = finished(type_, shoot.status.as_ref(), &result, retry_window, &now());
        let mut status = json!({
            "lastOperation": outcome.last_operation,
            "lastErrors": outcome.last_errors,
            "retryCycleStartTime": outcome.retry_cycle_start_time,
        });
        let computed = std::mem::take(&mut ctx.found().conditions);
        if !computed.is_empty() {
            // The same Progressing step as the care controller (crate::shoot::status::conditions).
            let previous = shoot.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
            let threshold = self.config.controllers.shoot_care_threshold();
            let (conditions, _) =
                crate::shoot::status::conditions::next_conditions(&previous, &computed, threshold, &now());
            status["conditions"] = json!(conditions);
        }
        // The generation was acted on, successfully or not (Gardener records it when the operation
        // starts): a failed operation is not started again until the spec changes or a retry
        // is requested.
        status["observedGeneration"] = json!(shoot.metadata.generation);
        if result.is_success() {
            status["hibernated"] = json!(ctx.values.hibernated);
            if !ctx.values.hibernated {
                // The flow rewrote the objects of every newly listed resource (reconcile/encryption.rs).
                let listed = &ctx.values.apiserver.encrypted_resources;
                status["encryptedResources"] =
                    json!(crate::components::kube_apiserver::listed_encrypted_resources(listed));
            }
            if let Some(mut r) = rotation
                && api::helpers::rotation::finish(&mut r, &now())
            {
                status["credentials"] = crate::shoot::credentials::rotation::status_patch(&r);
            }
            if let Some(address) = ctx.found().address.clone() {
                status["advertisedAddresses"] = json!([
                    { "name": "external", "url": format!("https://{}", ctx.values.advertised_host()) },
                    { "name": "service", "url": format!("https://{address}") },
                ]);
            }
        }
        // A quiet resync that found everything as it was writes nothing (lastOperation keeps the
        // time of the last change).
        let nothing_new = quiet && result.is_success() && shoot.status.as_ref().is_some_and(|s| unchanged(s, &status));
        if !nothing_new {
            self.patch_status(shoot, status).await?;
        }
        if result.is_success() {
            if !pending.is_empty() {
                let written = json!({ "metadata": { "annotations": { rollout::PENDING: null } } });
                self.patch_meta(shoot, written, "recording the rollout of worker pools").await?;
            }
            self.backoff.reset(&backoff_key(shoot));
            let period = Duration::from_secs(self.config.controllers.shoot_sync_period_seconds);
            Ok(RequeueAction::requeue(period))
        } else if outcome.failed {
            Ok(RequeueAction::await_change())
        } else {
            Err(ShootError::Flow { shoot: shoot.name_any(), summary: result.summary() })
        }
    }

    /// The shoot's Worker in the seed as the last reconcile wrote it, if any.
    async fn deployed_worker(&self, ctx: &OperationContext) -> Result<Option<api::extensions::Worker>, ShootError> {
        let workers: Api<api::extensions::Worker> = Api::namespaced(self.seed.clone(), ctx.values.namespace());
        workers.get_opt(&ctx.values.name).await.map_err(|source| ShootError::Kube {
            what: "reading the Worker",
            shoot: ctx.values.name.clone(),
            source,
        })
    }

    /// Runs a reconcile's flow; `None` when `cancel` ended it (the shoot is being deleted).
    async fn run_cancellable(
        &self,
        shoot: &Shoot,
        type_: LastOperationType,
        flow: crate::flow::Flow,
        ctx: &OperationContext,
        quiet: bool,
        cancel: Option<&crate::shoot::controller::cancel::Cancel>,
    ) -> Option<crate::flow::FlowResult> {
        let run = self.run_flow(shoot, type_, flow, false, ctx.redaction(), !quiet);
        match cancel {
            None => Some(run.await),
            Some(cancel) => tokio::select! {
                result = run => Some(result),
                () = cancel.cancelled() => {
                    // Dropping the flow aborts its running tasks where they are (mostly waits),
                    // as a restart of gardenlet would; the deletion's flow takes over.
                    tracing::info!("cancelled: the shoot is being deleted");
                    None
                }
            },
        }
    }

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

/// The rotation status this operation works with, and whether it begins a rotation now: a
/// requested rotation the shoot allows begins (admission refuses the others; one that got past
/// it is logged and the shoot only reconciled).
fn rotation_for(shoot: &Shoot, requested: bool, now: &Time) -> (Option<ShootCredentialsRotation>, bool) {
    use api::helpers::rotation as r;
    let current = r::status(shoot).cloned();
    let operation = shoot.annotations().get(ANNOTATION_OPERATION).map(String::as_str);
    let Some((operation, request)) =
        operation.filter(|_| requested).and_then(|o| Some((o, r::request(o, shoot.spec.provider.ssh_access())?)))
    else {
        return (current, false);
    };
    let refused = r::allowed(&request, current.as_ref(), r::Lifecycle::of(shoot));
    if !refused.is_empty() {
        tracing::warn!(operation, reasons = ?refused, "credential rotation not possible now; reconciling without it");
        return (current, false);
    }
    (Some(r::begin(&request, current, now)), true)
}

/// The credentials the shoot's operation annotation asks to rotate through both phases in one
/// operation (`rotate-etcd-encryption-key`).
fn at_once(shoot: &Shoot) -> Vec<api::helpers::rotation::Credential> {
    let value = api::helpers::shoot_operation::value(shoot);
    let request = value.and_then(|v| api::helpers::rotation::request(v, shoot.spec.provider.ssh_access()));
    request.map(|r| api::helpers::rotation::at_once(&r)).unwrap_or_default()
}

/// The status with which phase two of `at_once` begins after phase one succeeded: what was
/// `Preparing` is `Prepared`, and `at_once` is `Completing`; `None` when nothing is asked.
fn second_phase(
    rotation: Option<&ShootCredentialsRotation>,
    at_once: &[api::helpers::rotation::Credential],
    now: &Time,
) -> Option<ShootCredentialsRotation> {
    use api::helpers::rotation as r;
    if at_once.is_empty() {
        return None;
    }
    let mut prepared = rotation?.clone();
    r::finish(&mut prepared, now);
    let complete = r::Request { steps: at_once.iter().map(|c| (*c, r::Step::Complete)).collect(), ssh_keypair: false };
    Some(r::begin(&complete, Some(prepared), now))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;
    use api::core::shoot::credentials::RotationPhase;

    fn shoot(operation: Option<&str>, hibernated: bool, created: bool) -> Shoot {
        let state = if created { "Succeeded" } else { "Processing" };
        let mut s: Shoot = serde_json::from_value(json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
            "metadata": {"name": "s", "namespace": "garden-dev"},
            "spec": {"region": "local", "provider": {"type": "local"}, "kubernetes": {"version": "1.20.2"},
                     "hibernation": {"enabled": hibernated}},
            "status": {"lastOperation": {"type": "Create", "state": state, "progress": 100,
                                         "description": "", "lastUpdateTime": "2026-01-01T00:00:00Z"}},
        }))
        .unwrap();
        if let Some(op) = operation {
            s.metadata.annotations = Some([(ANNOTATION_OPERATION.to_string(), op.to_string())].into());
        }
        s
    }

    #[test]
    fn the_single_step_etcd_rotation_goes_on_to_phase_two_in_the_same_operation() {
        let at = now();
        let s = shoot(Some("rotate-etcd-encryption-key;rotate-ca-start"), false, true);
        let (rotation, begins) = rotation_for(&s, true, &at);
        assert!(begins);
        let once = at_once(&s);
        assert_eq!(once, [api::helpers::rotation::Credential::EtcdEncryptionKey]);
        let second = second_phase(rotation.as_ref(), &once, &at).unwrap();
        assert_eq!(second.etcd_encryption_key.as_ref().unwrap().phase, RotationPhase::Completing);
        assert_eq!(second.certificate_authorities.as_ref().unwrap().phase, RotationPhase::Prepared, "phase one only");
        let mut done = second;
        api::helpers::rotation::finish(&mut done, &at);
        assert_eq!(done.etcd_encryption_key.unwrap().phase, RotationPhase::Completed);
        assert!(at_once(&shoot(Some("rotate-etcd-encryption-key-start"), false, true)).is_empty());
        assert_eq!(second_phase(rotation.as_ref(), &[], &at), None);
    }

    #[test]
    fn a_requested_rotation_begins_only_when_the_shoot_allows_it() {
        let at = now();
        let (rotation, begins) = rotation_for(&shoot(Some("rotate-ca-start"), false, true), true, &at);
        assert!(begins);
        assert_eq!(rotation.unwrap().certificate_authorities.unwrap().phase, RotationPhase::Preparing);
        for s in [
            shoot(Some("rotate-ca-start"), true, true),
            shoot(Some("rotate-ca-start"), false, false),
            shoot(Some("rotate-ca-complete"), false, true),
            shoot(Some("reconcile"), false, true),
            shoot(None, false, true),
        ] {
            assert_eq!(rotation_for(&s, true, &at), (None, false), "{:?} {:?}", s.metadata.annotations, s.status);
        }
        let (_, begins) = rotation_for(&shoot(Some("rotate-ca-start"), false, true), false, &at);
        assert!(!begins, "only a requested reconcile takes the request");
    }
}
