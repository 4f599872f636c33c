//! The Bastion controller's wiring: `operations.gardener.cloud` Bastions (primary) and Shoot
//! metadata; any change of a Shoot (including its deletion) re-queues the Bastions in its
//! namespace that refer to it. Each reconcile asks to be re-queued when the Bastion would
//! expire. See [`reconcile`] and [`decide`].

pub mod decide;
pub mod reconcile;

use crate::config::BastionConfig;
use crate::runtime::{self, Common};
use ::runtime::runner::Stop;
use api::core::Shoot;
use api::operations::Bastion;
use futures::{StreamExt, TryStreamExt, future};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub config: BastionConfig,
}

pub async fn run(common: Common, config: BastionConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let client = common.client.clone();
    let resources = [kube::api::ApiResource::erase::<Bastion>(&()), kube::api::ApiResource::erase::<Shoot>(&())];
    if !runtime::served(&client, reconcile::NAME, &resources, stop.clone()).await {
        return;
    }
    let flags: Vec<Arc<AtomicBool>> = (0..2).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let (bastions, bastion_events) =
        runtime::reflect(Api::<Bastion>::all(client.clone()), watcher::Config::default(), flags[0].clone());
    let shoot_flag = flags[1].clone();
    let shoot_events =
        watcher::watcher(Api::<PartialObjectMeta<Shoot>>::all(client.clone()), watcher::Config::default())
            .default_backoff()
            .inspect_ok(move |e| {
                if matches!(e, watcher::Event::InitDone) {
                    shoot_flag.store(true, Ordering::Release);
                }
            });
    let jumps = common.clock.jumps();
    let concurrency = config.concurrent_syncs;
    let ctx = Arc::new(Context { common, config });
    let store = bastions.clone();
    let sync = runtime::report_when_synced(flags, ready, stop.clone());
    let controller = Controller::for_stream(bastion_events.applied_objects(), bastions)
        .with_config(kube::runtime::Config::default().concurrency(concurrency))
        .watches_stream(shoot_events.touched_objects(), move |shoot: PartialObjectMeta<Shoot>| {
            bastions_of(&store, &shoot)
        })
        .reconcile_all_on(jumps)
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|r| {
            runtime::log_result(reconcile::NAME, r);
            future::ready(())
        });
    futures::join!(controller, sync);
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
