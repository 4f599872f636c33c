//! The NamespacedCloudProfile controller: keeps `status.cloudProfileSpec` equal to the parent
//! CloudProfile merged with the namespaced additions ([`api::helpers::cloudprofile_merge`]).
//! Watches NamespacedCloudProfiles and CloudProfiles (both cached); a change of a CloudProfile
//! re-queues the NamespacedCloudProfiles whose parent it is. Writes only when the merged spec
//! or the observed generation changed.

pub mod reconcile;

use crate::runtime::{self, Common};
use ::runtime::runner::Stop;
use api::core::{CloudProfile, NamespacedCloudProfile};
use futures::{StreamExt, future};
use kube::Api;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub parents: Store<CloudProfile>,
}

pub async fn run(common: Common, concurrency: u16, stop: Stop, ready: Arc<AtomicBool>) {
    let client = common.client.clone();
    let resources = [
        kube::api::ApiResource::erase::<NamespacedCloudProfile>(&()),
        kube::api::ApiResource::erase::<CloudProfile>(&()),
    ];
    if !runtime::served(&client, reconcile::NAME, &resources, stop.clone()).await {
        return;
    }
    let flags: Vec<Arc<AtomicBool>> = (0..2).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let (profiles, profile_events) = runtime::reflect(
        Api::<NamespacedCloudProfile>::all(client.clone()),
        watcher::Config::default(),
        flags[0].clone(),
    );
    let (parents, parent_events) =
        runtime::reflect(Api::<CloudProfile>::all(client.clone()), watcher::Config::default(), flags[1].clone());
    let ctx = Arc::new(Context { common, parents });
    let store = profiles.clone();
    let sync = runtime::report_when_synced(flags, ready, stop.clone());
    let controller = Controller::for_stream(profile_events.applied_objects(), profiles)
        .with_config(kube::runtime::Config::default().concurrency(concurrency))
        .watches_stream(parent_events.touched_objects(), move |parent: CloudProfile| children_of(&store, &parent))
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|r| {
            runtime::log_result(reconcile::NAME, r);
            future::ready(())
        });
    futures::join!(controller, sync);
}

fn children_of(store: &Store<NamespacedCloudProfile>, parent: &CloudProfile) -> Vec<ObjectRef<NamespacedCloudProfile>> {
    let name = parent.metadata.name.as_deref().unwrap_or_default();
    store.state().iter().filter(|p| p.spec.parent.name == name).map(|p| ObjectRef::from_obj(p.as_ref())).collect()
}
