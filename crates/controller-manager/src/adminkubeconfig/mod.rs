//! The AdminKubeconfigRequest controller's wiring: `authentication.gardener.cloud`
//! AdminKubeconfigRequests (primary), and the metadata of Shoots and InternalSecrets: a change
//! of a Shoot or of its `<shoot>.ca-client` re-queues the requests in its namespace that name
//! that shoot, so a Pending request is issued as soon as the shoot advertises its address and
//! gardenlet has published its client CA.
//! Each reconcile asks to be re-queued when the request expires. See [`reconcile`] and
//! [`decide`].

pub mod decide;
pub mod reconcile;

use crate::config::AdminKubeconfigConfig;
use crate::runtime::{self, Common};
use ::runtime::runner::Stop;
use api::authentication::AdminKubeconfigRequest;
use api::core::{InternalSecret, Shoot};
use futures::{Stream, StreamExt, TryStreamExt, future};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub config: AdminKubeconfigConfig,
}

/// Metadata events of `K`, raising `flag` once the initial list is in.
fn metadata_events<K>(
    client: kube::Client,
    flag: Arc<AtomicBool>,
) -> impl Stream<Item = (String, String)> + Send + 'static
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    watcher::watcher(Api::<PartialObjectMeta<K>>::all(client), watcher::Config::default())
        .default_backoff()
        .inspect_ok(move |e| {
            if matches!(e, watcher::Event::InitDone) {
                flag.store(true, Ordering::Release);
            }
        })
        .touched_objects()
        .filter_map(|r: Result<PartialObjectMeta<K>, _>| {
            future::ready(r.ok().map(|m| (m.namespace().unwrap_or_default(), m.name_any())))
        })
}

pub async fn run(common: Common, config: AdminKubeconfigConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let client = common.client.clone();
    let resources = [
        kube::api::ApiResource::erase::<AdminKubeconfigRequest>(&()),
        kube::api::ApiResource::erase::<Shoot>(&()),
        kube::api::ApiResource::erase::<InternalSecret>(&()),
    ];
    if !runtime::served(&client, reconcile::NAME, &resources, stop.clone()).await {
        return;
    }
    let flags: Vec<Arc<AtomicBool>> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let (requests, request_events) = runtime::reflect(
        Api::<AdminKubeconfigRequest>::all(client.clone()),
        watcher::Config::default(),
        flags[0].clone(),
    );
    let related = futures::stream::select(
        metadata_events::<Shoot>(client.clone(), flags[1].clone()),
        metadata_events::<InternalSecret>(client.clone(), flags[2].clone()).filter_map(|(namespace, name)| {
            // `<shoot>.ca-client`; other InternalSecrets concern no request.
            future::ready(name.strip_suffix(".ca-client").map(|shoot| (namespace, shoot.to_string())))
        }),
    );
    let jumps = common.clock.jumps();
    let concurrency = config.concurrent_syncs;
    let ctx = Arc::new(Context { common, config });
    let store = requests.clone();
    let sync = runtime::report_when_synced(flags, ready, stop.clone());
    let controller = Controller::for_stream(request_events.applied_objects(), requests)
        .with_config(kube::runtime::Config::default().concurrency(concurrency))
        .reconcile_on(
            related.flat_map(move |(namespace, shoot)| futures::stream::iter(requests_of(&store, &namespace, &shoot))),
        )
        .reconcile_all_on(jumps)
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|r| {
            runtime::log_result(reconcile::NAME, r);
            future::ready(())
        });
    futures::join!(controller, sync);
}

/// The requests in `namespace` for `shoot` that still wait to be issued.
fn requests_of(
    store: &Store<AdminKubeconfigRequest>,
    namespace: &str,
    shoot: &str,
) -> Vec<ObjectRef<AdminKubeconfigRequest>> {
    store
        .state()
        .iter()
        .filter(|r| r.namespace().as_deref() == Some(namespace) && r.spec.shoot_ref.name == shoot)
        .filter(|r| {
            r.status
                .as_ref()
                .and_then(|s| s.phase)
                .is_none_or(|p| p == api::authentication::AdminKubeconfigRequestPhase::Pending)
        })
        .map(|r| ObjectRef::from_obj(r.as_ref()))
        .collect()
}
