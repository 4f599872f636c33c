//! The related objects the rules need, looked up without an API round trip: the server backs
//! this with watch-fed caches ([`crate::server::caches`]); tests back it with plain vectors.

use api::core::{
    CloudProfile, ControllerRegistration, ExposureClass, NamespacedCloudProfile, Project, Quota, SecretBinding, Seed,
    Shoot,
};
use api::security::CredentialsBinding;
use api::seedmanagement::ManagedSeed;
use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use std::sync::Arc;

/// Read access to the garden objects admission decisions depend on.
pub trait Lookup: Send + Sync {
    fn cloud_profile(&self, name: &str) -> Option<Arc<CloudProfile>>;
    fn namespaced_cloud_profile(&self, namespace: &str, name: &str) -> Option<Arc<NamespacedCloudProfile>>;
    fn seed(&self, name: &str) -> Option<Arc<Seed>>;
    fn shoot(&self, namespace: &str, name: &str) -> Option<Arc<Shoot>>;
    fn shoots(&self) -> Vec<Arc<Shoot>>;
    fn projects(&self) -> Vec<Arc<Project>>;
    fn secret_binding(&self, namespace: &str, name: &str) -> Option<Arc<SecretBinding>>;
    fn credentials_binding(&self, namespace: &str, name: &str) -> Option<Arc<CredentialsBinding>>;
    fn quota(&self, namespace: &str, name: &str) -> Option<Arc<Quota>>;
    fn exposure_class(&self, name: &str) -> Option<Arc<ExposureClass>>;
    /// Every ManagedSeed (a shoot registered as a seed must not be deleted under it).
    fn managed_seeds(&self) -> Vec<Arc<ManagedSeed>>;
    /// Every ControllerRegistration (the extension types a Shoot or Seed may name,
    /// [`crate::extensions`]).
    fn controller_registrations(&self) -> Vec<Arc<ControllerRegistration>>;
    /// The namespace `name` (its label `pod-security.kubernetes.io/enforce` sets the level
    /// Pods there are held to, [`crate::podsecurity`]).
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>>;
}

/// A [`Lookup`] over fixed lists (tests, benchmarks).
#[derive(Clone, Debug, Default)]
pub struct StaticLookup {
    pub cloud_profiles: Vec<Arc<CloudProfile>>,
    pub namespaced_cloud_profiles: Vec<Arc<NamespacedCloudProfile>>,
    pub seeds: Vec<Arc<Seed>>,
    pub shoots: Vec<Arc<Shoot>>,
    pub projects: Vec<Arc<Project>>,
    pub secret_bindings: Vec<Arc<SecretBinding>>,
    pub credentials_bindings: Vec<Arc<CredentialsBinding>>,
    pub quotas: Vec<Arc<Quota>>,
    pub exposure_classes: Vec<Arc<ExposureClass>>,
    pub managed_seeds: Vec<Arc<ManagedSeed>>,
    pub controller_registrations: Vec<Arc<ControllerRegistration>>,
    pub namespaces: Vec<Arc<Namespace>>,
}

/// The object named `namespace/name` in `list`.
fn namespaced<K: ResourceExt>(list: &[Arc<K>], namespace: &str, name: &str) -> Option<Arc<K>> {
    list.iter().find(|o| o.name_any() == name && o.namespace().as_deref() == Some(namespace)).cloned()
}

/// The cluster-scoped object named `name` in `list`.
fn cluster<K: ResourceExt>(list: &[Arc<K>], name: &str) -> Option<Arc<K>> {
    list.iter().find(|o| o.name_any() == name).cloned()
}

impl Lookup for StaticLookup {
    fn cloud_profile(&self, name: &str) -> Option<Arc<CloudProfile>> {
        cluster(&self.cloud_profiles, name)
    }

    fn namespaced_cloud_profile(&self, namespace: &str, name: &str) -> Option<Arc<NamespacedCloudProfile>> {
        namespaced(&self.namespaced_cloud_profiles, namespace, name)
    }

    fn seed(&self, name: &str) -> Option<Arc<Seed>> {
        cluster(&self.seeds, name)
    }

    fn shoot(&self, namespace: &str, name: &str) -> Option<Arc<Shoot>> {
        namespaced(&self.shoots, namespace, name)
    }

    fn shoots(&self) -> Vec<Arc<Shoot>> {
        self.shoots.clone()
    }

    fn projects(&self) -> Vec<Arc<Project>> {
        self.projects.clone()
    }

    fn secret_binding(&self, namespace: &str, name: &str) -> Option<Arc<SecretBinding>> {
        namespaced(&self.secret_bindings, namespace, name)
    }

    fn credentials_binding(&self, namespace: &str, name: &str) -> Option<Arc<CredentialsBinding>> {
        namespaced(&self.credentials_bindings, namespace, name)
    }

    fn quota(&self, namespace: &str, name: &str) -> Option<Arc<Quota>> {
        namespaced(&self.quotas, namespace, name)
    }

    fn exposure_class(&self, name: &str) -> Option<Arc<ExposureClass>> {
        cluster(&self.exposure_classes, name)
    }

    fn managed_seeds(&self) -> Vec<Arc<ManagedSeed>> {
        self.managed_seeds.clone()
    }

    fn controller_registrations(&self) -> Vec<Arc<ControllerRegistration>> {
        self.controller_registrations.clone()
    }

    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        cluster(&self.namespaces, name)
    }
}
