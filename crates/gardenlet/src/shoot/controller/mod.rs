//! Wiring of the shoot controller: watches this seed's Shoots in the garden, decides what each
//! needs ([`decide()`]) and dispatches the operation to [`crate::shoot::operate`]; failed
//! operations are retried with per-shoot backoff. A deletion cancels the shoot's running
//! reconcile ([`cancel`]) and is not held back by the backoff of a failed reconcile.

pub mod cancel;
pub mod decide;
pub mod rollout;

use crate::config::GardenletConfig;
use api::core::Shoot;
use cancel::Operation;
use decide::{Action, decide};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::{Action as RequeueAction, Controller};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use runtime::wiring::{Wiring, watch_events};
use std::sync::Arc;
use std::time::Duration;

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

/// Shared state of the shoot controller.
pub struct ShootController {
    pub garden: kube::Client,
    pub seed: kube::Client,
    pub config: Arc<GardenletConfig>,
    /// Bound of each wait inside a flow.
    pub wait_timeout: Duration,
    /// Per-shoot capped exponential backoff of failed operations, reset on success.
    pub backoff: Arc<runtime::backoff::Backoff>,
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

/// What the controller's reconciles share: the controller and its running reconciles.
struct Shared {
    controller: ShootController,
    running: cancel::Running,
}

/// Whether a failed operation's backoff holds `action` back: not a requested reconcile, and
/// not the first deletion after a failed reconcile (a user deleting a broken shoot should not
/// wait for the retry of its creation).
fn held_back_by_backoff(action: &Action, shoot: &Shoot) -> bool {
    let last_type = shoot.status.as_ref().and_then(|s| s.last_operation.as_ref()).map(|l| l.type_);
    match action {
        Action::Reconcile { requested: true } | Action::Skip(_) => false,
        Action::Delete | Action::ForceDelete => last_type == Some(api::common::LastOperationType::Delete),
        _ => true,
    }
}

impl ShootController {
    /// Runs one reconcile of the shoot as the controller would for an unchanged shoot (no
    /// explicit request, so unchanged extension objects are not redeployed).
    pub async fn reconcile_once(&self, shoot: &Shoot) -> Result<(), ShootError> {
        self.reconcile_shoot(shoot, false, None).await.map(|_| ())
    }

    async fn reconcile(shoot: Arc<Shoot>, shared: Arc<Shared>) -> Result<RequeueAction, ShootError> {
        let this = &shared.controller;
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
        // Registered before the latest Shoot is read, so that a deletion from then on cancels
        // the reconcile (the watch event of a deletion that came earlier is in the read).
        let registered = shared.running.register(backoff_key(&shoot), Operation::Reconcile);
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
            && held_back_by_backoff(&action, &shoot)
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
                    Action::Reconcile { requested } => {
                        this.reconcile_shoot(&shoot, requested, Some(&registered.cancel)).await
                    }
                    Action::Migrate => this.migrate_shoot(&shoot).await,
                    Action::ForceDelete => this.force_delete_shoot(&shoot).await,
                    _ => {
                        // A deletion gives way to a force-deletion (the registration above was
                        // the reconcile's; this one replaces it).
                        let deleting = shared.running.register(backoff_key(&shoot), Operation::Delete);
                        this.delete_shoot(&shoot, Some(&deleting.cancel)).await
                    }
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
        use kube::runtime::WatchStreamExt;
        let concurrency = self.config.controllers.shoot_concurrent_syncs;
        let mut wiring = Wiring::new("shoot", self.garden.clone(), shutdown, ready).concurrency(concurrency);
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
        let events = wiring.flag_when_listed("shoots", watch_events(shoots, selected).reflect(writer));
        let running = cancel::Running::default();
        // A deletion cancels the shoot's running reconcile, a force-deletion its running reconcile
        // or deletion, as soon as the watch sees it (the controller runs one operation per shoot
        // at a time, so the stronger operation comes only after the running one).
        let observer = running.clone();
        let applied = futures::TryStreamExt::inspect_ok(events.applied_objects(), move |shoot: &Shoot| {
            let wanted = match decide::deletion(shoot) {
                Some(Action::ForceDelete) => Operation::ForceDelete,
                Some(_) => Operation::Delete,
                None => return,
            };
            if observer.cancel(&backoff_key(shoot), wanted) {
                tracing::info!(shoot = %shoot.name_any(), ?wanted, "cancelling the shoot's running operation");
            }
        });
        let this = Arc::new(Shared { controller: self, running });
        wiring.run(Controller::for_stream(applied, store), Self::reconcile, error_policy, this).await;
        cache_task.abort();
    }
}

pub(crate) fn backoff_key(shoot: &Shoot) -> String {
    shoot.uid().unwrap_or_else(|| format!("{}/{}", shoot.namespace().unwrap_or_default(), shoot.name_any()))
}

/// The default backoff of failed shoot operations: 2 s doubling up to 5 min, with jitter.
pub fn default_backoff() -> Arc<runtime::backoff::Backoff> {
    Arc::new(runtime::backoff::Backoff::new(runtime::backoff::BackoffConfig {
        initial: Duration::from_secs(2),
        max: Duration::from_secs(300),
        jitter: 0.2,
    }))
}

/// Failed flows are retried with per-shoot capped exponential backoff (kube-runtime has none).
fn error_policy(shoot: Arc<Shoot>, error: &ShootError, shared: Arc<Shared>) -> RequeueAction {
    let delay = shared.controller.backoff.failed(&backoff_key(&shoot));
    tracing::warn!(error = %runtime::events::error_chain(error), ?delay, "shoot operation failed; retrying");
    RequeueAction::requeue(delay)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;

    fn failed(type_: &str) -> Shoot {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "namespace": "garden-dev"},
            "spec": {"region": "r", "provider": {"type": "local"}},
            "status": {"hibernated": false, "technicalID": "shoot--dev--s",
                       "lastOperation": {"type": type_, "state": "Error", "progress": 90, "description": "",
                                         "lastUpdateTime": "2026-01-01T00:00:00Z"}}
        }))
        .unwrap()
    }

    #[test]
    fn the_first_deletion_after_a_failed_reconcile_is_not_held_back() {
        assert!(!held_back_by_backoff(&Action::Delete, &failed("Create")));
        assert!(!held_back_by_backoff(&Action::Delete, &failed("Reconcile")));
        assert!(held_back_by_backoff(&Action::Delete, &failed("Delete")), "a failing deletion backs off");
        assert!(held_back_by_backoff(&Action::Reconcile { requested: false }, &failed("Create")));
        assert!(!held_back_by_backoff(&Action::Reconcile { requested: true }, &failed("Create")));
    }
}
