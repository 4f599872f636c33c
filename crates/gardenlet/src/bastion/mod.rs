//! The Bastion controller (GEP-15, gardenlet's part): for each `operations.gardener.cloud`
//! Bastion of a shoot on this seed, the provider's extension Bastion in the shoot's seed
//! namespace, whose address and readiness it reports back. The controller-manager validates
//! Bastions, records their creator and deletes them on expiry; the provider extension runs the
//! jump host. See [`decide`] (pure) and [`reconcile`].
//!
//! Watches: every operations Bastion in the garden (reconciles only those whose `spec.seedName`
//! is this seed), and the extension Bastions in the seed that carry the labels naming their
//! operations Bastion (a status change, or a deletion, re-queues it).

pub mod decide;
pub mod reconcile;

use api::extensions::Bastion as ExtensionBastion;
use api::operations::Bastion;
use extension_sdk::deployer::Deployer;
use futures::StreamExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use kube::{Api, Client, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub struct Context {
    pub seed_name: String,
    pub garden: Client,
    pub seed: Client,
    /// The extension Bastions this controller made, from its watch.
    pub extensions: Store<ExtensionBastion>,
    pub deployer: Deployer,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("seed_name", &self.seed_name).finish_non_exhaustive()
    }
}

/// The operations Bastion an extension Bastion serves, from its labels.
fn owner_of(ext: &ExtensionBastion) -> Option<ObjectRef<Bastion>> {
    let labels = ext.labels();
    Some(ObjectRef::new(labels.get(decide::LABEL_NAME)?).within(labels.get(decide::LABEL_NAMESPACE)?))
}

/// Runs the controller until `stop`; `ready` turns true once the Bastion cache is filled.
pub async fn run(
    garden: Client,
    seed: Client,
    seed_name: String,
    concurrency: u16,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    ready: Arc<AtomicBool>,
) {
    let (extensions, writer) = reflector::store();
    let extension_events = reflector(
        writer,
        watcher(Api::<ExtensionBastion>::all(seed.clone()), watcher::Config::default().labels(decide::LABEL_NAME))
            .default_backoff(),
    )
    .touched_objects();
    let controller = Controller::new(Api::<Bastion>::all(garden.clone()), watcher::Config::default());
    let synced = runtime::cache::flag_when_synced(controller.store(), ready);
    let ctx = Arc::new(Context { seed_name, deployer: Deployer::new(seed.clone()), garden, seed, extensions });
    let run = controller
        .with_config(kube::runtime::controller::Config::default().concurrency(concurrency))
        .watches_stream(extension_events, |ext: ExtensionBastion| owner_of(&ext))
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|_| futures::future::ready(()));
    run.await;
    synced.abort();
}
