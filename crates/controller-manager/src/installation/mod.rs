//! The ControllerInstallation controller: for every Seed, one ControllerInstallation per
//! ControllerRegistration the seed needs (gardenlet installs what they name and reports on
//! them), none for the others. Watches Seeds (primary), Shoots (re-queue the seed they are on),
//! ControllerRegistrations (re-queue every seed) and ControllerInstallations (re-queue their
//! seed). See [`decide`] for what a seed needs and [`reconcile`] for the writes.

pub mod decide;
pub mod reconcile;

use crate::runtime::{self, Common};
use ::runtime::runner::Stop;
use api::core::{ControllerInstallation, ControllerRegistration, Seed, Shoot};
use futures::{StreamExt, future};
use kube::Api;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
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

pub async fn run(common: Common, concurrency: u16, stop: Stop, ready: Arc<AtomicBool>) {
    let client = common.client.clone();
    let resources = [
        kube::api::ApiResource::erase::<Seed>(&()),
        kube::api::ApiResource::erase::<Shoot>(&()),
        kube::api::ApiResource::erase::<ControllerRegistration>(&()),
        kube::api::ApiResource::erase::<ControllerInstallation>(&()),
    ];
    if !runtime::served(&client, reconcile::NAME, &resources, stop.clone()).await {
        return;
    }
    let flags: Vec<Arc<AtomicBool>> = (0..4).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let all = watcher::Config::default;
    let (seeds, seed_events) = runtime::reflect(Api::<Seed>::all(client.clone()), all(), flags[0].clone());
    let (shoots, shoot_events) =
        runtime::reflect(Api::<DeserializeGuard<Shoot>>::all(client.clone()), all(), flags[1].clone());
    let (registrations, registration_events) =
        runtime::reflect(Api::<ControllerRegistration>::all(client.clone()), all(), flags[2].clone());
    let (installations, installation_events) =
        runtime::reflect(Api::<ControllerInstallation>::all(client.clone()), all(), flags[3].clone());
    let ctx = Arc::new(Context { common, seeds: seeds.clone(), shoots, registrations, installations });
    let every_seed = {
        let seeds = seeds.clone();
        move |_: ControllerRegistration| {
            seeds.state().iter().map(|s| ObjectRef::from_obj(s.as_ref())).collect::<Vec<_>>()
        }
    };
    let sync = runtime::report_when_synced(flags, ready, stop.clone());
    let controller = Controller::for_stream(seed_events.applied_objects(), seeds)
        .with_config(kube::runtime::Config::default().concurrency(concurrency))
        .watches_stream(shoot_events.touched_objects(), |shoot: DeserializeGuard<Shoot>| seeds_of(&shoot))
        .watches_stream(registration_events.touched_objects(), every_seed)
        .watches_stream(installation_events.touched_objects(), |i: ControllerInstallation| {
            i.spec.seed_ref.map(|s| ObjectRef::<Seed>::new(&s.name))
        })
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|r| {
            runtime::log_result(reconcile::NAME, r);
            future::ready(())
        });
    futures::join!(controller, sync);
}
