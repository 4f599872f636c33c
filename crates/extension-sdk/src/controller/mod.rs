//! The generic extension controller: wires a `kube::runtime::Controller` for one kind to an
//! [`Actuator`]. It watches the kind (leniently: a malformed object is reported, not fatal)
//! and, in [`Mode::Generation`], the `Cluster`s, mapping a Cluster change to the objects that
//! belong to it. What happens per object is in `reconcile`; the decision itself in
//! [`decide`], the status steps in [`status`].

pub mod decide;
mod reconcile;
pub mod status;

pub use decide::{ANNOTATION_FORCE_DELETION, Mode};

use crate::actuator::Actuator;
use crate::kinds::ExtensionResource;
use crate::metrics::Metrics;
use api::extensions::{Cluster, ExtensionClass};
use futures::{FutureExt, StreamExt};
use kube::api::ListParams;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use kube::{Api, Client};
use runtime::backoff::{Backoff, BackoffConfig};
use runtime::events::Events;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a controller is set up.
#[derive(Clone, Debug)]
pub struct ControllerConfig {
    /// The `spec.type`s this controller handles.
    pub types: Vec<String>,
    /// The `spec.class` this controller handles (absent on an object means `shoot`).
    pub class: ExtensionClass,
    /// When to act on objects that have succeeded before.
    pub mode: Mode,
    /// How many objects are reconciled at once.
    pub concurrency: u16,
    /// How long one actuator call may take; the kind's default when `None`.
    pub timeout: Option<Duration>,
    /// Retry pacing after failures.
    pub backoff: BackoffConfig,
    /// Reporting controller name of events; `extension-sdk/<kind>` when `None`.
    pub name: Option<String>,
    /// Reporting instance of events (e.g. the pod name).
    pub instance: Option<String>,
}

impl ControllerConfig {
    /// A controller for objects of the given types, class `shoot`, annotation mode.
    pub fn new(types: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            types: types.into_iter().map(Into::into).collect(),
            class: ExtensionClass::Shoot,
            mode: Mode::Annotation,
            concurrency: 5,
            timeout: None,
            backoff: BackoffConfig::default(),
            name: None,
            instance: None,
        }
    }

    pub fn class(mut self, class: ExtensionClass) -> Self {
        self.class = class;
        self
    }

    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    pub fn concurrency(mut self, concurrency: u16) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }

    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }
}

/// Shared by every reconcile of one controller.
pub(crate) struct Context<K: ExtensionResource, A> {
    pub client: Client,
    pub actuator: A,
    pub config: ControllerConfig,
    pub metrics: Metrics,
    pub events: Events,
    pub backoff: Backoff,
    pub kind: String,
    pub finalizer: String,
    pub field_manager: String,
    pub timeout: Duration,
    /// Cluster fingerprint each object was last successfully acted on with (by UID).
    pub cluster_seen: Mutex<HashMap<String, u64>>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

/// The controller for one extension kind and one actuator.
pub struct ExtensionController<K: ExtensionResource, A: Actuator<K>> {
    ctx: Arc<Context<K, A>>,
}

impl<K: ExtensionResource, A: Actuator<K>> std::fmt::Debug for ExtensionController<K, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionController").field("kind", &self.ctx.kind).field("config", &self.ctx.config).finish()
    }
}

impl<K: ExtensionResource, A: Actuator<K>> ExtensionController<K, A> {
    /// A controller that records its metrics in `metrics` (share one [`Metrics`] per process).
    pub fn new(client: Client, actuator: A, config: ControllerConfig, metrics: Metrics) -> Self {
        let kind = crate::kinds::kind_name::<K>();
        let name = config.name.clone().unwrap_or_else(|| format!("extension-sdk/{}", kind.to_lowercase()));
        let events = Events::new(client.clone(), name.clone(), config.instance.clone());
        // The kind's series exist (at zero) from the start, on a standby replica too, so a
        // scrape shows which controllers the process runs before it leads.
        metrics.register(&kind);
        let ctx = Context {
            client,
            actuator,
            metrics,
            events,
            backoff: Backoff::new(config.backoff),
            finalizer: K::finalizer(),
            field_manager: name,
            timeout: config.timeout.unwrap_or_else(K::default_timeout),
            kind,
            config,
            cluster_seen: Mutex::default(),
            _kind: std::marker::PhantomData,
        };
        Self { ctx: Arc::new(ctx) }
    }

    /// The controller's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.ctx.metrics
    }

    /// The kind this controller handles.
    pub fn kind(&self) -> &str {
        &self.ctx.kind
    }

    /// Runs until `shutdown` resolves, then waits for running reconciles to finish.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
        self.run_with_ready(shutdown, Arc::new(AtomicBool::new(false))).await
    }

    /// Like [`ExtensionController::run`]; sets `ready` once the watch cache has synced.
    pub async fn run_with_ready(
        self,
        shutdown: impl Future<Output = ()> + Send + Sync + 'static,
        ready: Arc<AtomicBool>,
    ) {
        let ctx = self.ctx;
        let mut shutdown = shutdown.boxed().shared();
        if !wait_for_crd::<K>(&ctx.client, &mut shutdown).await {
            return;
        }
        let api: Api<DeserializeGuard<K>> = Api::all(ctx.client.clone());
        let mut controller = Controller::new(api, watcher::Config::default())
            .with_config(kube::runtime::Config::default().concurrency(ctx.config.concurrency));
        let store = controller.store();
        if ctx.config.mode == Mode::Generation {
            let objects = store.clone();
            let clusters: Api<Cluster> = Api::all(ctx.client.clone());
            controller = controller.watches(clusters, watcher::Config::default(), move |cluster: Cluster| {
                let name = cluster.metadata.name.unwrap_or_default();
                objects
                    .state()
                    .into_iter()
                    .filter(|o| o.0.as_ref().is_ok_and(|k| k.cluster_name().as_deref() == Some(name.as_str())))
                    .map(|o| ObjectRef::from_obj(&*o))
                    .collect::<Vec<_>>()
            });
        }
        let readiness = runtime::cache::flag_when_synced(store.clone(), ready.clone());
        let kind = ctx.kind.clone();
        tracing::info!(kind = %kind, types = ?ctx.config.types, mode = ?ctx.config.mode, "starting extension controller");
        let run = controller
            .graceful_shutdown_on(shutdown.clone())
            .run(reconcile::reconcile, reconcile::error_policy, ctx)
            .for_each(|result| {
                if let Err(e) = result {
                    tracing::debug!(kind = %kind, error = %runtime::events::error_chain(&e), "controller stream");
                }
                futures::future::ready(())
            });
        runtime::wiring::until_done_or_unstarted_at_stop(run, store, shutdown).await;
        readiness.abort();
        ready.store(false, Ordering::Release);
        tracing::info!(kind = %kind, "extension controller stopped");
    }
}

/// Waits until the kind's CRD is served, naming it while it is not. Returns false when
/// `shutdown` came first. Controllers never install CRDs themselves.
async fn wait_for_crd<K: ExtensionResource>(
    client: &Client,
    shutdown: &mut (impl Future<Output = ()> + Unpin),
) -> bool {
    let api: Api<DeserializeGuard<K>> = Api::all(client.clone());
    loop {
        match api.list_metadata(&ListParams::default().limit(1)).await {
            Ok(_) => return true,
            Err(kube::Error::Api(s)) if s.code == 404 => {
                tracing::error!(
                    crd = %format!("{}.{}", K::plural(&()), K::group(&())),
                    "the CRD is not installed; waiting for it"
                );
            }
            Err(e) => tracing::warn!(error = %runtime::events::error_chain(&e), "checking whether the CRD is served"),
        }
        tokio::select! {
            _ = &mut *shutdown => return false,
            _ = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    }
}

impl<K: ExtensionResource, A: Actuator<K>> runtime::runner::Controller for ExtensionController<K, A> {
    fn run_with_ready(
        self,
        stop: runtime::runner::Stop,
        ready: Arc<AtomicBool>,
    ) -> futures::future::BoxFuture<'static, ()> {
        use futures::FutureExt;
        ExtensionController::run_with_ready(self, stop, ready).boxed()
    }
}
