//! The hibernation schedule controller's wiring: Shoots (read leniently, so one malformed Shoot
//! cannot stop the watch), re-queued by each reconcile at the next tick of their schedules. See
//! [`reconcile`], [`decide`] and [`schedule`].

pub mod decide;
pub mod reconcile;
pub mod schedule;

use crate::config::HibernationConfig;
use crate::runtime::Common;
use ::runtime::runner::Stop;
use api::core::Shoot;
use kube::core::DeserializeGuard;
use kube::runtime::watcher;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub config: HibernationConfig,
}

pub async fn run(common: Common, config: HibernationConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let wiring = common.wiring(stop, ready).concurrency(config.concurrent_syncs);
    let Some(mut wiring) = wiring.when_served::<(Shoot,)>().await else { return };
    let shoots = wiring.controller("shoots", wiring.all::<DeserializeGuard<Shoot>>(), watcher::Config::default());
    let controller = shoots.reconcile_all_on(common.clock.jumps());
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, Arc::new(Context { common, config })).await;
}
