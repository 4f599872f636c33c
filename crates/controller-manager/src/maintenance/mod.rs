//! The shoot maintenance controller's wiring: Shoots (read leniently) and CloudProfile and
//! NamespacedCloudProfile caches (a shoot on a NamespacedCloudProfile is maintained against its
//! merged `status.cloudProfileSpec`);
//! each reconcile asks to be re-queued when the shoot's maintenance window next begins, and a
//! `gardener.cloud/operation: maintain` annotation is an update event that runs it at once. See
//! [`reconcile`] and [`decide`].

pub mod decide;
pub mod reconcile;

use crate::config::MaintenanceConfig;
use crate::runtime::Common;
use ::runtime::runner::Stop;
use api::core::{CloudProfile, NamespacedCloudProfile, Shoot};
use kube::core::DeserializeGuard;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub profiles: Store<CloudProfile>,
    pub namespaced_profiles: Store<NamespacedCloudProfile>,
}

pub async fn run(common: Common, config: MaintenanceConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let wiring = common.wiring(stop, ready).concurrency(config.concurrent_syncs);
    let Some(mut wiring) = wiring.when_served::<(Shoot, CloudProfile, NamespacedCloudProfile)>().await else { return };
    let shoots = wiring.controller("shoots", wiring.all::<DeserializeGuard<Shoot>>(), watcher::Config::default());
    let profiles = wiring.store("cloud profiles", wiring.all::<CloudProfile>(), watcher::Config::default());
    let namespaced_profiles =
        wiring.store("namespaced cloud profiles", wiring.all::<NamespacedCloudProfile>(), watcher::Config::default());
    let controller = shoots.reconcile_all_on(common.clock.jumps());
    let ctx = Arc::new(Context { common, profiles, namespaced_profiles });
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, ctx).await;
}
