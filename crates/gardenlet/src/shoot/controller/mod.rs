//! Wiring of the shoot controller: watches Shoots in the garden, decides, runs the reconcile
//! or deletion flow, and writes the outcome to the Shoot's status.

use crate::config::GardenletConfig;
use crate::flow::{Progress, RunOptions};
use crate::shoot::flows::{delete, hibernate, migrate, reconcile};
use crate::shoot::operation::context::OperationContext;
use crate::shoot::operation::values::ShootValues;
use crate::shoot::status::last_operation::{finished, progressed, quiet_resync, reconcile_type, started, unchanged};
use api::common::{LastOperation, LastOperationType};
use api::core::shoot::credentials::ShootCredentialsRotation;
use api::core::{Seed, Shoot};
use api::helpers::constants::{ANNOTATION_OPERATION, FINALIZER_GARDENER};
use decide::{Action, decide};
use extension_sdk::deployer::Deployer;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action as RequeueAction, Controller};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The least time between two progress writes of one operation.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

/// Errors of one reconcile, retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum ShootError {
    #[error("{what} of shoot {shoot}")]
    Kube {
        what: &'static str,
        shoot: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Values(#[from] crate::shoot::operation::values::ValuesError),
    #[error("building the flow of shoot {shoot}: {source}")]
    Graph {
        shoot: String,
        #[source]
        source: crate::flow::GraphError,
    },
    #[error("shoot {shoot}: {summary}")]
    Flow { shoot: String, summary: String },
}

impl ShootError {
    /// A stable PascalCase reason, for the error metric.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Kube { .. } => "KubeError",
            Self::Values(_) => "InvalidValues",
            Self::Graph { .. } => "InvalidFlow",
            Self::Flow { .. } => "FlowFailed",
        }
    }
}

pub mod decide;

/// Shared state of the shoot controller.
pub struct ShootController {
    pub garden: kube::Client,
    pub seed: kube::Client,
    pub config: Arc<GardenletConfig>,
    /// Bound of each wait inside a flow.
    pub wait_timeout: Duration,
    /// Per-shoot capped exponential backoff of failed operations, reset on success.
    pub backoff: Arc<extension_sdk::backoff::Backoff>,
    /// Reconcile counts, errors, durations and flow task durations; `None` records nothing.
    pub metrics: Option<crate::metrics::ShootMetrics>,
    /// The garden objects every operation reads (ControllerRegistrations, this Seed), cached
    /// once [`Self::run`] has started their watches; until then they are read per operation.
    pub caches: crate::shoot::caches::SharedCaches,
}

impl std::fmt::Debug for ShootController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShootController").field("seed", &self.config.seed.name).finish_non_exhaustive()
    }
}

fn now() -> Time {
    Time(Timestamp::now())
}

impl ShootController {
    fn shoots(&self, namespace: &str) -> Api<Shoot> {
        Api::namespaced(self.garden.clone(), namespace)
    }

    async fn patch_status(&self, shoot: &Shoot, status: serde_json::Value) -> Result<(), ShootError> {
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
    async fn patch_status_as_owner(
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
    fn owner_status(
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

    async fn patch_meta(&self, shoot: &Shoot, patch: serde_json::Value, what: &'static str) -> Result<(), ShootError> {
        let ns = shoot.namespace().unwrap_or_default();
        self.shoots(&ns)
            .patch(&shoot.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| ShootError::Kube { what, shoot: shoot.name_any(), source })?;
        Ok(())
    }

    /// Runs a flow, writing progress to the Shoot as tasks finish (the latest value wins).
    async fn run_flow(
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
                    let _ = tx.send(Some(progressed(type_, p.percent, &p.finished.0, &now())));
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
                        tracing::debug!(error = %extension_sdk::events::error_chain(&e), "progress update failed");
                    }
                }
            }
        };
        let (result, ()) = tokio::join!(async move { flow.run(&options).await }, writer);
        result
    }

    fn clone_handle(&self) -> Self {
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

    async fn context(
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
    async fn reconcile_shoot(&self, shoot: &Shoot, requested: bool) -> Result<RequeueAction, ShootError> {
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
        if requested && !takeover && !rotating {
            meta["metadata"]["annotations"] = json!({ ANNOTATION_OPERATION: null });
        }
        if meta != json!({}) {
            self.patch_meta(shoot, meta, "preparing the shoot").await?;
        }
        // A change of hibernation re-reconciles every extension object: the providers see it
        // only through the Cluster.
        let was_hibernated = shoot.status.as_ref().is_some_and(|s| s.hibernated);
        let transition = was_hibernated != shoot.spec.hibernation_enabled();
        let restore = type_ == LastOperationType::Restore;
        let ctx = self.context(shoot, requested || transition, restore, rotation.clone()).await?;
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
        let result = self.run_flow(shoot, type_, flow, false, ctx.redaction(), !quiet).await;
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
        if result.is_success() {
            status["observedGeneration"] = json!(shoot.metadata.generation);
            status["hibernated"] = json!(ctx.values.hibernated);
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
            self.backoff.reset(&backoff_key(shoot));
            let period = Duration::from_secs(self.config.controllers.shoot_sync_period_seconds);
            Ok(RequeueAction::requeue(period))
        } else if outcome.failed {
            Ok(RequeueAction::await_change())
        } else {
            Err(ShootError::Flow { shoot: shoot.name_any(), summary: result.summary() })
        }
    }

    #[tracing::instrument(skip_all, fields(shoot = %shoot.name_any(), namespace = ?shoot.namespace()))]
    async fn delete_shoot(&self, shoot: &Shoot) -> Result<RequeueAction, ShootError> {
        if !shoot.finalizers().iter().any(|f| f == FINALIZER_GARDENER) {
            return Ok(RequeueAction::await_change());
        }
        let ctx = self.context(shoot, true, false, api::helpers::rotation::status(shoot).cloned()).await?;
        self.patch_status(shoot, json!({ "lastOperation": started(LastOperationType::Delete, &now()) })).await?;
        let flow = delete::flow(&ctx).map_err(|source| ShootError::Graph { shoot: shoot.name_any(), source })?;
        let result = self.run_flow(shoot, LastOperationType::Delete, flow, false, ctx.redaction(), true).await;
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
    async fn migrate_shoot(&self, shoot: &Shoot) -> Result<RequeueAction, ShootError> {
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

    /// Runs one reconcile of the shoot as the controller would for an unchanged shoot (no
    /// explicit request, so unchanged extension objects are not redeployed).
    pub async fn reconcile_once(&self, shoot: &Shoot) -> Result<(), ShootError> {
        self.reconcile_shoot(shoot, false).await.map(|_| ())
    }

    async fn reconcile(shoot: Arc<Shoot>, this: Arc<Self>) -> Result<RequeueAction, ShootError> {
        let period = Duration::from_secs(this.config.controllers.shoot_sync_period_seconds);
        if let Some(m) = &this.metrics {
            m.cached_shoots.set(i64::try_from(this.caches.shoots().len()).unwrap_or(i64::MAX));
        }
        // Most events need nothing (status writes of the care controller, of this gardenlet, of
        // shoots migrating away): decide on the cached copy first. Waiting on a stale copy is safe,
        // the watch delivers the newer version as another event.
        if let action @ (Action::Skip(_) | Action::RequeueAfter(_)) =
            decide(&shoot, &this.config.seed.name, period, Timestamp::now())
        {
            return Ok(match action {
                Action::RequeueAfter(d) => RequeueAction::requeue(d),
                _ => RequeueAction::await_change(),
            });
        }
        // Act on the latest Shoot, not on the watch cache: the cache may lag behind an
        // ownership change (a hand-over, a forced takeover), and acting on a stale copy would
        // run a second control plane.
        let ns = shoot.namespace().unwrap_or_default();
        let latest = this.shoots(&ns).get_opt(&shoot.name_any()).await.map_err(|source| ShootError::Kube {
            what: "reading the shoot",
            shoot: shoot.name_any(),
            source,
        })?;
        let Some(shoot) = latest else { return Ok(RequeueAction::await_change()) };
        let action = decide(&shoot, &this.config.seed.name, period, Timestamp::now());
        // A failed attempt writes the status, which is itself a change: without this, a
        // failing shoot would be retried at once, forever. An explicit request skips the wait.
        let in_error = shoot
            .status
            .as_ref()
            .and_then(|s| s.last_operation.as_ref())
            .is_some_and(|l| l.state == api::common::LastOperationState::Error);
        if in_error
            && !matches!(action, Action::Reconcile { requested: true } | Action::Skip(_))
            && let Some(wait) = this.backoff.remaining(&backoff_key(&shoot))
        {
            return Ok(RequeueAction::requeue(wait));
        }
        match action {
            Action::Skip(reason) => {
                tracing::trace!(shoot = %shoot.name_any(), reason, "skipping");
                Ok(RequeueAction::await_change())
            }
            Action::RequeueAfter(d) => Ok(RequeueAction::requeue(d)),
            action => {
                let started = std::time::Instant::now();
                if let Some(m) = &this.metrics {
                    m.started();
                }
                let result = match action {
                    Action::Reconcile { requested } => this.reconcile_shoot(&shoot, requested).await,
                    Action::Migrate => this.migrate_shoot(&shoot).await,
                    _ => this.delete_shoot(&shoot).await,
                };
                if let Some(m) = &this.metrics {
                    m.finished(started.elapsed().as_secs_f64(), result.as_ref().err().map(ShootError::reason));
                }
                result
            }
        }
    }

    /// Runs until `shutdown` resolves. Concurrency comes from the configuration.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static) {
        self.run_with_ready(shutdown, Arc::default()).await
    }

    /// [`Self::run`], setting `ready` once the shoot cache has synced (what `/readyz` reports).
    pub async fn run_with_ready(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
        ready: Arc<std::sync::atomic::AtomicBool>,
    ) {
        use kube::runtime::{WatchStreamExt, reflector};
        let concurrency = self.config.controllers.shoot_concurrent_syncs;
        let shoots: Api<Shoot> = Api::all(self.garden.clone());
        // Only this seed's Shoots: custom resources have no field selectors here, so the garden
        // labels each Shoot for its seeds and this watch selects on the label.
        let selected = watcher::Config::default().labels(&api::helpers::seed_labels::selector(&self.config.seed.name));
        let (caches, garden, seed_name) = (self.caches.clone(), self.garden.clone(), self.config.seed.name.clone());
        let cache_task =
            tokio::spawn(async move { caches.run(garden, &seed_name, std::future::pending::<()>()).await });
        let store = self.caches.shoots();
        let Some(writer) = self.caches.take_shoots_writer() else {
            tracing::error!("the shoot cache is already filled by another shoot controller; not starting a second");
            cache_task.abort();
            return;
        };
        let events = reflector::reflector(writer, watcher(shoots, selected)).default_backoff();
        let this = Arc::new(self);
        let controller = Controller::for_stream(events.applied_objects(), store.clone());
        let synced = extension_sdk::cache::flag_when_synced(store, ready);
        controller
            .with_config(kube::runtime::controller::Config::default().concurrency(concurrency))
            .graceful_shutdown_on(shutdown)
            .run(Self::reconcile, error_policy, this)
            .for_each(|result| async move {
                if let Err(e) = result {
                    tracing::debug!(error = %extension_sdk::events::error_chain(&e), "shoot reconcile ended with an error");
                }
            })
            .await;
        synced.abort();
        cache_task.abort();
    }
}

fn backoff_key(shoot: &Shoot) -> String {
    shoot.uid().unwrap_or_else(|| format!("{}/{}", shoot.namespace().unwrap_or_default(), shoot.name_any()))
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

/// The default backoff of failed shoot operations: 2 s doubling up to 5 min, with jitter.
pub fn default_backoff() -> Arc<extension_sdk::backoff::Backoff> {
    Arc::new(extension_sdk::backoff::Backoff::new(extension_sdk::backoff::BackoffConfig {
        initial: Duration::from_secs(2),
        max: Duration::from_secs(300),
        jitter: 0.2,
    }))
}

/// Failed flows are retried with per-shoot capped exponential backoff (kube-runtime has none).
fn error_policy(shoot: Arc<Shoot>, error: &ShootError, this: Arc<ShootController>) -> RequeueAction {
    let delay = this.backoff.failed(&backoff_key(&shoot));
    tracing::warn!(error = %extension_sdk::events::error_chain(error), ?delay, "shoot operation failed; retrying");
    RequeueAction::requeue(delay)
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
