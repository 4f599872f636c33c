//! The seed authorizer's decision per request over filled stores: 500 shoots over 5 seeds in
//! 20 project namespaces, each with its SecretBinding, plus ControllerInstallations and
//! Bastions, held in kube-runtime reflector stores as the server's caches hold them (lookups by
//! name, scans with `Store::find`). Requests of every kind the authorizer resolves differently
//! (a ShootState by its shoot, credentials through every shoot's binding, the audit policy
//! through every shoot, a Lease by name), half by the owning seed and half by another; prints
//! the median and p99 per kind and overall, and the stores' size: as serialized JSON, and the
//! heap they hold (a counting allocator: live bytes after filling them, less before).
//!
//! `cargo bench -p admission --bench seed_authorizer [-- <requests>]`
//!
//! Under `cargo test`/`nextest` it is a smoke test of 1,000 requests.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code: a panic is the failure report

#[path = "common/args.rs"]
#[allow(dead_code)] // `value` is for the latency bench's options
mod args;

use admission::seedauth::{Attributes, Decision, SeedGraph, decide, fixtures};
use api::core::{BackupBucket, BackupEntry, ControllerInstallation, Project, SecretBinding, Shoot};
use api::helpers::seed_identity;
use api::operations::Bastion;
use api::security::CredentialsBinding;
use api::seedmanagement::ManagedSeed;
use args::Args;
use cap::Cap;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use std::alloc::System;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The system allocator, counting the bytes currently allocated (no limit).
#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const SEEDS: usize = 5;
const SHOOTS: usize = 500;
const PROJECTS: usize = 20;

/// The stores, filled as a watch fills them.
struct Stores {
    shoots: Store<Shoot>,
    bindings: Store<SecretBinding>,
    credentials_bindings: Store<CredentialsBinding>,
    managed_seeds: Store<ManagedSeed>,
    installations: Store<ControllerInstallation>,
    bastions: Store<Bastion>,
    projects: Store<Project>,
    backup_buckets: Store<BackupBucket>,
    backup_entries: Store<BackupEntry>,
    /// The objects' size as JSON.
    bytes: usize,
}

fn filled<K>(objects: &[Arc<K>], bytes: &mut usize) -> Store<K>
where
    K: kube::Resource + Clone + serde::Serialize + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (store, mut writer) = reflector::store();
    for o in objects {
        *bytes += serde_json::to_vec(o.as_ref()).unwrap().len();
        writer.apply_watcher_event(&watcher::Event::Apply(o.as_ref().clone()));
    }
    store
}

impl Stores {
    fn new() -> Self {
        let g = fixtures::garden(SEEDS, SHOOTS, PROJECTS);
        let mut bytes = 0;
        Self {
            shoots: filled(&g.shoots, &mut bytes),
            bindings: filled(&g.secret_bindings, &mut bytes),
            credentials_bindings: filled(&g.credentials_bindings, &mut bytes),
            managed_seeds: filled(&g.managed_seeds, &mut bytes),
            installations: filled(&g.controller_installations, &mut bytes),
            bastions: filled(&g.bastions, &mut bytes),
            projects: filled(&g.projects, &mut bytes),
            backup_buckets: filled(&g.backup_buckets, &mut bytes),
            backup_entries: filled(&g.backup_entries, &mut bytes),
            bytes,
        }
    }
}

/// As `admission::server::caches::Caches` answers.
impl SeedGraph for Stores {
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
        self.installations.get(&ObjectRef::new(name))
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

/// Request `i` of `kind`: by the shoot's seed when `i` is even, else by the next seed; and
/// whether it must be allowed.
fn request(kind: &str, i: usize) -> (Attributes, bool) {
    let shoot = i % SHOOTS;
    let owner = shoot % SEEDS;
    let asker = if i.is_multiple_of(2) { owner } else { (owner + 1) % SEEDS };
    let ns = format!("garden-p{}", shoot % PROJECTS);
    let (group, resource, verb, namespace, name) = match kind {
        "shootstate" => ("core.gardener.cloud", "shootstates", "get", ns, format!("s{shoot}")),
        "shoot-patch" => ("core.gardener.cloud", "shoots", "patch", ns, format!("s{shoot}")),
        "credentials" => ("", "secrets", "get", ns, format!("s{shoot}-credentials")),
        // No shoot names this audit policy: a scan of every shoot, never allowed.
        "audit-policy" => ("", "configmaps", "get", ns, format!("policy-{shoot}")),
        _ => ("coordination.k8s.io", "leases", "patch", "gardener-system-seed-lease".into(), format!("seed-{owner}")),
    };
    let attrs = Attributes {
        user: seed_identity::user(&format!("seed-{asker}")),
        groups: vec![seed_identity::GROUP.into(), "system:authenticated".into()],
        verb: verb.into(),
        group: group.into(),
        resource: resource.into(),
        namespace,
        name,
        ..Default::default()
    };
    (attrs, asker == owner && kind != "audit-policy")
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

fn main() {
    let Some(args) = Args::parse() else { return };
    let n: usize = args.size(&[], 100_000, 1_000);
    let before = ALLOCATOR.allocated();
    let stores = Stores::new();
    let heap = ALLOCATOR.allocated().saturating_sub(before);
    println!(
        "heap held by the stores: {} KiB ({} bytes per shoot with its binding and its share of the rest)",
        heap / 1024,
        heap / SHOOTS
    );
    println!(
        "stores: {SHOOTS} shoots over {SEEDS} seeds, {} SecretBindings, {} objects in all, {} bytes as JSON ({} per shoot with its binding)",
        stores.bindings.len(),
        stores.shoots.len()
            + stores.bindings.len()
            + stores.installations.len()
            + stores.bastions.len()
            + stores.projects.len(),
        stores.bytes,
        stores.bytes / SHOOTS
    );
    let kinds = ["shootstate", "shoot-patch", "credentials", "audit-policy", "lease"];
    let mut all = Vec::with_capacity(n);
    for kind in kinds {
        let per_kind = n / kinds.len();
        let requests: Vec<_> = (0..per_kind).map(|i| request(kind, i)).collect();
        let mut took = Vec::with_capacity(per_kind);
        for (attrs, expected) in &requests {
            let start = Instant::now();
            let decision = decide(&stores, attrs);
            took.push(start.elapsed());
            assert_eq!(decision == Decision::Allow, *expected, "{kind}: {attrs:?} -> {decision:?}");
        }
        took.sort();
        println!(
            "{kind:>13}: {per_kind} decisions, median {:?}, p99 {:?}, max {:?}",
            quantile(&took, 0.5),
            quantile(&took, 0.99),
            took[took.len() - 1]
        );
        all.extend(took);
    }
    all.sort();
    println!(
        "{:>13}: {} decisions, median {:?}, p99 {:?}",
        "all",
        all.len(),
        quantile(&all, 0.5),
        quantile(&all, 0.99)
    );
}
