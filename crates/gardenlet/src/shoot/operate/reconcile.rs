//! Reconciling a shoot (or hibernating it, or taking it over): prepare the Shoot, build the
//! context with the pools' rollout stamps, record the start, run the flow (and the second phase
//! of a one-operation rotation), record the outcome.

use super::now;
use super::rotation::{at_once, provider_change, rewrote_for_provider, rotation_for, second_phase};
use crate::flow::FlowResult;
use crate::shoot::controller::cancel::Cancel;
use crate::shoot::controller::{ShootController, ShootError, backoff_key, rollout};
use crate::shoot::flows::{hibernate, reconcile};
use crate::shoot::operation::context::OperationContext;
use crate::shoot::status::last_operation::{
    Finished, finished, naming_the_restore, quiet_resync, reconcile_type, started, unchanged,
};
use api::common::LastOperationType;
use api::core::Shoot;
use api::core::shoot::credentials::ShootCredentialsRotation;
use api::helpers::constants::{ANNOTATION_OPERATION, FINALIZER_GARDENER};
use api::helpers::rotation::Credential;
use kube::runtime::controller::Action as RequeueAction;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// What a reconcile decided about the shoot before its flow runs.
struct Plan {
    type_: LastOperationType,
    /// Another seed owns the shoot (only forced, see `decide`): a Restore.
    takeover: bool,
    /// The rotation status the operation works with.
    rotation: Option<ShootCredentialsRotation>,
    /// Whether the operation begins a rotation.
    rotating: bool,
    /// The credentials rotated through both phases in this operation.
    at_once: Vec<Credential>,
    /// The worker pools' requested rollouts not yet stamped on the Worker.
    pending: rollout::Stamps,
    /// Every extension object is re-reconciled: requested, or hibernation changed (the providers
    /// see it only through the Cluster).
    force: bool,
}

impl Plan {
    fn restore(&self) -> bool {
        self.type_ == LastOperationType::Restore
    }
}

/// The context a reconcile runs with, and the shoot with the pools' rollout stamps when they
/// differ from the Shoot's.
struct Prepared {
    ctx: Arc<OperationContext>,
    stamped: Option<Shoot>,
}

/// The flow's result and what it ran with last (the second phase of a rotation has its own).
struct Ran {
    result: FlowResult,
    ctx: Arc<OperationContext>,
    rotation: Option<ShootCredentialsRotation>,
}

impl ShootController {
    #[tracing::instrument(skip_all, fields(shoot = %shoot.name_any(), namespace = ?shoot.namespace()))]
    /// Reconciles the shoot. `cancel` ends the flow early when the shoot is being deleted
    /// ([`crate::shoot::controller::cancel`]): nothing more is written, and the deletion runs next.
    pub(crate) async fn reconcile_shoot(
        &self,
        shoot: &Shoot,
        requested: bool,
        cancel: Option<&Cancel>,
    ) -> Result<RequeueAction, ShootError> {
        let plan = self.prepare_shoot(shoot, requested).await?;
        let prepared = self.reconcile_context(shoot, &plan).await?;
        let quiet = quiet_resync(shoot, plan.type_, plan.force || plan.takeover);
        self.record_start(shoot, &plan, &prepared.ctx, quiet).await?;
        let Some(ran) = self.run_reconcile(shoot, &plan, prepared, quiet, cancel).await? else {
            return Ok(RequeueAction::requeue(Duration::ZERO));
        };
        self.record_outcome(shoot, &plan, ran, quiet).await
    }

    /// Decides the operation and writes what it needs on the Shoot first: the finalizer, the
    /// consumed operation annotation, the pending rollouts of worker pools.
    async fn prepare_shoot(&self, shoot: &Shoot, requested: bool) -> Result<Plan, ShootError> {
        let finalizers = shoot.finalizers();
        let mut meta = json!({});
        if !finalizers.iter().any(|f| f == FINALIZER_GARDENER) {
            let mut all = finalizers.to_vec();
            all.push(FINALIZER_GARDENER.to_string());
            meta["metadata"]["finalizers"] = json!(all);
        }
        // Taking over a shoot another seed owns (only forced, see `decide`) is a Restore. Its
        // `force-restore` annotation is consumed only once the claim is written
        // ([`Self::record_start`]), so a failure in between leaves the operator's request in place.
        let owner = shoot.status.as_ref().and_then(|s| s.seed_name.as_deref()).filter(|s| !s.is_empty());
        let takeover = owner.is_some_and(|o| o != self.config.seed.name);
        let type_ = reconcile_type(shoot.status.as_ref(), takeover);
        // A rotation request is recorded in the status before its annotation goes, so that a
        // failure in between loses nothing.
        let (mut rotation, mut rotating) = rotation_for(shoot, requested, &now());
        let mut at_once = if rotating { at_once(shoot) } else { Vec::new() };
        // A changed encryption provider rotates the etcd encryption key (unless a requested
        // rotation runs now: the change follows in the next operation).
        if !rotating && let Some((r, begins, both)) = provider_change(shoot, &now()) {
            (rotation, rotating, at_once) = (r, begins, both);
        }
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
        let force = requested || transition;
        Ok(Plan { type_, takeover, rotation, rotating, at_once, pending, force })
    }

    /// The operation's context, built again with the pools' rollout stamps (carried forward from
    /// the Worker, new ones from the request) when they change the shoot.
    async fn reconcile_context(&self, shoot: &Shoot, plan: &Plan) -> Result<Prepared, ShootError> {
        let ctx = self.context(shoot, plan.force, plan.restore(), plan.rotation.clone()).await?;
        let worker = self.deployed_worker(&ctx).await?;
        let stamped = rollout::stamped(shoot, &rollout::deployed(worker.as_ref()), &plan.pending);
        let ctx = match &stamped {
            Some(stamped) => self.context(stamped, plan.force, plan.restore(), plan.rotation.clone()).await?,
            None => ctx,
        };
        Ok(Prepared { ctx, stamped })
    }

    /// Records the start in the status (unless the resync is quiet), with this seed as the owner
    /// and a beginning rotation; then consumes the operation annotation of a takeover or rotation.
    async fn record_start(
        &self,
        shoot: &Shoot,
        plan: &Plan,
        ctx: &OperationContext,
        quiet: bool,
    ) -> Result<(), ShootError> {
        if !quiet {
            let mut start = json!({
                "lastOperation": started(plan.type_, &now()),
                "technicalID": ctx.values.namespace(),
                "seedName": self.config.seed.name,
                "uid": shoot.uid(),
            });
            if let (true, Some(r)) = (plan.rotating, &plan.rotation) {
                start["credentials"] = crate::shoot::credentials::rotation::status_patch(r);
            }
            self.patch_status(shoot, start).await?;
        }
        if plan.takeover || plan.rotating {
            let consume = json!({ "metadata": { "annotations": { ANNOTATION_OPERATION: null } } });
            self.patch_meta(shoot, consume, "consuming the operation annotation").await?;
        }
        Ok(())
    }

    /// Runs the reconcile's (or hibernation's) flow and, for `rotate-etcd-encryption-key`, phase
    /// two of the rotation once phase one succeeded. `None` when `cancel` ended a flow.
    async fn run_reconcile(
        &self,
        shoot: &Shoot,
        plan: &Plan,
        prepared: Prepared,
        quiet: bool,
        cancel: Option<&Cancel>,
    ) -> Result<Option<Ran>, ShootError> {
        let Prepared { mut ctx, stamped } = prepared;
        let graph_err = |source| ShootError::Graph { shoot: shoot.name_any(), source };
        // Hibernating an existing shoot has its own order; a shoot created hibernated is
        // created never started by the reconcile flow.
        let hibernating =
            ctx.values.hibernated && !matches!(plan.type_, LastOperationType::Create | LastOperationType::Restore);
        let flow = if hibernating { hibernate::flow(&ctx) } else { reconcile::flow(&ctx) }.map_err(graph_err)?;
        let Some(mut result) = self.run_cancellable(shoot, plan.type_, flow, &ctx, quiet, cancel).await else {
            return Ok(None);
        };
        // `rotate-etcd-encryption-key`: once phase one succeeded, phase two runs in the same
        // operation (recorded as `Completing` first, so that a restart goes on with it).
        let mut rotation = plan.rotation.clone();
        if result.is_success()
            && let Some(second) = second_phase(rotation.as_ref(), &plan.at_once, &now())
        {
            let credentials = crate::shoot::credentials::rotation::status_patch(&second);
            self.patch_status(shoot, json!({ "credentials": credentials })).await?;
            let current = stamped.as_ref().unwrap_or(shoot);
            ctx = self.context(current, true, plan.restore(), Some(second.clone())).await?;
            rotation = Some(second);
            let flow = reconcile::flow(&ctx).map_err(graph_err)?;
            let Some(again) = self.run_cancellable(shoot, plan.type_, flow, &ctx, quiet, cancel).await else {
                return Ok(None);
            };
            result = again;
        }
        Ok(Some(Ran { result, ctx, rotation }))
    }

    /// Writes the outcome (unless a quiet resync found nothing new) and decides when the shoot
    /// is reconciled again: after the sync period on success, on a change after a final failure,
    /// with backoff otherwise.
    async fn record_outcome(
        &self,
        shoot: &Shoot,
        plan: &Plan,
        ran: Ran,
        quiet: bool,
    ) -> Result<RequeueAction, ShootError> {
        let (status, outcome) = self.outcome_status(shoot, plan.type_, &ran);
        let result = &ran.result;
        // A quiet resync that found everything as it was writes nothing (lastOperation keeps the
        // time of the last change).
        let nothing_new = quiet && result.is_success() && shoot.status.as_ref().is_some_and(|s| unchanged(s, &status));
        if !nothing_new {
            self.patch_status(shoot, status).await?;
        }
        if result.is_success() {
            if !plan.pending.is_empty() {
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

    /// The status write of a finished reconcile: the last operation and errors, the conditions
    /// the flow computed, the observed generation, and on success what the shoot now is
    /// (hibernated, encrypted resources, finished rotation phases, addresses).
    fn outcome_status(&self, shoot: &Shoot, type_: LastOperationType, ran: &Ran) -> (serde_json::Value, Finished) {
        let Ran { result, ctx, rotation } = ran;
        let retry_window = Duration::from_secs(self.config.controllers.shoot_retry_window_seconds);
        let mut outcome = finished(type_, shoot.status.as_ref(), result, retry_window, &now());
        if result.is_success() && type_ == LastOperationType::Restore {
            naming_the_restore(&mut outcome.last_operation, ctx.found().etcd_restore.as_deref());
        }
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
                let listed = crate::components::kube_apiserver::listed_encrypted_resources(listed);
                status["encryptedResources"] = json!(listed);
                // The provider in use changes once the key rotation it began rewrote the data.
                let provider = &ctx.values.apiserver.encryption_provider;
                let in_use = api::helpers::encryption::in_use(shoot);
                if in_use.is_none_or(|used| used == provider.as_str()) || rewrote_for_provider(rotation.as_ref()) {
                    status["credentials"]["encryptionAtRest"] =
                        json!({"resources": listed, "provider": {"type": provider}});
                }
            }
            if let Some(mut r) = rotation.clone()
                && api::helpers::rotation::finish(&mut r, &now())
            {
                let patch = crate::shoot::credentials::rotation::status_patch(&r);
                status["credentials"]["rotation"] = patch["rotation"].clone();
            }
            if let Some(address) = ctx.found().address.clone() {
                status["advertisedAddresses"] = json!([
                    { "name": "external", "url": format!("https://{}", ctx.values.advertised_host()) },
                    { "name": "service", "url": format!("https://{address}") },
                ]);
            }
        }
        (status, outcome)
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
        cancel: Option<&Cancel>,
    ) -> Option<FlowResult> {
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
}
