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
use crate::runtime::Common;
use ::runtime::runner::Stop;
use ::runtime::wiring::Wiring;
use api::authentication::AdminKubeconfigRequest;
use api::core::{InternalSecret, Shoot};
use futures::{Stream, StreamExt, future};
use kube::ResourceExt;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub config: AdminKubeconfigConfig,
}

/// The `(namespace, name)` of every `K` a metadata watch touches; readiness waits for it as
/// `synced`.
fn touched_names<K>(wiring: &mut Wiring, synced: &'static str) -> impl Stream<Item = (String, String)> + Send + use<K>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    wiring.watch(synced, wiring.all::<PartialObjectMeta<K>>(), watcher::Config::default()).filter_map(
        |r: Result<PartialObjectMeta<K>, _>| {
            future::ready(r.ok().map(|m| (m.namespace().unwrap_or_default(), m.name_any())))
        },
    )
}

/// The kinds the controller needs served before it starts.
type Served = (AdminKubeconfigRequest, Shoot, InternalSecret);

pub async fn run(common: Common, config: AdminKubeconfigConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let wiring = common.wiring(stop, ready).concurrency(config.concurrent_syncs);
    let Some(mut wiring) = wiring.when_served::<Served>().await else { return };
    let requests = wiring.controller(
        "admin kubeconfig requests",
        wiring.all::<AdminKubeconfigRequest>(),
        watcher::Config::default(),
    );
    let related = futures::stream::select(
        touched_names::<Shoot>(&mut wiring, "shoots"),
        touched_names::<InternalSecret>(&mut wiring, "internal secrets").filter_map(|(namespace, name)| {
            // `<shoot>.ca-client`; other InternalSecrets concern no request.
            future::ready(name.strip_suffix(".ca-client").map(|shoot| (namespace, shoot.to_string())))
        }),
    );
    let store = requests.store();
    let controller = requests
        .reconcile_on(
            related.flat_map(move |(namespace, shoot)| futures::stream::iter(requests_of(&store, &namespace, &shoot))),
        )
        .reconcile_all_on(common.clock.jumps());
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, Arc::new(Context { common, config })).await;
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
