//! The seed lifecycle controller's wiring: Seeds (primary) and the gardenlets' heartbeat Leases
//! (`gardener-system-seed-lease/<seed>`, written by gardenlet's seed controller); a Lease change
//! re-queues the Seed of the same name. Each reconcile asks to be re-queued when the grace
//! period would run out, so an expiry is noticed on time without polling. See [`reconcile`] and
//! [`decide`].

pub mod decide;
pub mod reconcile;

use crate::config::SeedLifecycleConfig;
use crate::runtime::Common;
use ::runtime::runner::Stop;
use api::core::{Seed, Shoot};
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
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
    let wiring = common.wiring(stop, ready).concurrency(config.concurrent_syncs);
    let Some(mut wiring) = wiring.when_served::<(Seed, Shoot)>().await else { return };
    let seeds = wiring.controller("seeds", wiring.all::<Seed>(), watcher::Config::default());
    let leases_api = Api::<Lease>::namespaced(common.client.clone(), SEED_LEASE_NAMESPACE);
    let (leases, lease_events) = wiring.cache("leases", leases_api, watcher::Config::default());
    let controller = seeds
        .watches_stream(lease_events.touched_objects(), |lease: Lease| Some(ObjectRef::<Seed>::new(&lease.name_any())))
        .reconcile_all_on(common.clock.jumps());
    let ctx = Arc::new(Context { common, config, leases });
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, ctx).await;
}
