//! The scheduling controller's wiring, and nothing else:
//!
//! * a Shoot watch whose events first update the per-seed shoot counts ([`state`]), then the
//!   cache the reconciler reads; only shoots that need a seed (at a new generation) trigger a
//!   reconcile;
//! * Seed, CloudProfile, NamespacedCloudProfile and ExposureClass caches. A Seed change that
//!   matters for scheduling (readiness, capacity, labels, spec, deletion), any change of a
//!   (Namespaced)CloudProfile or ExposureClass, and any capacity freed on a seed re-queue every
//!   waiting shoot at once, so they do not sit out their backoff (a shoot waiting for its
//!   NamespacedCloudProfile's merged spec is scheduled as soon as it is written);
//! * a `kube::runtime::Controller` running [`reconcile::reconcile`] with bounded concurrency.
//!
//! Nothing here decides anything; see [`mod@crate::decide`] and [`reconcile`].

pub mod reconcile;
pub mod state;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::readiness::{self, Readiness};
use api::common::ConditionStatus;
use api::core::seed::RESOURCE_SHOOTS;
use api::core::{CloudProfile, ExposureClass, NamespacedCloudProfile, Seed, Shoot};
use api::helpers::constants::conditions::{BACKUP_BUCKETS_READY, GARDENLET_READY};
use futures::channel::mpsc;
use futures::{Stream, StreamExt, TryStreamExt, future, stream};
use kube::Client;
use kube::core::DeserializeGuard;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{Controller, WatchStreamExt, predicates};
use runtime::wiring::{Events, Wiring, watch_events};
use state::{SchedulerState, ShootKey, ShootSummary, needs_scheduling};
use std::collections::HashMap;
use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

type Guarded<K> = DeserializeGuard<K>;

/// Everything a reconcile needs.
pub struct Context {
    pub client: Client,
    pub config: Config,
    pub metrics: Metrics,
    pub readiness: Readiness,
    state: Mutex<SchedulerState>,
    seeds: Store<Guarded<Seed>>,
    cloud_profiles: Store<Guarded<CloudProfile>>,
    namespaced_cloud_profiles: Store<Guarded<NamespacedCloudProfile>>,
    exposure_classes: Store<Guarded<ExposureClass>>,
    recorder: Recorder,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Context {
    /// The bookkeeping. Held only for short, synchronous sections (never across an await); a
    /// panic while holding it cannot leave it half-updated in a way that matters more than
    /// stopping scheduling would, so a poisoned lock is used as is.
    fn lock_state(&self) -> MutexGuard<'_, SchedulerState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The delay before the shoot's next retry, counting the attempt.
    fn next_backoff(&self, key: &ShootKey) -> Duration {
        let attempt = self.lock_state().next_attempt(key);
        self.config.backoff.delay(attempt, fastrand::f64())
    }
}

/// The controller's name (logs).
const NAME: &str = "scheduler";

/// The kinds the scheduler reads: it starts once all are served (it does not install CRDs).
type Served = (Shoot, Seed, CloudProfile, NamespacedCloudProfile, ExposureClass);

/// Runs the scheduler until `shutdown` resolves (running decisions finish first); sets `ready`
/// once the caches of `readiness` have synced.
pub async fn run(
    client: Client,
    config: Config,
    metrics: Metrics,
    readiness: Readiness,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ready: Arc<AtomicBool>,
) {
    let wiring = Wiring::new(NAME, client.clone(), shutdown, ready)
        .concurrency(config.concurrent_syncs)
        .with_flags(readiness.flags());
    let Some(mut wiring) = wiring.when_served::<Served>().await else { return };
    let all = watcher::Config::default;
    let (seeds, seed_events) = wiring.cache(readiness::SEEDS, wiring.all::<Guarded<Seed>>(), all());
    let (profiles, profile_events) =
        wiring.cache(readiness::CLOUD_PROFILES, wiring.all::<Guarded<CloudProfile>>(), all());
    let (ncps, ncp_events) =
        wiring.cache(readiness::NAMESPACED_CLOUD_PROFILES, wiring.all::<Guarded<NamespacedCloudProfile>>(), all());
    let (classes, class_events) =
        wiring.cache(readiness::EXPOSURE_CLASSES, wiring.all::<Guarded<ExposureClass>>(), all());
    let (shoot_cache, shoot_writer) = reflector::store::<Guarded<Shoot>>();
    let instance = std::env::var("POD_NAME").or_else(|_| std::env::var("HOSTNAME")).ok();
    let reporter = Reporter { controller: reconcile::FIELD_MANAGER.into(), instance };
    let ctx = Arc::new(Context {
        recorder: Recorder::new(client.clone(), reporter),
        client,
        config,
        metrics,
        readiness,
        state: Mutex::new(SchedulerState::default()),
        seeds,
        cloud_profiles: profiles,
        namespaced_cloud_profiles: ncps,
        exposure_classes: classes,
    });

    // Re-queue requests: capacity freed (from the shoot watch), seed changes, changes of the
    // objects shoots refer to.
    let (freed_tx, freed_rx) = mpsc::unbounded::<()>();
    let shoot_events = watch_events(wiring.all::<Guarded<Shoot>>(), all()).inspect_ok({
        let ctx = ctx.clone();
        move |event| {
            if observe_shoot(&ctx, event) {
                // The receiver lives as long as the controller; a failed send means shutdown.
                let _ = freed_tx.unbounded_send(());
            }
        }
    });
    let shoots = shoots_to_schedule(wiring.flag_when_listed(readiness::SHOOTS, shoot_events.reflect(shoot_writer)));
    let changes = stream::select_all([
        freed_rx.boxed(),
        seed_changes(seed_events).boxed(),
        any_change(profile_events, "cloud profiles").boxed(),
        any_change(ncp_events, "namespaced cloud profiles").boxed(),
        any_change(class_events, "exposure classes").boxed(),
    ]);
    let requeue_ctx = ctx.clone();
    // Changes that arrive together (a seed re-list, many deletions) re-queue the waiting shoots once.
    let requeues = changes.ready_chunks(1024).flat_map(move |_| stream::iter(waiting_refs(&requeue_ctx)));
    let controller = Controller::for_stream(shoots, shoot_cache).reconcile_on(requeues);
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, ctx).await;
}

/// The shoots to reconcile, from the shoot watch (bookkeeping first, then the cache): those
/// that need a seed, at a new generation.
fn shoots_to_schedule(
    events: impl Stream<Item = Events<Guarded<Shoot>>> + Send + 'static,
) -> impl Stream<Item = Result<Guarded<Shoot>, watcher::Error>> + Send + 'static {
    events
        .applied_objects()
        .try_filter(|guard| future::ready(guard.0.as_ref().is_ok_and(needs_scheduling)))
        .predicate_filter(predicates::generation, Default::default())
}

/// Feeds one shoot event into the bookkeeping; true when capacity was freed.
fn observe_shoot(ctx: &Context, event: &Event<Guarded<Shoot>>) -> bool {
    let mut state = ctx.lock_state();
    let freed = match event {
        Event::Apply(DeserializeGuard(Ok(shoot))) => state.apply(ShootSummary::of(shoot)),
        Event::Apply(DeserializeGuard(Err(invalid))) => {
            tracing::warn!(shoot = %ShootKey::from_meta(&invalid.metadata), error = %invalid, "cannot read shoot");
            false
        }
        Event::Delete(DeserializeGuard(Ok(shoot))) => state.delete(&ShootKey::of(shoot)),
        Event::Delete(DeserializeGuard(Err(invalid))) => state.delete(&ShootKey::from_meta(&invalid.metadata)),
        Event::Init => {
            state.relist_started();
            false
        }
        Event::InitApply(DeserializeGuard(Ok(shoot))) => {
            state.relist_object(ShootSummary::of(shoot));
            false
        }
        Event::InitApply(DeserializeGuard(Err(_))) => false,
        Event::InitDone => state.relist_done(),
    };
    ctx.metrics.waiting.set(i64::try_from(state.waiting_count()).unwrap_or(i64::MAX));
    freed
}

/// One item per Seed change that can change a decision. Heartbeats (condition timestamps) and
/// other status noise do not count.
fn seed_changes(events: impl Stream<Item = Events<Guarded<Seed>>>) -> impl Stream<Item = ()> {
    let mut seen: HashMap<String, u64> = HashMap::new();
    events.filter_map(move |event| {
        let change = match event {
            Ok(Event::Apply(seed)) => {
                let name = kube::ResourceExt::name_any(&seed);
                let fingerprint = seed_fingerprint(&seed);
                seen.insert(name, fingerprint) != Some(fingerprint)
            }
            Ok(Event::InitApply(seed)) => {
                seen.insert(kube::ResourceExt::name_any(&seed), seed_fingerprint(&seed));
                false
            }
            Ok(Event::Delete(seed)) => {
                seen.remove(&kube::ResourceExt::name_any(&seed));
                false
            }
            Ok(Event::Init) => false,
            Ok(Event::InitDone) => true,
            Err(e) => {
                tracing::warn!(error = %runtime::events::error_chain(&e), "watching seeds");
                false
            }
        };
        future::ready(change.then_some(()))
    })
}

/// What about a seed matters for scheduling: its spec (via the generation), labels, deletion,
/// readiness conditions and shoot capacity.
fn seed_fingerprint(seed: &Guarded<Seed>) -> u64 {
    let mut h = DefaultHasher::new();
    match &seed.0 {
        Err(invalid) => invalid.error.hash(&mut h),
        Ok(seed) => {
            let m = &seed.metadata;
            (m.generation, &m.labels, m.deletion_timestamp.is_some()).hash(&mut h);
            let status = seed.status.as_ref();
            for type_ in [GARDENLET_READY, BACKUP_BUCKETS_READY] {
                let condition = status.and_then(|s| s.condition(type_)).map(|c| c.status);
                condition.unwrap_or(ConditionStatus::Unknown).hash(&mut h);
            }
            for resources in [status.map(|s| &s.allocatable), status.map(|s| &s.capacity)] {
                resources.and_then(|r| r.get(RESOURCE_SHOOTS)).map(|q| q.0.as_str()).hash(&mut h);
            }
        }
    }
    h.finish()
}

/// One item per change of an object of kind `K` (CloudProfiles, NamespacedCloudProfiles,
/// ExposureClasses: few objects that change rarely, so every change counts).
fn any_change<K>(events: impl Stream<Item = Events<K>>, what: &'static str) -> impl Stream<Item = ()> {
    events.filter_map(move |event| {
        let change = match event {
            Ok(Event::Apply(_) | Event::InitDone) => true,
            Ok(_) => false,
            Err(e) => {
                tracing::warn!(error = %runtime::events::error_chain(&e), what, "watching");
                false
            }
        };
        future::ready(change.then_some(()))
    })
}

fn waiting_refs(ctx: &Context) -> Vec<ObjectRef<Guarded<Shoot>>> {
    ctx.lock_state().waiting().map(|k| ObjectRef::new(&k.name).within(&k.namespace)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures;

    #[test]
    fn seed_fingerprint_ignores_heartbeats() {
        let base = fixtures::seed("a");
        let fp = |s: &Seed| seed_fingerprint(&DeserializeGuard(Ok(s.clone())));
        let mut heartbeat = base.clone();
        if let Some(c) = heartbeat.status.as_mut().and_then(|s| s.conditions.first_mut()) {
            c.last_update_time =
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
            c.message = "still posting".into();
        }
        assert_eq!(fp(&base), fp(&heartbeat));
        let changed = [
            fixtures::ready(base.clone(), ConditionStatus::False),
            fixtures::allocatable(base.clone(), "5"),
            fixtures::labelled(base.clone(), &[("x", "y")]),
            fixtures::deleting(base.clone()),
            Seed { metadata: kube::api::ObjectMeta { generation: Some(2), ..base.metadata.clone() }, ..base.clone() },
        ];
        for s in changed {
            assert_ne!(fp(&base), fp(&s), "{s:?}");
        }
    }
}
