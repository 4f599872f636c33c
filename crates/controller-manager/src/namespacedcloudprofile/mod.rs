//! The NamespacedCloudProfile controller: keeps `status.cloudProfileSpec` equal to the parent
//! CloudProfile merged with the namespaced additions ([`api::helpers::cloudprofile_merge`]).
//! Watches NamespacedCloudProfiles and CloudProfiles (both cached); a change of a CloudProfile
//! re-queues the NamespacedCloudProfiles whose parent it is. Writes only when the merged spec
//! or the observed generation changed.

pub mod reconcile;

use crate::runtime::Common;
use ::runtime::runner::Stop;
use api::core::{CloudProfile, NamespacedCloudProfile};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
    pub parents: Store<CloudProfile>,
}

pub async fn run(common: Common, concurrency: u16, stop: Stop, ready: Arc<AtomicBool>) {
    let wiring = common.wiring(stop, ready).concurrency(concurrency);
    let Some(mut wiring) = wiring.when_served::<(NamespacedCloudProfile, CloudProfile)>().await else { return };
    let profiles = wiring.controller(
        "namespaced cloud profiles",
        wiring.all::<NamespacedCloudProfile>(),
        watcher::Config::default(),
    );
    let (parents, parent_events) =
        wiring.cache("cloud profiles", wiring.all::<CloudProfile>(), watcher::Config::default());
    let store = profiles.store();
    let controller = profiles
        .watches_stream(parent_events.touched_objects(), move |parent: CloudProfile| children_of(&store, &parent));
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, Arc::new(Context { common, parents })).await;
}

fn children_of(store: &Store<NamespacedCloudProfile>, parent: &CloudProfile) -> Vec<ObjectRef<NamespacedCloudProfile>> {
    let name = parent.metadata.name.as_deref().unwrap_or_default();
    store.state().iter().filter(|p| p.spec.parent.name == name).map(|p| ObjectRef::from_obj(p.as_ref())).collect()
}
