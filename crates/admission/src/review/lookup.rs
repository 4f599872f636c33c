//! The related objects the rules need, looked up without an API round trip: the server backs
//! this with watch-fed caches ([`crate::server::caches`]); tests back it with plain vectors.

use api::core::{CloudProfile, Project, Seed, Shoot};
use kube::ResourceExt;
use std::sync::Arc;

/// Read access to the garden objects admission decisions depend on.
pub trait Lookup: Send + Sync {
    fn cloud_profile(&self, name: &str) -> Option<Arc<CloudProfile>>;
    fn seed(&self, name: &str) -> Option<Arc<Seed>>;
    fn shoot(&self, namespace: &str, name: &str) -> Option<Arc<Shoot>>;
    fn shoots(&self) -> Vec<Arc<Shoot>>;
    fn projects(&self) -> Vec<Arc<Project>>;
}

/// A [`Lookup`] over fixed lists (tests, benchmarks).
#[derive(Clone, Debug, Default)]
pub struct StaticLookup {
    pub cloud_profiles: Vec<Arc<CloudProfile>>,
    pub seeds: Vec<Arc<Seed>>,
    pub shoots: Vec<Arc<Shoot>>,
    pub projects: Vec<Arc<Project>>,
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
}
