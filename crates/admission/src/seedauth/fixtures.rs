//! Example gardens for the seed authorizer's tests and benchmark: seeds with shoots, their
//! bindings, ManagedSeeds, ControllerInstallations, Bastions, BackupBuckets and BackupEntries.

use super::graph::StaticGraph;
use api::common::{LocalObjectReference, ObjectReference, SecretReference};
use api::core::{
    BackupBucket, BackupEntry, BackupEntryStatus, ControllerInstallation, Project, SecretBinding, Shoot, ShootStatus,
};
use api::operations::Bastion;
use api::security::CredentialsBinding;
use api::seedmanagement::{ManagedSeed, ShootReference};
use std::sync::Arc;

/// Shoot `namespace/name` with `spec.seedName` and `status.seedName`, bound by SecretBinding
/// `<name>-sb` (Secret `<name>-credentials` in `secrets-<namespace>`).
pub fn shoot(namespace: &str, name: &str, spec_seed: Option<&str>, status_seed: Option<&str>) -> Shoot {
    let mut s = Shoot::new(name, Default::default());
    s.metadata.namespace = Some(namespace.into());
    s.spec.seed_name = spec_seed.map(Into::into);
    s.spec.secret_binding_name = Some(format!("{name}-sb"));
    s.status = Some(ShootStatus { seed_name: status_seed.map(Into::into), ..Default::default() });
    s
}

pub fn secret_binding(namespace: &str, name: &str, secret_namespace: Option<&str>, secret: &str) -> SecretBinding {
    let mut b = SecretBinding::new(name, Default::default());
    b.metadata.namespace = Some(namespace.into());
    b.spec.secret_ref = SecretReference { name: secret.into(), namespace: secret_namespace.map(Into::into) };
    b
}

pub fn credentials_binding(namespace: &str, name: &str, secret: &str) -> CredentialsBinding {
    let mut b = CredentialsBinding::new(name, Default::default());
    b.metadata.namespace = Some(namespace.into());
    b.spec.credentials_ref = ObjectReference {
        kind: Some("Secret".into()),
        name: secret.into(),
        api_version: Some("v1".into()),
        namespace: None,
    };
    b
}

pub fn managed_seed(name: &str, shoot: &str) -> ManagedSeed {
    let mut m = ManagedSeed::new(name, Default::default());
    m.metadata.namespace = Some("garden".into());
    m.spec.shoot = Some(ShootReference { name: shoot.into() });
    m
}

pub fn controller_installation(name: &str, seed: &str) -> ControllerInstallation {
    let mut c = ControllerInstallation::new(name, Default::default());
    c.spec.seed_ref = Some(ObjectReference { name: seed.into(), ..Default::default() });
    c
}

pub fn bastion(namespace: &str, name: &str, shoot: &str) -> Bastion {
    let mut b = Bastion::new(name, Default::default());
    b.metadata.namespace = Some(namespace.into());
    b.spec.shoot_ref = LocalObjectReference { name: shoot.into() };
    b
}

/// The BackupBucket `name` of `seed`.
pub fn backup_bucket(name: &str, seed: &str) -> BackupBucket {
    let mut b = BackupBucket::new(name, Default::default());
    b.spec.seed_name = Some(seed.into());
    b
}

/// BackupEntry `namespace/name` of shoot `shoot`, with `spec.seedName` and `status.seedName`.
pub fn backup_entry(
    namespace: &str,
    name: &str,
    spec_seed: &str,
    status_seed: Option<&str>,
    shoot: &str,
) -> BackupEntry {
    let mut e = BackupEntry::new(name, Default::default());
    e.metadata.namespace = Some(namespace.into());
    e.spec.seed_name = Some(spec_seed.into());
    e.spec.shoot_ref = Some(ObjectReference { name: shoot.into(), ..Default::default() });
    e.status = Some(BackupEntryStatus { seed_name: status_seed.map(Into::into), ..Default::default() });
    e
}

pub fn project(name: &str, namespace: &str) -> Project {
    let mut p = Project::new(name, Default::default());
    p.spec.namespace = Some(namespace.into());
    p
}

/// `shoots` shoots spread over `seeds` seeds `seed-0`… in `projects` project namespaces
/// `garden-p0`…, each with its SecretBinding, plus one ControllerInstallation and one Bastion
/// per seed and one BackupBucket per seed, one BackupEntry per shoot (the benchmark's garden).
pub fn garden(seeds: usize, shoots: usize, projects: usize) -> StaticGraph {
    let mut g = StaticGraph::default();
    for p in 0..projects {
        g.projects.push(Arc::new(project(&format!("p{p}"), &format!("garden-p{p}"))));
    }
    for i in 0..shoots {
        let (seed, ns, name) = (format!("seed-{}", i % seeds), format!("garden-p{}", i % projects), format!("s{i}"));
        g.shoots.push(Arc::new(shoot(&ns, &name, Some(&seed), Some(&seed))));
        g.secret_bindings.push(Arc::new(secret_binding(
            &ns,
            &format!("{name}-sb"),
            None,
            &format!("{name}-credentials"),
        )));
        g.backup_entries.push(Arc::new(backup_entry(&ns, &format!("{name}--{i}"), &seed, Some(&seed), &name)));
    }
    for s in 0..seeds {
        g.controller_installations.push(Arc::new(controller_installation(&format!("ci-{s}"), &format!("seed-{s}"))));
        g.backup_buckets.push(Arc::new(backup_bucket(&format!("uid-{s}"), &format!("seed-{s}"))));
        g.bastions.push(Arc::new(bastion("garden-p0", &format!("b{s}"), &format!("s{s}"))));
    }
    g
}
