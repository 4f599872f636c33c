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
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use runtime::wiring::{self, Wiring};
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

/// Runs the controller until `stop`; `ready` turns true once the Bastion cache is filled (the
/// extension Bastions' watch is not waited for).
pub async fn run(
    garden: Client,
    seed: Client,
    seed_name: String,
    concurrency: u16,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    ready: Arc<AtomicBool>,
) {
    let mut wiring = Wiring::new("bastion", garden.clone(), stop, ready).concurrency(concurrency);
    let bastions = wiring.controller("bastions", wiring.all::<Bastion>(), watcher::Config::default());
    let made_here = watcher::Config::default().labels(decide::LABEL_NAME);
    let (extensions, extension_events) = wiring::reflect(Api::<ExtensionBastion>::all(seed.clone()), made_here);
    let ctx = Arc::new(Context { seed_name, deployer: Deployer::new(seed.clone()), garden, seed, extensions });
    let controller =
        bastions.watches_stream(extension_events.touched_objects(), |ext: ExtensionBastion| owner_of(&ext));
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, ctx).await;
}
