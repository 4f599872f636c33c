//! The shoot maintenance controller's wiring: Shoots (read leniently) and CloudProfile and
//! NamespacedCloudProfile caches (a shoot on a NamespacedCloudProfile is maintained against its
//! merged `status.cloudProfileSpec`);
//! each reconcile asks to be re-queued when the shoot's maintenance window next begins, and a
//! `gardener.cloud/operation: maintain` annotation is an update event that runs it at once. See
//! [`reconcile`] and [`decide`].

pub mod decide;
pub mod reconcile;

use crate::config::MaintenanceConfig;
use crate::runtime::{self, Common};
use ::runtime::runner::Stop;
use api::core::{CloudProfile, NamespacedCloudProfile, Shoot};
use futures::{StreamExt, future};
use kube::Api;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::Store;
use kube::runtime::{Controller, WatchStreamExt, watcher};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub profiles: Store<CloudProfile>,
    pub namespaced_profiles: Store<NamespacedCloudProfile>,
}

pub async fn run(common: Common, config: MaintenanceConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let client = common.client.clone();
    let resources = [
        kube::api::ApiResource::erase::<Shoot>(&()),
        kube::api::ApiResource::erase::<CloudProfile>(&()),
        kube::api::ApiResource::erase::<NamespacedCloudProfile>(&()),
    ];
    if !runtime::served(&client, reconcile::NAME, &resources, stop.clone()).await {
        return;
    }
    let flags: Vec<Arc<AtomicBool>> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let (shoots, events) = runtime::reflect(
        Api::<DeserializeGuard<Shoot>>::all(client.clone()),
        watcher::Config::default(),
        flags[0].clone(),
    );
    let (profiles, profile_events) =
        runtime::reflect(Api::<CloudProfile>::all(client.clone()), watcher::Config::default(), flags[1].clone());
    let profile_feed = profile_events.take_until(stop.clone()).for_each(|_| future::ready(()));
    let (namespaced_profiles, namespaced_events) = runtime::reflect(
        Api::<NamespacedCloudProfile>::all(client.clone()),
        watcher::Config::default(),
        flags[2].clone(),
    );
    let namespaced_feed = namespaced_events.take_until(stop.clone()).for_each(|_| future::ready(()));
    let jumps = common.clock.jumps();
    let ctx = Arc::new(Context { common, profiles, namespaced_profiles });
    let sync = runtime::report_when_synced(flags, ready, stop.clone());
    let controller = Controller::for_stream(events.applied_objects(), shoots)
        .with_config(kube::runtime::Config::default().concurrency(config.concurrent_syncs))
        .reconcile_all_on(jumps)
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|r| {
            runtime::log_result(reconcile::NAME, r);
            future::ready(())
        });
    futures::join!(controller, sync, profile_feed, namespaced_feed);
}
