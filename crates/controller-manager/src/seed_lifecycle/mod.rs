//! The seed lifecycle controller's wiring: Seeds (primary) and the gardenlets' heartbeat Leases
//! (`gardener-system-seed-lease/<seed>`, written by gardenlet's seed controller); a Lease change
//! re-queues the Seed of the same name. Each reconcile asks to be re-queued when the grace
//! period would run out, so an expiry is noticed on time without polling. See [`reconcile`] and
//! [`decide`].

pub mod decide;
pub mod reconcile;

use crate::config::SeedLifecycleConfig;
use crate::runtime::{self, Common};
use ::runtime::runner::Stop;
use api::core::{Seed, Shoot};
use futures::{StreamExt, future};
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Namespace of the gardenlets' heartbeat Leases in the garden, one per seed, named like it
/// (gardenlet's `seed::LEASE_NAMESPACE`; a test holds the two together).
pub const SEED_LEASE_NAMESPACE: &str = "gardener-system-seed-lease";

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub config: SeedLifecycleConfig,
    pub leases: Store<Lease>,
}

pub async fn run(common: Common, config: SeedLifecycleConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let client = common.client.clone();
    let resources = [kube::api::ApiResource::erase::<Seed>(&()), kube::api::ApiResource::erase::<Shoot>(&())];
    if !runtime::served(&client, reconcile::NAME, &resources, stop.clone()).await {
        return;
    }
    let flags: Vec<Arc<AtomicBool>> = (0..2).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let (seeds, seed_events) =
        runtime::reflect(Api::<Seed>::all(client.clone()), watcher::Config::default(), flags[0].clone());
    let (leases, lease_events) = runtime::reflect(
        Api::<Lease>::namespaced(client.clone(), SEED_LEASE_NAMESPACE),
        watcher::Config::default(),
        flags[1].clone(),
    );
    let jumps = common.clock.jumps();
    let concurrency = config.concurrent_syncs;
    let ctx = Arc::new(Context { common, config, leases });
    let sync = runtime::report_when_synced(flags, ready, stop.clone());
    let controller = Controller::for_stream(seed_events.applied_objects(), seeds)
        .with_config(kube::runtime::Config::default().concurrency(concurrency))
        .watches_stream(lease_events.touched_objects(), |lease: Lease| Some(ObjectRef::<Seed>::new(&lease.name_any())))
        .reconcile_all_on(jumps)
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|r| {
            runtime::log_result(reconcile::NAME, r);
            future::ready(())
        });
    futures::join!(controller, sync);
}
