//! The hibernation schedule controller's wiring: Shoots (read leniently, so one malformed Shoot
//! cannot stop the watch), re-queued by each reconcile at the next tick of their schedules. See
//! [`reconcile`], [`decide`] and [`schedule`].

pub mod decide;
pub mod reconcile;
pub mod schedule;

use crate::config::HibernationConfig;
use crate::runtime::{self, Common};
use ::runtime::runner::Stop;
use api::core::Shoot;
use futures::{StreamExt, future};
use kube::Api;
use kube::core::DeserializeGuard;
use kube::runtime::{Controller, WatchStreamExt, watcher};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub config: HibernationConfig,
}

pub async fn run(common: Common, config: HibernationConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let client = common.client.clone();
    let resources = [kube::api::ApiResource::erase::<Shoot>(&())];
    if !runtime::served(&client, reconcile::NAME, &resources, stop.clone()).await {
        return;
    }
    let flag = Arc::new(AtomicBool::new(false));
    let (shoots, events) =
        runtime::reflect(Api::<DeserializeGuard<Shoot>>::all(client.clone()), watcher::Config::default(), flag.clone());
    let jumps = common.clock.jumps();
    let concurrency = config.concurrent_syncs;
    let ctx = Arc::new(Context { common, config });
    let sync = runtime::report_when_synced(vec![flag], ready, stop.clone());
    let controller = Controller::for_stream(events.applied_objects(), shoots)
        .with_config(kube::runtime::Config::default().concurrency(concurrency))
        .reconcile_all_on(jumps)
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|r| {
            runtime::log_result(reconcile::NAME, r);
            future::ready(())
        });
    futures::join!(controller, sync);
}
