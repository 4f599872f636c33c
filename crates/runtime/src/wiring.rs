//! One way to wire a kube-runtime controller: the start-up check that the kinds it needs are
//! served, its caches and watches each under a named readiness flag, and the run (concurrency,
//! graceful shutdown, result logging) joined with reporting ready once every named cache has
//! synced.
//!
//! A [`Wiring`] belongs to one runner task (one or more controllers sharing one readiness
//! flag and one stop). Its methods hand back kube-runtime's own types ([`Store`], watch
//! streams, [`Controller`]), so a controller adds its mappers, triggers and resyncs with
//! kube-runtime's builder, then hands the [`Controller`] back to [`Wiring::run`]:
//!
//! ```ignore
//! let wiring = Wiring::new(NAME, client, stop, ready).concurrency(concurrency);
//! let Some(mut wiring) = wiring.when_served::<(Bastion, Shoot)>().await else { return };
//! let bastions = wiring.controller("bastions", wiring.all::<Bastion>(), watcher::Config::default());
//! let store = bastions.store();
//! let shoots = wiring.watch("shoots", wiring.all::<PartialObjectMeta<Shoot>>(), watcher::Config::default());
//! let controller = bastions.watches_stream(shoots, move |shoot| bastions_of(&store, &shoot)).reconcile_all_on(jumps);
//! wiring.run(controller, reconcile, error_policy, ctx).await;
//! ```
//!
//! A task of several controllers [`Wiring::drive`]s each and joins them in [`Wiring::run_with`];
//! what only feeds a cache or a channel runs [`Wiring::alongside`] them.
//!
//! Every watch made through a `Wiring` method is awaited by readiness: its flag, under the name
//! given, is set by its first `InitDone`. A watch that readiness must not wait for (a kind the
//! cluster may never serve) is made with the free functions [`watch_events`] and [`reflect`].

use crate::cache::SyncFlags;
use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, Stream, StreamExt, TryFuture, TryStreamExt, future};
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::runtime::controller::{Action, Controller, Error as ControllerError};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The kinds a controller needs served before it starts ([`Wiring::when_served`]): a tuple of
/// up to twelve kinds.
pub trait Kinds {
    /// Each kind's resource, in the tuple's order.
    fn resources() -> Vec<ApiResource>;
}

macro_rules! kinds {
    ($($kind:ident),+) => {
        impl<$($kind: Resource<DynamicType = ()>),+> Kinds for ($($kind,)+) {
            fn resources() -> Vec<ApiResource> {
                vec![$(ApiResource::erase::<$kind>(&())),+]
            }
        }
    };
}

kinds!(A);
kinds!(A, B);
kinds!(A, B, C);
kinds!(A, B, C, D);
kinds!(A, B, C, D, E);
kinds!(A, B, C, D, E, F);
kinds!(A, B, C, D, E, F, G);
kinds!(A, B, C, D, E, F, G, H);
kinds!(A, B, C, D, E, F, G, H, I);
kinds!(A, B, C, D, E, F, G, H, I, J);
kinds!(A, B, C, D, E, F, G, H, I, J, K);
kinds!(A, B, C, D, E, F, G, H, I, J, K, L);

/// Watch events of `K`, as every watch of the project reads them.
pub type Events<K> = watcher::Result<watcher::Event<K>>;

/// The wiring of one runner task's controllers: its name (logs), client, stop signal, the
/// runner's readiness flag, and the named readiness flags of its caches.
pub struct Wiring {
    name: &'static str,
    client: Client,
    stop: Shared<BoxFuture<'static, ()>>,
    ready: Arc<AtomicBool>,
    flags: SyncFlags,
    concurrency: u16,
    alongside: Vec<BoxFuture<'static, ()>>,
}

impl Debug for Wiring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wiring").field("name", &self.name).field("flags", &self.flags).finish_non_exhaustive()
    }
}

impl Wiring {
    /// The wiring of the controller(s) named `name` (logs), which stop gracefully once `stop`
    /// resolves and set `ready` (the runner's `/readyz` flag) once every cache named through
    /// this wiring has synced.
    pub fn new(
        name: &'static str,
        client: Client,
        stop: impl Future<Output = ()> + Send + 'static,
        ready: Arc<AtomicBool>,
    ) -> Self {
        Self {
            name,
            client,
            stop: stop.boxed().shared(),
            ready,
            flags: SyncFlags::new(),
            concurrency: 0,
            alongside: Vec::new(),
        }
    }

    /// How many reconciles run at once (each controller run through this wiring); kube-runtime's
    /// default (no bound) without it.
    #[must_use]
    pub fn concurrency(mut self, concurrency: u16) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// Readiness flags declared up front (so that what is pending can be told before the
    /// caches exist); a cache named like one of them sets that flag.
    #[must_use]
    pub fn with_flags(mut self, flags: SyncFlags) -> Self {
        self.flags = flags;
        self
    }

    /// `K` in every namespace (or cluster-scoped), through the wiring's client.
    pub fn all<K>(&self) -> Api<K>
    where
        K: Resource,
        K::DynamicType: Default,
    {
        Api::all(self.client.clone())
    }

    /// The wiring once every kind of `R` (a tuple: `(Bastion, Shoot)`, `(Shoot,)`) is served
    /// ([`wait_for_resources`]); `None` when the stop came first, or discovery failed (logged,
    /// naming the controller): then the controller does not start.
    pub async fn when_served<R: Kinds>(self) -> Option<Self> {
        // Owned, not borrowed across the wait: the wiring is not `Sync` (what runs alongside is
        // only `Send`).
        let (client, stop) = (self.client.clone(), self.stop.clone());
        match wait_for_resources(&client, self.name, &R::resources(), stop).await {
            Ok(served) => served.then_some(self),
            Err(e) => {
                tracing::error!(controller = self.name, error = %crate::cli::report(&e), "the controller cannot start");
                None
            }
        }
    }

    /// `events`, setting the readiness flag named `synced` at their first `InitDone` (the
    /// initial list is complete). For watches built by hand; [`Self::cache`] and
    /// [`Self::watch`] use it.
    pub fn flag_when_listed<K, S>(
        &mut self,
        synced: &'static str,
        events: S,
    ) -> impl Stream<Item = Events<K>> + use<K, S>
    where
        S: Stream<Item = Events<K>>,
    {
        flag_on_init_done(self.name, synced, self.flags.flag(synced), events)
    }

    /// A cache of `K` (as `api` and `config` select) and its watch events (drive them: as a
    /// controller's trigger, or [`Self::alongside`]); readiness waits for it as `synced`.
    pub fn cache<K>(
        &mut self,
        synced: &'static str,
        api: Api<K>,
        config: watcher::Config,
    ) -> (Store<K>, impl Stream<Item = Events<K>> + Send + use<K>)
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let (store, events) = reflect(api, config);
        (store, self.flag_when_listed(synced, events))
    }

    /// A cache of `K` that only the reconciler reads (no trigger): its watch runs alongside
    /// the controllers until the stop; readiness waits for it as `synced`.
    pub fn store<K>(&mut self, synced: &'static str, api: Api<K>, config: watcher::Config) -> Store<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let (store, events) = self.cache(synced, api, config);
        self.alongside(events.for_each(|_| future::ready(())));
        store
    }

    /// The objects of `K` that each event touches (applied or deleted), without a cache: what
    /// [`Controller::watches_stream`] and [`Controller::owns_stream`] take. `K` may be
    /// `PartialObjectMeta<_>` for a metadata watch. Readiness waits for it as `synced`.
    pub fn watch<K>(
        &mut self,
        synced: &'static str,
        api: Api<K>,
        config: watcher::Config,
    ) -> impl Stream<Item = watcher::Result<K>> + Send + use<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
    {
        self.flag_when_listed(synced, watch_events(api, config)).touched_objects()
    }

    /// A controller over `K` (as `api` and `config` select), reconciling each applied object,
    /// with its cache (`Controller::store`); readiness waits for it as `synced`. Add watches,
    /// triggers and resyncs with kube-runtime's builder, then [`Self::run`] it.
    pub fn controller<K>(&mut self, synced: &'static str, api: Api<K>, config: watcher::Config) -> Controller<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let (store, events) = self.cache(synced, api, config);
        Controller::for_stream(events.applied_objects(), store)
    }

    /// Runs `task` alongside the controllers until the stop (or until they end).
    pub fn alongside(&mut self, task: impl Future<Output = ()> + Send + 'static) {
        let stop = self.stop.clone();
        self.alongside.push(
            async move {
                futures::pin_mut!(task);
                future::select(task, stop).await;
            }
            .boxed(),
        );
    }

    /// `controller` configured (the wiring's concurrency, graceful shutdown on its stop) and
    /// running `reconcile` with `error_policy` and `ctx`, its results logged
    /// ([`log_result`]); resolves once it has shut down. For a task of several controllers,
    /// joined in [`Self::run_with`]; one controller is simply [`Self::run`].
    pub fn drive<K, ReconcilerFut, Ctx, Reconcile, ErrorPolicy>(
        &self,
        controller: Controller<K>,
        reconcile: Reconcile,
        error_policy: ErrorPolicy,
        ctx: Arc<Ctx>,
    ) -> impl Future<Output = ()> + use<K, ReconcilerFut, Ctx, Reconcile, ErrorPolicy>
    where
        Reconcile: FnMut(Arc<K>, Arc<Ctx>) -> ReconcilerFut,
        ErrorPolicy: Fn(Arc<K>, &ReconcilerFut::Error, Arc<Ctx>) -> Action,
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::DynamicType: Eq + Hash + Clone + Debug + Unpin,
        ReconcilerFut: TryFuture<Ok = Action> + Send + 'static,
        ReconcilerFut::Error: std::error::Error + Send + 'static,
    {
        let name = self.name;
        let store = controller.store();
        let run = controller
            .with_config(kube::runtime::Config::default().concurrency(self.concurrency))
            .graceful_shutdown_on(self.stop.clone())
            .run(reconcile, error_policy, ctx)
            .for_each(move |result| {
                log_result(name, result);
                future::ready(())
            });
        until_done_or_unstarted_at_stop(run, store, self.stop.clone())
    }

    /// Runs `controllers` (typically [`Self::drive`]n) until they end, with what runs
    /// [`Self::alongside`] and the readiness report: the runner's flag is set once every named
    /// cache has synced.
    pub async fn run_with(self, controllers: impl Future<Output = ()>) {
        let Self { name, stop, ready, flags, alongside, .. } = self;
        let rest = async move {
            futures::join!(report_ready(name, flags, ready, stop), future::join_all(alongside));
            // The controllers decide when the task ends.
            future::pending::<()>().await
        };
        futures::pin_mut!(controllers, rest);
        future::select(controllers, rest).await;
    }

    /// Runs one controller: [`Self::drive`] within [`Self::run_with`].
    pub async fn run<K, ReconcilerFut, Ctx>(
        self,
        controller: Controller<K>,
        reconcile: impl FnMut(Arc<K>, Arc<Ctx>) -> ReconcilerFut,
        error_policy: impl Fn(Arc<K>, &ReconcilerFut::Error, Arc<Ctx>) -> Action,
        ctx: Arc<Ctx>,
    ) where
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::DynamicType: Eq + Hash + Clone + Debug + Unpin,
        ReconcilerFut: TryFuture<Ok = Action> + Send + 'static,
        ReconcilerFut::Error: std::error::Error + Send + 'static,
    {
        let controller = self.drive(controller, reconcile, error_policy, ctx);
        self.run_with(controller).await;
    }
}

/// Resolves at `stop` if the controller over `store` has not started reconciling by then (its
/// initial list was not complete), and never otherwise.
///
/// kube-runtime holds a controller's runner until its store is ready, and keeps holding it
/// after a graceful shutdown ended the queue: a stop that comes before the first list completes
/// (a controller that started late, a slow API server) would wait for a store that is never
/// filled. Nothing can be in flight then, so such a controller simply ends. A controller that
/// did start ends through kube-runtime's graceful shutdown, its running reconciles finished.
async fn unstarted_at_stop<K>(store: Store<K>, stop: impl Future<Output = ()>)
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    stop.await;
    if store.wait_until_ready().now_or_never().is_none() {
        return;
    }
    future::pending::<()>().await
}

/// Runs `run` (a controller over `store`) until it ends, or until `stop` if the controller has
/// not started reconciling by then ([`unstarted_at_stop`]).
pub async fn until_done_or_unstarted_at_stop<K>(
    run: impl Future<Output = ()>,
    store: Store<K>,
    stop: impl Future<Output = ()>,
) where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    let never_started = unstarted_at_stop(store, stop);
    futures::pin_mut!(run, never_started);
    future::select(run, never_started).await;
}

/// The watch events of `K` with kube-runtime's default backoff after errors. Not awaited by any
/// readiness (see [`Wiring::flag_when_listed`]).
pub fn watch_events<K>(api: Api<K>, config: watcher::Config) -> impl Stream<Item = Events<K>> + Send + 'static
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    watcher::watcher(api, config).default_backoff()
}

/// A cache of `K` and its watch events ([`watch_events`] reflected into it). Not awaited by any
/// readiness; [`Wiring::cache`] is.
pub fn reflect<K>(api: Api<K>, config: watcher::Config) -> (Store<K>, impl Stream<Item = Events<K>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    (store, watch_events(api, config).reflect(writer))
}

/// `events`, setting `flag` at their first `InitDone` (and at each later one: a re-list).
fn flag_on_init_done<K>(
    controller: &'static str,
    cache: &'static str,
    flag: Arc<AtomicBool>,
    events: impl Stream<Item = Events<K>>,
) -> impl Stream<Item = Events<K>> {
    events.inspect_ok(move |event| {
        if matches!(event, watcher::Event::InitDone) && !flag.swap(true, Ordering::AcqRel) {
            tracing::debug!(controller, cache, "cache synced");
        }
    })
}

/// Sets `ready` once every flag of `flags` is set (checked every 100 ms: a one-off wait at
/// start-up), unless `stop` resolves first.
async fn report_ready(
    controller: &'static str,
    flags: SyncFlags,
    ready: Arc<AtomicBool>,
    stop: impl Future<Output = ()>,
) {
    let synced = async {
        while !flags.synced() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        ready.store(true, Ordering::Release);
        tracing::debug!(controller, "every cache synced");
    };
    futures::pin_mut!(synced, stop);
    future::select(synced, stop).await;
}

/// Logs what a controller's run stream yields that is not a plain success: objects deleted
/// before their turn and failed reconciles (the error policy reports those) are not logged.
pub fn log_result<T, E, Q>(controller: &'static str, result: Result<T, ControllerError<E, Q>>)
where
    E: std::error::Error + 'static,
    Q: std::error::Error + 'static,
{
    match result {
        Ok(_) | Err(ControllerError::ObjectNotFound(_) | ControllerError::ReconcilerFailed(..)) => {}
        Err(e) => tracing::warn!(controller, error = %crate::events::error_chain(&e), "controller stream"),
    }
}

/// A controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("checking whether the {resource} resource is served")]
    Discovery {
        resource: String,
        #[source]
        source: kube::Error,
    },
}

/// How often [`wait_for_resources`] looks again.
const RESOURCE_POLL: Duration = Duration::from_secs(5);

/// Waits until every resource in `resources` is served, saying which are missing (controllers
/// never install CRDs). `Ok(false)` when `stop` resolved first.
pub async fn wait_for_resources(
    client: &Client,
    controller: &str,
    resources: &[ApiResource],
    stop: impl Future<Output = ()>,
) -> Result<bool, StartError> {
    futures::pin_mut!(stop);
    loop {
        let mut missing = Vec::new();
        for resource in resources {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
            let name = || format!("{}.{}", resource.plural, resource.group);
            match api.list_metadata(&ListParams::default().limit(1)).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => missing.push(name()),
                Err(source) => return Err(StartError::Discovery { resource: name(), source }),
            }
        }
        if missing.is_empty() {
            return Ok(true);
        }
        tracing::warn!(
            controller,
            ?missing,
            "waiting for these resources to be served; controllers do not install CRDs"
        );
        tokio::select! {
            () = tokio::time::sleep(RESOURCE_POLL) => {}
            () = &mut stop => return Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    #[test]
    fn the_kinds_to_be_served_are_named_in_order() {
        use k8s_openapi::api::coordination::v1::Lease;
        use k8s_openapi::api::core::v1::Secret;
        let names: Vec<String> =
            <(Secret, Lease)>::resources().into_iter().map(|r| format!("{}.{}", r.plural, r.group)).collect();
        assert_eq!(names, ["secrets.", "leases.coordination.k8s.io"]);
    }

    fn config_map(name: &str) -> ConfigMap {
        ConfigMap { metadata: ObjectMeta { name: Some(name.into()), ..Default::default() }, ..Default::default() }
    }

    #[tokio::test]
    async fn a_watch_flags_its_cache_at_init_done_and_passes_every_event_on() {
        let flag = Arc::new(AtomicBool::new(false));
        let events: Vec<Events<ConfigMap>> = vec![
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(config_map("a"))),
            Err(watcher::Error::NoResourceVersion),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(config_map("b"))),
        ];
        let stream = flag_on_init_done("test", "config maps", flag.clone(), futures::stream::iter(events));
        futures::pin_mut!(stream);
        let mut seen = 0;
        while let Some(event) = stream.next().await {
            seen += 1;
            // The event is passed on only after the flag is set: set from the fourth on.
            assert_eq!(flag.load(Ordering::Acquire), seen >= 4, "after event {seen}: {event:?}");
        }
        assert_eq!(seen, 5);
    }

    #[tokio::test(start_paused = true)]
    async fn ready_is_reported_once_every_named_cache_synced() {
        let mut flags = SyncFlags::new();
        let (shoots, seeds) = (flags.flag("shoots"), flags.flag("seeds"));
        let ready = Arc::new(AtomicBool::new(false));
        let report = tokio::spawn(report_ready("test", flags, ready.clone(), future::pending()));
        shoots.store(true, Ordering::Release);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!ready.load(Ordering::Acquire), "seeds have not synced");
        seeds.store(true, Ordering::Release);
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(ready.load(Ordering::Acquire));
        assert!(report.is_finished());
    }

    #[tokio::test(start_paused = true)]
    async fn the_stop_ends_the_wait_for_readiness_without_reporting_ready() {
        let mut flags = SyncFlags::new();
        let _never = flags.flag("never");
        let ready = Arc::new(AtomicBool::new(false));
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let report = tokio::spawn(report_ready("test", flags, ready.clone(), rx.map(drop)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        drop(tx);
        tokio::time::timeout(Duration::from_secs(1), report).await.ok().and_then(Result::ok).unwrap_or_else(|| {
            panic!("the report did not end with the stop");
        });
        assert!(!ready.load(Ordering::Acquire));
    }

    fn wiring(stop: impl Future<Output = ()> + Send + 'static, ready: Arc<AtomicBool>) -> Wiring {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap_or_else(|e| panic!("{e}")));
        let client = Client::try_from(config).unwrap_or_else(|e| panic!("{e}"));
        Wiring::new("test", client, stop, ready)
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_ends_with_its_controllers_and_runs_what_goes_alongside_until_then() {
        let ready = Arc::new(AtomicBool::new(false));
        let mut wiring = wiring(future::pending(), ready.clone());
        // A cache that never syncs: readiness waits for it, the task does not.
        let _never = wiring.flag_when_listed("never", futures::stream::pending::<Events<ConfigMap>>());
        let (ticks_tx, mut ticks) = futures::channel::mpsc::unbounded();
        wiring.alongside(async move {
            loop {
                let _ = ticks_tx.unbounded_send(());
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        tokio::time::timeout(Duration::from_secs(60), wiring.run_with(tokio::time::sleep(Duration::from_millis(2500))))
            .await
            .unwrap_or_else(|_| panic!("the task did not end with its controllers"));
        let mut count = 0;
        while let Ok(()) = ticks.try_recv() {
            count += 1;
        }
        assert_eq!(count, 3, "ticks at 0, 1 and 2 s, then dropped with the controllers");
        assert!(!ready.load(Ordering::Acquire));
    }

    #[tokio::test(start_paused = true)]
    async fn what_runs_alongside_ends_at_the_stop_and_a_task_without_caches_is_ready_at_once() {
        let ready = Arc::new(AtomicBool::new(false));
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let mut wiring = wiring(rx.map(drop), ready.clone());
        let (ended_tx, ended_rx) = futures::channel::oneshot::channel::<()>();
        wiring.alongside(async move {
            let _keep = ended_tx;
            future::pending::<()>().await;
        });
        let task = tokio::spawn(wiring.run_with(future::pending()));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(ready.load(Ordering::Acquire), "no cache to wait for");
        drop(tx);
        // The alongside task dropped its sender: it ended with the stop.
        assert!(ended_rx.await.is_err());
        task.abort();
    }
}
