//! The ManagedSeedSet controller's wiring (GEP-13): ManagedSeedSets in the garden namespace
//! (primary); the ManagedSeeds and Shoots they control re-queue their set; a Seed re-queues the
//! set of the ManagedSeed of the same name; a Shoot scheduled onto such a seed (its
//! `name.seed.gardener.cloud/<seed>` label) re-queues that set too, so a scale-in blocked by
//! hosted shoots resumes when they leave. Every wait of the set ends with one of these events,
//! so nothing polls. See [`reconcile`], [`decide`] and [`build`].

pub mod build;
pub mod decide;
pub mod reconcile;

use crate::runtime::Common;
use ::runtime::runner::Stop;
use api::core::{Seed, Shoot};
use api::helpers::constants::GARDEN_NAMESPACE;
use api::helpers::seed_labels;
use api::seedmanagement::{ManagedSeed, ManagedSeedSet};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
}

pub async fn run(common: Common, concurrency: u16, stop: Stop, ready: Arc<AtomicBool>) {
    let client = common.client.clone();
    let wiring = common.wiring(stop, ready).concurrency(concurrency);
    let Some(mut wiring) = wiring.when_served::<(ManagedSeedSet, ManagedSeed, Shoot, Seed)>().await else { return };
    let all = watcher::Config::default;
    let sets = wiring.controller("managed seed sets", Api::namespaced(client.clone(), GARDEN_NAMESPACE), all());
    let (managed_seeds, ms_events) = wiring.cache(
        "managed seeds",
        Api::<PartialObjectMeta<ManagedSeed>>::namespaced(client, GARDEN_NAMESPACE),
        all(),
    );
    let shoots = wiring.watch("shoots", wiring.all::<PartialObjectMeta<Shoot>>(), all());
    let seeds = wiring.watch("seeds", wiring.all::<PartialObjectMeta<Seed>>(), all());
    let (by_shoot, by_seed) = (managed_seeds.clone(), managed_seeds);
    let controller = sets
        .watches_stream(ms_events.touched_objects(), |ms: PartialObjectMeta<ManagedSeed>| set_of(&ms.metadata))
        .watches_stream(shoots, move |shoot: PartialObjectMeta<Shoot>| {
            let hosting = shoot
                .labels()
                .keys()
                .filter_map(|k| k.strip_prefix(seed_labels::PREFIX))
                .filter_map(|seed| managed_seed_set_of_seed(&by_shoot, seed))
                .collect::<Vec<_>>();
            set_of(&shoot.metadata).into_iter().chain(hosting)
        })
        .watches_stream(seeds, move |seed: PartialObjectMeta<Seed>| {
            managed_seed_set_of_seed(&by_seed, &seed.name_any())
        });
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, Arc::new(Context { common })).await;
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
