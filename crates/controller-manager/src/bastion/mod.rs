//! The Bastion controller's wiring: `operations.gardener.cloud` Bastions (primary) and Shoot
//! metadata; any change of a Shoot (including its deletion) re-queues the Bastions in its
//! namespace that refer to it. Each reconcile asks to be re-queued when the Bastion would
//! expire. See [`reconcile`] and [`decide`].

pub mod decide;
pub mod reconcile;

use crate::config::BastionConfig;
use crate::runtime::Common;
use ::runtime::runner::Stop;
use api::core::Shoot;
use api::operations::Bastion;
use kube::ResourceExt;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub config: BastionConfig,
}

pub async fn run(common: Common, config: BastionConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let wiring = common.wiring(stop, ready).concurrency(config.concurrent_syncs);
    let Some(mut wiring) = wiring.when_served::<(Bastion, Shoot)>().await else { return };
    let bastions = wiring.controller("bastions", wiring.all::<Bastion>(), watcher::Config::default());
    let shoots = wiring.watch("shoots", wiring.all::<PartialObjectMeta<Shoot>>(), watcher::Config::default());
    let store = bastions.store();
    let controller = bastions
        .watches_stream(shoots, move |shoot: PartialObjectMeta<Shoot>| bastions_of(&store, &shoot))
        .reconcile_all_on(common.clock.jumps());
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, Arc::new(Context { common, config })).await;
}

fn bastions_of(store: &Store<Bastion>, shoot: &PartialObjectMeta<Shoot>) -> Vec<ObjectRef<Bastion>> {
    let (namespace, name) = (shoot.namespace(), shoot.name_any());
    store
        .state()
        .iter()
        .filter(|b| b.namespace() == namespace && b.spec.shoot_ref.name == name)
        .map(|b| ObjectRef::from_obj(b.as_ref()))
        .collect()
}
