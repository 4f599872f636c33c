//! Watch-fed caches shared by the shoot controller, its operations and the care controller:
//! the garden objects every operation reads (ControllerRegistrations, CloudProfiles, this
//! Seed), and this seed's Shoots, which the shoot controller's watch fills and the care
//! controller reads (one copy in memory).

use api::core::{Seed, Shoot};
use futures::StreamExt;
use kube::{Api, ResourceExt};
use std::sync::Arc;

/// Watch-fed caches of the garden objects every shoot operation needs (ControllerRegistrations,
/// CloudProfiles, this Seed), and the cache of this
/// seed's Shoots that the shoot controller's watch fills and the care controller reads.
#[derive(Clone)]
pub struct SharedCaches {
    garden: Arc<std::sync::OnceLock<GardenCaches>>,
    shoots: kube::runtime::reflector::Store<Shoot>,
    /// Taken by the one watch that fills `shoots`.
    shoots_writer: Arc<std::sync::Mutex<Option<kube::runtime::reflector::store::Writer<Shoot>>>>,
}

impl Default for SharedCaches {
    fn default() -> Self {
        let (shoots, writer) = kube::runtime::reflector::store();
        Self { garden: Arc::default(), shoots, shoots_writer: Arc::new(std::sync::Mutex::new(Some(writer))) }
    }
}

impl std::fmt::Debug for SharedCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCaches")
            .field("started", &self.garden.get().is_some())
            .field("shoots", &self.shoots.len())
            .finish()
    }
}

struct GardenCaches {
    registrations: kube::runtime::reflector::Store<api::core::ControllerRegistration>,
    seed: kube::runtime::reflector::Store<Seed>,
    profiles: kube::runtime::reflector::Store<api::core::CloudProfile>,
}

impl SharedCaches {
    /// Starts the watches (ControllerRegistrations; CloudProfiles; this seed's Seed only) and
    /// fills the caches once all have listed. Runs until `stop` resolves.
    pub(crate) async fn run(&self, garden: kube::Client, seed_name: &str, stop: impl std::future::Future<Output = ()>) {
        use kube::runtime::{WatchStreamExt, reflector, watcher};
        let (registrations, r_writer) = reflector::store();
        let (seed, s_writer) = reflector::store();
        let (profiles, p_writer) = reflector::store();
        let r_watch = reflector::reflector(r_writer, watcher(Api::all(garden.clone()), watcher::Config::default()))
            .default_backoff()
            .for_each(|_| futures::future::ready(()));
        let p_watch = reflector::reflector(
            p_writer,
            watcher(Api::<api::core::CloudProfile>::all(garden.clone()), watcher::Config::default())
                .modify(|p| p.metadata.managed_fields = None),
        )
        .default_backoff()
        .for_each(|_| futures::future::ready(()));
        let by_name = watcher::Config::default().fields(&format!("metadata.name={seed_name}"));
        let s_watch = reflector::reflector(s_writer, watcher(Api::<Seed>::all(garden), by_name))
            .default_backoff()
            .for_each(|_| futures::future::ready(()));
        let publish = async {
            let (r, s, p) =
                futures::join!(registrations.wait_until_ready(), seed.wait_until_ready(), profiles.wait_until_ready());
            if r.is_ok() && s.is_ok() && p.is_ok() {
                let caches = GardenCaches {
                    registrations: registrations.clone(),
                    seed: seed.clone(),
                    profiles: profiles.clone(),
                };
                let _ = self.garden.set(caches);
            }
            std::future::pending::<()>().await
        };
        tokio::select! {
            () = r_watch => {}
            () = s_watch => {}
            () = p_watch => {}
            () = publish => {}
            () = stop => {}
        }
    }

    /// The shoot's CloudProfile from the cache (see `OperationContext::cloud_profile`).
    pub(crate) fn cloud_profile(&self, shoot: &Shoot) -> Option<Option<Arc<api::core::CloudProfile>>> {
        use api::helpers::cloudprofile_ref::{ProfileRef, profile_ref};
        let caches = self.garden.get()?;
        match profile_ref(shoot) {
            Ok(ProfileRef::Cluster(name)) => Some(caches.profiles.get(&kube::runtime::reflector::ObjectRef::new(name))),
            _ => None,
        }
    }

    /// Whether the watches have listed and operations read from the caches.
    pub fn started(&self) -> bool {
        self.garden.get().is_some()
    }

    pub(crate) fn registrations(&self) -> Option<Vec<api::core::ControllerRegistration>> {
        self.garden.get().map(|c| c.registrations.state().iter().map(|r| r.as_ref().clone()).collect())
    }

    pub(crate) fn seed(&self, name: &str) -> Option<Option<Seed>> {
        self.garden.get().map(|c| c.seed.state().into_iter().find(|s| s.name_any() == name).map(|s| s.as_ref().clone()))
    }

    /// The Shoots of this seed (those labelled for it, see [`api::helpers::seed_labels`]), as
    /// the shoot controller's watch sees them. Empty, and not ready, until that watch has
    /// listed; a care controller without a shoot controller in its process waits for good.
    pub fn shoots(&self) -> kube::runtime::reflector::Store<Shoot> {
        self.shoots.clone()
    }

    /// The writer of [`Self::shoots`], once: the shoot controller's watch fills it.
    pub(crate) fn take_shoots_writer(&self) -> Option<kube::runtime::reflector::store::Writer<Shoot>> {
        self.shoots_writer.lock().ok()?.take()
    }
}
