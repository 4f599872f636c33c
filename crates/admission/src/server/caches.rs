//! Watch-fed caches of the objects the rules look up (CloudProfiles, NamespacedCloudProfiles,
//! Seeds, Shoots, Projects, SecretBindings, CredentialsBindings, Quotas, ExposureClasses,
//! ManagedSeeds, ControllerRegistrations, and Namespaces for their pod security level; for the
//! seed authorizer also ControllerInstallations, Bastions, BackupBuckets and BackupEntries), so that answering a request
//! needs no API round trip. They back both the rules' [`Lookup`] and the seed authorizer's
//! [`SeedGraph`]; Secrets are not watched (the authorizer relates them by the bindings'
//! references).

use crate::review::Lookup;
use crate::seedauth::SeedGraph;
use api::core::{
    BackupBucket, BackupEntry, CloudProfile, ControllerInstallation, ControllerRegistration, ExposureClass,
    NamespacedCloudProfile, Project, Quota, SecretBinding, Seed, Shoot,
};
use api::operations::Bastion;
use api::security::CredentialsBinding;
use api::seedmanagement::ManagedSeed;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;

/// The caches; cheap to clone.
#[derive(Clone)]
pub struct Caches {
    profiles: Store<CloudProfile>,
    namespaced_profiles: Store<NamespacedCloudProfile>,
    seeds: Store<Seed>,
    shoots: Store<Shoot>,
    projects: Store<Project>,
    bindings: Store<SecretBinding>,
    credentials_bindings: Store<CredentialsBinding>,
    quotas: Store<Quota>,
    exposure_classes: Store<ExposureClass>,
    managed_seeds: Store<ManagedSeed>,
    controller_registrations: Store<ControllerRegistration>,
    namespaces: Store<Namespace>,
    controller_installations: Store<ControllerInstallation>,
    bastions: Store<Bastion>,
    backup_buckets: Store<BackupBucket>,
    backup_entries: Store<BackupEntry>,
}

impl Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches").finish_non_exhaustive()
    }
}

fn cache<K>(api: Api<K>, stop: impl Future<Output = ()> + Send + 'static) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Send + Sync,
{
    let (store, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, watcher::Config::default()))
        .default_backoff()
        .for_each(|event| async move {
            if let Err(e) = event {
                tracing::warn!(error = %e, kind = %K::kind(&Default::default()), "admission cache watch failed; retrying");
            }
        });
    tokio::spawn(async move {
        tokio::select! {
            () = stream => {}
            () = stop => {}
        }
    });
    store
}

impl Caches {
    /// Starts the watches; they end when `stop` resolves.
    pub fn start(client: &Client, stop: impl Future<Output = ()> + Send + Clone + 'static) -> Self {
        Self {
            profiles: cache(Api::all(client.clone()), stop.clone()),
            namespaced_profiles: cache(Api::all(client.clone()), stop.clone()),
            seeds: cache(Api::all(client.clone()), stop.clone()),
            shoots: cache(Api::all(client.clone()), stop.clone()),
            projects: cache(Api::all(client.clone()), stop.clone()),
            bindings: cache(Api::all(client.clone()), stop.clone()),
            credentials_bindings: cache(Api::all(client.clone()), stop.clone()),
            quotas: cache(Api::all(client.clone()), stop.clone()),
            exposure_classes: cache(Api::all(client.clone()), stop.clone()),
            managed_seeds: cache(Api::all(client.clone()), stop.clone()),
            controller_registrations: cache(Api::all(client.clone()), stop.clone()),
            namespaces: cache(Api::all(client.clone()), stop.clone()),
            controller_installations: cache(Api::all(client.clone()), stop.clone()),
            bastions: cache(Api::all(client.clone()), stop.clone()),
            backup_buckets: cache(Api::all(client.clone()), stop.clone()),
            backup_entries: cache(Api::all(client.clone()), stop),
        }
    }

    /// Resolves once every cache has listed its objects.
    pub async fn synced(&self) {
        let _ = futures::join!(
            self.profiles.wait_until_ready(),
            self.namespaced_profiles.wait_until_ready(),
            self.seeds.wait_until_ready(),
            self.shoots.wait_until_ready(),
            self.projects.wait_until_ready(),
            self.bindings.wait_until_ready(),
            self.credentials_bindings.wait_until_ready(),
            self.quotas.wait_until_ready(),
            self.exposure_classes.wait_until_ready(),
            self.managed_seeds.wait_until_ready(),
            self.controller_registrations.wait_until_ready(),
            self.namespaces.wait_until_ready(),
            self.controller_installations.wait_until_ready(),
            self.bastions.wait_until_ready(),
            self.backup_buckets.wait_until_ready(),
            self.backup_entries.wait_until_ready()
        );
    }
}

impl Lookup for Caches {
    fn cloud_profile(&self, name: &str) -> Option<Arc<CloudProfile>> {
        self.profiles.get(&ObjectRef::new(name))
    }

    fn namespaced_cloud_profile(&self, namespace: &str, name: &str) -> Option<Arc<NamespacedCloudProfile>> {
        self.namespaced_profiles.get(&ObjectRef::new(name).within(namespace))
    }

    fn seed(&self, name: &str) -> Option<Arc<Seed>> {
        self.seeds.get(&ObjectRef::new(name))
    }

    fn shoot(&self, namespace: &str, name: &str) -> Option<Arc<Shoot>> {
        self.shoots.get(&ObjectRef::new(name).within(namespace))
    }

    fn shoots(&self) -> Vec<Arc<Shoot>> {
        self.shoots.state()
    }

    fn projects(&self) -> Vec<Arc<Project>> {
        self.projects.state()
    }

    fn secret_binding(&self, namespace: &str, name: &str) -> Option<Arc<SecretBinding>> {
        self.bindings.get(&ObjectRef::new(name).within(namespace))
    }

    fn credentials_binding(&self, namespace: &str, name: &str) -> Option<Arc<CredentialsBinding>> {
        self.credentials_bindings.get(&ObjectRef::new(name).within(namespace))
    }

    fn quota(&self, namespace: &str, name: &str) -> Option<Arc<Quota>> {
        self.quotas.get(&ObjectRef::new(name).within(namespace))
    }

    fn exposure_class(&self, name: &str) -> Option<Arc<ExposureClass>> {
        self.exposure_classes.get(&ObjectRef::new(name))
    }

    fn managed_seeds(&self) -> Vec<Arc<ManagedSeed>> {
        self.managed_seeds.state()
    }

    fn controller_registrations(&self) -> Vec<Arc<ControllerRegistration>> {
        self.controller_registrations.state()
    }

    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.namespaces.get(&ObjectRef::new(name))
    }
}

impl SeedGraph for Caches {
    fn shoot(&self, namespace: &str, name: &str) -> Option<Arc<Shoot>> {
        self.shoots.get(&ObjectRef::new(name).within(namespace))
    }

    fn any_shoot(&self, predicate: &dyn Fn(&Shoot) -> bool) -> bool {
        self.shoots.find(predicate).is_some()
    }

    fn secret_binding(&self, namespace: &str, name: &str) -> Option<Arc<SecretBinding>> {
        self.bindings.get(&ObjectRef::new(name).within(namespace))
    }

    fn credentials_binding(&self, namespace: &str, name: &str) -> Option<Arc<CredentialsBinding>> {
        self.credentials_bindings.get(&ObjectRef::new(name).within(namespace))
    }

    fn managed_seed(&self, namespace: &str, name: &str) -> Option<Arc<ManagedSeed>> {
        self.managed_seeds.get(&ObjectRef::new(name).within(namespace))
    }

    fn controller_installation(&self, name: &str) -> Option<Arc<ControllerInstallation>> {
        self.controller_installations.get(&ObjectRef::new(name))
    }

    fn bastion(&self, namespace: &str, name: &str) -> Option<Arc<Bastion>> {
        self.bastions.get(&ObjectRef::new(name).within(namespace))
    }

    fn project(&self, name: &str) -> Option<Arc<Project>> {
        self.projects.get(&ObjectRef::new(name))
    }

    fn backup_bucket(&self, name: &str) -> Option<Arc<BackupBucket>> {
        self.backup_buckets.get(&ObjectRef::new(name))
    }

    fn backup_entry(&self, namespace: &str, name: &str) -> Option<Arc<BackupEntry>> {
        self.backup_entries.get(&ObjectRef::new(name).within(namespace))
    }
}
