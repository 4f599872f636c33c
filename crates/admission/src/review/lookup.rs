//! The related objects the rules need, looked up without an API round trip: the server backs
//! this with watch-fed caches ([`crate::server::caches`]); tests back it with plain vectors.

use api::core::{CloudProfile, Project, Quota, SecretBinding, Seed, Shoot};
use kube::ResourceExt;
use std::sync::Arc;

/// Read access to the garden objects admission decisions depend on.
pub trait Lookup: Send + Sync {
    fn cloud_profile(&self, name: &str) -> Option<Arc<CloudProfile>>;
    fn seed(&self, name: &str) -> Option<Arc<Seed>>;
    fn shoot(&self, namespace: &str, name: &str) -> Option<Arc<Shoot>>;
    fn shoots(&self) -> Vec<Arc<Shoot>>;
    fn projects(&self) -> Vec<Arc<Project>>;
    fn secret_binding(&self, namespace: &str, name: &str) -> Option<Arc<SecretBinding>>;
    fn quota(&self, namespace: &str, name: &str) -> Option<Arc<Quota>>;
}

/// A [`Lookup`] over fixed lists (tests, benchmarks).
#[derive(Clone, Debug, Default)]
pub struct StaticLookup {
    pub cloud_profiles: Vec<Arc<CloudProfile>>,
    pub seeds: Vec<Arc<Seed>>,
    pub shoots: Vec<Arc<Shoot>>,
    pub projects: Vec<Arc<Project>>,
    pub secret_bindings: Vec<Arc<SecretBinding>>,
    pub quotas: Vec<Arc<Quota>>,
}

impl Lookup for StaticLookup {
    fn cloud_profile(&self, name: &str) -> Option<Arc<CloudProfile>> {
        self.cloud_profiles.iter().find(|p| p.name_any() == name).cloned()
    }

    fn seed(&self, name: &str) -> Option<Arc<Seed>> {
        self.seeds.iter().find(|p| p.name_any() == name).cloned()
    }

    fn shoot(&self, namespace: &str, name: &str) -> Option<Arc<Shoot>> {
        self.shoots.iter().find(|s| s.name_any() == name && s.namespace().as_deref() == Some(namespace)).cloned()
    }

    fn shoots(&self) -> Vec<Arc<Shoot>> {
        self.shoots.clone()
    }

    fn projects(&self) -> Vec<Arc<Project>> {
        self.projects.clone()
    }

    fn secret_binding(&self, namespace: &str, name: &str) -> Option<Arc<SecretBinding>> {
        self.secret_bindings
            .iter()
            .find(|b| b.name_any() == name && b.namespace().as_deref() == Some(namespace))
            .cloned()
    }

    fn quota(&self, namespace: &str, name: &str) -> Option<Arc<Quota>> {
        self.quotas.iter().find(|q| q.name_any() == name && q.namespace().as_deref() == Some(namespace)).cloned()
    }
}
