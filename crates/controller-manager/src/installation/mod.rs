//! The ControllerInstallation controller: for every Seed, one ControllerInstallation per
//! ControllerRegistration the seed needs (gardenlet installs what they name and reports on
//! them), none for the others. Watches Seeds (primary), Shoots (re-queue the seed they are on),
//! ControllerRegistrations (re-queue every seed) and ControllerInstallations (re-queue their
//! seed). See [`decide`] for what a seed needs and [`reconcile`] for the writes.

pub mod decide;
pub mod reconcile;

use crate::runtime::Common;
use ::runtime::runner::Stop;
use api::core::{ControllerInstallation, ControllerRegistration, Seed, Shoot};
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub struct Context {
    pub common: Common,
    pub seeds: Store<Seed>,
    pub shoots: Store<DeserializeGuard<Shoot>>,
    pub registrations: Store<ControllerRegistration>,
    pub installations: Store<ControllerInstallation>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("common", &self.common).finish_non_exhaustive()
    }
}

/// The seeds a shoot is on (two during a migration).
fn seeds_of(shoot: &DeserializeGuard<Shoot>) -> Vec<ObjectRef<Seed>> {
    let Ok(shoot) = &shoot.0 else { return vec![] };
    let spec = shoot.spec.seed_name.iter();
    let status = shoot.status.as_ref().and_then(|s| s.seed_name.as_ref()).into_iter();
    spec.chain(status).map(|s| ObjectRef::new(s)).collect()
}

/// The kinds the controller needs served before it starts.
type Served = (Seed, Shoot, ControllerRegistration, ControllerInstallation);

pub async fn run(common: Common, concurrency: u16, stop: Stop, ready: Arc<AtomicBool>) {
    let wiring = common.wiring(stop, ready).concurrency(concurrency);
    let Some(mut wiring) = wiring.when_served::<Served>().await else { return };
    let all = watcher::Config::default;
    let seeds = wiring.controller("seeds", wiring.all::<Seed>(), all());
    let (shoots, shoot_events) = wiring.cache("shoots", wiring.all::<DeserializeGuard<Shoot>>(), all());
    let (registrations, registration_events) =
        wiring.cache("controller registrations", wiring.all::<ControllerRegistration>(), all());
    let (installations, installation_events) =
        wiring.cache("controller installations", wiring.all::<ControllerInstallation>(), all());
    let ctx = Arc::new(Context { common, seeds: seeds.store(), shoots, registrations, installations });
    let every_seed = {
        let seeds = seeds.store();
        move |_: ControllerRegistration| {
            seeds.state().iter().map(|s| ObjectRef::from_obj(s.as_ref())).collect::<Vec<_>>()
        }
    };
    let controller = seeds
        .watches_stream(shoot_events.touched_objects(), |shoot: DeserializeGuard<Shoot>| seeds_of(&shoot))
        .watches_stream(registration_events.touched_objects(), every_seed)
        .watches_stream(installation_events.touched_objects(), |i: ControllerInstallation| {
            i.spec.seed_ref.map(|s| ObjectRef::<Seed>::new(&s.name))
        });
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, ctx).await;
}
