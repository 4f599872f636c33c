//! The read-only view of the garden the seed authorizer and SeedRestriction decide on: the
//! objects whose references relate other objects to a seed (Gardener keeps these as a graph of
//! vertices and edges; here the edges are followed on demand through the watch-fed stores, so
//! there is nothing to keep in step). The server backs it with its caches
//! ([`crate::server::caches`]); tests and benchmarks with [`StaticGraph`].

use api::core::{BackupBucket, BackupEntry, ControllerInstallation, Project, SecretBinding, Shoot};
use api::operations::Bastion;
use api::security::CredentialsBinding;
use api::seedmanagement::ManagedSeed;
use kube::ResourceExt;
use std::sync::Arc;

/// Read access to the objects that relate others to a seed.
pub trait SeedGraph: Send + Sync {
    fn shoot(&self, namespace: &str, name: &str) -> Option<Arc<Shoot>>;
    /// Whether some Shoot satisfies `predicate` (stops at the first).
    fn any_shoot(&self, predicate: &dyn Fn(&Shoot) -> bool) -> bool;
    fn secret_binding(&self, namespace: &str, name: &str) -> Option<Arc<SecretBinding>>;
    fn credentials_binding(&self, namespace: &str, name: &str) -> Option<Arc<CredentialsBinding>>;
    fn managed_seed(&self, namespace: &str, name: &str) -> Option<Arc<ManagedSeed>>;
    fn controller_installation(&self, name: &str) -> Option<Arc<ControllerInstallation>>;
    fn bastion(&self, namespace: &str, name: &str) -> Option<Arc<Bastion>>;
    fn project(&self, name: &str) -> Option<Arc<Project>>;
    fn backup_bucket(&self, name: &str) -> Option<Arc<BackupBucket>>;
    fn backup_entry(&self, namespace: &str, name: &str) -> Option<Arc<BackupEntry>>;
}

/// A graph without objects: every object is unrelated to every seed.
#[derive(Clone, Copy, Debug, Default)]
pub struct EmptyGraph;

impl SeedGraph for EmptyGraph {
    fn shoot(&self, _: &str, _: &str) -> Option<Arc<Shoot>> {
        None
    }
    fn any_shoot(&self, _: &dyn Fn(&Shoot) -> bool) -> bool {
        false
    }
    fn secret_binding(&self, _: &str, _: &str) -> Option<Arc<SecretBinding>> {
        None
    }
    fn credentials_binding(&self, _: &str, _: &str) -> Option<Arc<CredentialsBinding>> {
        None
    }
    fn managed_seed(&self, _: &str, _: &str) -> Option<Arc<ManagedSeed>> {
        None
    }
    fn controller_installation(&self, _: &str) -> Option<Arc<ControllerInstallation>> {
        None
    }
    fn bastion(&self, _: &str, _: &str) -> Option<Arc<Bastion>> {
        None
    }
    fn project(&self, _: &str) -> Option<Arc<Project>> {
        None
    }
    fn backup_bucket(&self, _: &str) -> Option<Arc<BackupBucket>> {
        None
    }
    fn backup_entry(&self, _: &str, _: &str) -> Option<Arc<BackupEntry>> {
        None
    }
}

/// A [`SeedGraph`] over fixed lists (tests, benchmarks).
#[derive(Clone, Debug, Default)]
pub struct StaticGraph {
    pub shoots: Vec<Arc<Shoot>>,
    pub secret_bindings: Vec<Arc<SecretBinding>>,
    pub credentials_bindings: Vec<Arc<CredentialsBinding>>,
    pub managed_seeds: Vec<Arc<ManagedSeed>>,
    pub controller_installations: Vec<Arc<ControllerInstallation>>,
    pub bastions: Vec<Arc<Bastion>>,
    pub projects: Vec<Arc<Project>>,
    pub backup_buckets: Vec<Arc<BackupBucket>>,
    pub backup_entries: Vec<Arc<BackupEntry>>,
}

fn find<K: ResourceExt>(list: &[Arc<K>], namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
    list.iter().find(|o| o.name_any() == name && o.namespace().as_deref() == namespace).cloned()
}

impl SeedGraph for StaticGraph {
    fn shoot(&self, namespace: &str, name: &str) -> Option<Arc<Shoot>> {
        find(&self.shoots, Some(namespace), name)
    }
    fn any_shoot(&self, predicate: &dyn Fn(&Shoot) -> bool) -> bool {
        self.shoots.iter().any(|s| predicate(s))
    }
    fn secret_binding(&self, namespace: &str, name: &str) -> Option<Arc<SecretBinding>> {
        find(&self.secret_bindings, Some(namespace), name)
    }
    fn credentials_binding(&self, namespace: &str, name: &str) -> Option<Arc<CredentialsBinding>> {
        find(&self.credentials_bindings, Some(namespace), name)
    }
    fn managed_seed(&self, namespace: &str, name: &str) -> Option<Arc<ManagedSeed>> {
        find(&self.managed_seeds, Some(namespace), name)
    }
    fn controller_installation(&self, name: &str) -> Option<Arc<ControllerInstallation>> {
        find(&self.controller_installations, None, name)
    }
    fn bastion(&self, namespace: &str, name: &str) -> Option<Arc<Bastion>> {
        find(&self.bastions, Some(namespace), name)
    }
    fn project(&self, name: &str) -> Option<Arc<Project>> {
        find(&self.projects, None, name)
    }
    fn backup_bucket(&self, name: &str) -> Option<Arc<BackupBucket>> {
        find(&self.backup_buckets, None, name)
    }
    fn backup_entry(&self, namespace: &str, name: &str) -> Option<Arc<BackupEntry>> {
        find(&self.backup_entries, Some(namespace), name)
    }
}
