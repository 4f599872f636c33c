//! The ManagedSeedSet controller's wiring (GEP-13): ManagedSeedSets in the garden namespace
//! (primary); the ManagedSeeds and Shoots they control re-queue their set; a Seed re-queues the
//! set of the ManagedSeed of the same name; a Shoot scheduled onto such a seed (its
//! `name.seed.gardener.cloud/<seed>` label) re-queues that set too, so a scale-in blocked by
//! hosted shoots resumes when they leave. Every wait of the set ends with one of these events,
//! so nothing polls. See [`reconcile`], [`decide`] and [`build`].

pub mod build;
pub mod decide;
pub mod reconcile;

use crate::runtime::{self, Common};
use ::runtime::runner::Stop;
use api::core::{Seed, Shoot};
use api::helpers::constants::GARDEN_NAMESPACE;
use api::helpers::seed_labels;
use api::seedmanagement::{ManagedSeed, ManagedSeedSet};
use futures::{StreamExt, future};
use kube::api::ApiResource;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
}

pub async fn run(common: Common, concurrency: u16, stop: Stop, ready: Arc<AtomicBool>) {
    let client = common.client.clone();
    let resources = [
        ApiResource::erase::<ManagedSeedSet>(&()),
        ApiResource::erase::<ManagedSeed>(&()),
        ApiResource::erase::<Shoot>(&()),
        ApiResource::erase::<Seed>(&()),
    ];
    if !runtime::served(&client, reconcile::NAME, &resources, stop.clone()).await {
        return;
    }
    let flags: Vec<Arc<AtomicBool>> = (0..4).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let (sets, set_events) = runtime::reflect(
        Api::<ManagedSeedSet>::namespaced(client.clone(), GARDEN_NAMESPACE),
        watcher::Config::default(),
        flags[0].clone(),
    );
    let (managed_seeds, ms_events) = runtime::reflect(
        Api::<PartialObjectMeta<ManagedSeed>>::namespaced(client.clone(), GARDEN_NAMESPACE),
        watcher::Config::default(),
        flags[1].clone(),
    );
    let (_, shoot_events) = runtime::reflect(
        Api::<PartialObjectMeta<Shoot>>::all(client.clone()),
        watcher::Config::default(),
        flags[2].clone(),
    );
    let (_, seed_events) = runtime::reflect(
        Api::<PartialObjectMeta<Seed>>::all(client.clone()),
        watcher::Config::default(),
        flags[3].clone(),
    );
    let ctx = Arc::new(Context { common });
    let sync = runtime::report_when_synced(flags, ready, stop.clone());
    let (by_shoot, by_seed) = (managed_seeds.clone(), managed_seeds);
    let controller = Controller::for_stream(set_events.applied_objects(), sets)
        .with_config(kube::runtime::Config::default().concurrency(concurrency))
        .watches_stream(ms_events.touched_objects(), |ms: PartialObjectMeta<ManagedSeed>| set_of(&ms.metadata))
        .watches_stream(shoot_events.touched_objects(), move |shoot: PartialObjectMeta<Shoot>| {
            let hosting = shoot
                .labels()
                .keys()
                .filter_map(|k| k.strip_prefix(seed_labels::PREFIX))
                .filter_map(|seed| managed_seed_set_of_seed(&by_shoot, seed))
                .collect::<Vec<_>>();
            set_of(&shoot.metadata).into_iter().chain(hosting)
        })
        .watches_stream(seed_events.touched_objects(), move |seed: PartialObjectMeta<Seed>| {
            managed_seed_set_of_seed(&by_seed, &seed.name_any())
        })
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|r| {
            runtime::log_result(reconcile::NAME, r);
            future::ready(())
        });
    futures::join!(controller, sync);
}

/// The ManagedSeedSet controlling an object (in the object's namespace).
fn set_of(meta: &kube::api::ObjectMeta) -> Option<ObjectRef<ManagedSeedSet>> {
    let kind = ManagedSeedSet::kind(&());
    let owner = meta.owner_references.iter().flatten().find(|o| o.controller == Some(true) && o.kind == kind)?;
    Some(ObjectRef::new(&owner.name).within(meta.namespace.as_deref()?))
}

/// The set of the ManagedSeed named like `seed` (a Seed is named after its ManagedSeed).
fn managed_seed_set_of_seed(
    managed_seeds: &Store<PartialObjectMeta<ManagedSeed>>,
    seed: &str,
) -> Option<ObjectRef<ManagedSeedSet>> {
    let ms = managed_seeds.get(&ObjectRef::new(seed).within(GARDEN_NAMESPACE))?;
    set_of(&ms.metadata)
}
