//! Control-plane migration between two seeds, each its own real kube-apiserver (plus
//! kube-controller-manager) with its own gardenlet, its own SDK extension controllers (test
//! actuators) and its own workload simulator; the garden is the first seed's cluster. The
//! shoots' etcd and kube-apiserver run as stand-in processes (see `support/`), so the marker
//! written through the shoot's API before the migration is real etcd data, carried by the
//! final snapshot and `etcdctl snapshot restore`. Backup entries of both seeds are directories
//! under one shared root, as an object store would be shared.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::{LastOperationState, LastOperationType};
use api::core::{Shoot, ShootState};
use api::extensions as ext;
use gardenlet::config::GardenletConfig;
use gardenlet::seed::SeedController;
use gardenlet::shoot::controller::ShootController;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::actuators::{TestActuator, spawn_controller};
use support::simulator::Simulator;

const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: mover\n  namespace: garden-dev\n  labels:\n    name.seed.gardener.cloud/seed-a: \"true\"\nspec:\n  seedName: seed-a\n  region: local\n  provider:\n    type: local\n    workers:\n    - name: pool\n      minimum: 1\n      maximum: 2\n      machine:\n        type: local\n        image:\n          name: local\n          version: 1.0.0\n  kubernetes:\n    version: 1.20.2\n  networking:\n    type: local-net\n    pods: 10.96.0.0/11\n    services: 10.112.0.0/13\n    nodes: 10.250.0.0/16\n  extensions:\n  - type: local-ext\n";
const NS: &str = "shoot--dev--mover";

fn config_yaml(seed: &str) -> String {
    format!(
        "seed:\n  name: {seed}\n  capacityShoots: 10\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n    backup:\n      provider: local\n      region: local\n      secretRef:\n        name: backup\n        namespace: garden\nkubeApiserverServiceType: LoadBalancer\ncontrollers:\n  shootSyncPeriodSeconds: 3600\n"
    )
}

fn config(seed: &str) -> Arc<GardenletConfig> {
    Arc::new(serde_yaml::from_str(&config_yaml(seed)).unwrap())
}

/// One seed: its cluster, extension controllers, simulator, and (restartable) gardenlet.
struct SeedSide {
    env: testenv::TestEnv,
    /// The admin of this seed's cluster (the test's own reads and writes, the stand-ins).
    client: kube::Client,
    /// gardenlet in the garden and in its seed: the ServiceAccounts of its chart's releases.
    garden_sa: kube::Client,
    seed_sa: kube::Client,
    config: Arc<GardenletConfig>,
    worker: TestActuator,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    gardenlet: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for SeedSide {
    fn drop(&mut self) {
        for t in self.tasks.iter().chain(self.gardenlet.iter()) {
            t.abort();
        }
    }
}

impl SeedSide {
    /// `garden`: the garden's control plane when it is another cluster (else this one is).
    /// gardenlet's chart is installed into this cluster (its seed side) and, for another garden,
    /// into the garden as well (namespace `garden-<seed>`), and gardenlet acts as those
    /// ServiceAccounts.
    async fn start(name: &str, garden: Option<&testenv::TestEnv>, backup_root: &std::path::Path) -> Self {
        let env = testenv::TestEnv::start_with(testenv::Options {
            crds: api::crds::all(),
            ..support::simulator::seed_options()
        })
        .await
        .unwrap();
        let client = env.client().await.unwrap();
        let config = config(name);
        let yaml = config_yaml(name);
        let seed_sa = support::chart::gardenlet_client(&env, &yaml).await;
        let garden_sa = match garden {
            None => seed_sa.clone(),
            Some(g) => support::chart::gardenlet_client_in(g, &yaml, &format!("garden-{name}"), false).await,
        };
        let seed =
            SeedController::new(garden_sa.clone(), config.seed.clone(), Duration::from_secs(30), Default::default());
        seed.register().await.unwrap();
        seed.sync_status().await.unwrap();
        let worker = TestActuator::new();
        let c = &client;
        let tasks = vec![
            spawn_controller::<ext::Infrastructure>(c.clone(), &["local"], TestActuator::new()),
            spawn_controller::<ext::DNSRecord>(c.clone(), &["local"], TestActuator::new()),
            spawn_controller::<ext::ControlPlane>(c.clone(), &["local"], TestActuator::new()),
            spawn_controller::<ext::OperatingSystemConfig>(c.clone(), &["local"], TestActuator::new()),
            spawn_controller::<ext::Network>(c.clone(), &["local-net"], TestActuator::new()),
            spawn_controller::<ext::Worker>(c.clone(), &["local"], worker.handle()),
            spawn_controller::<ext::Extension>(c.clone(), &["local-ext"], TestActuator::new()),
            spawn_controller::<ext::BackupEntry>(
                c.clone(),
                &["local"],
                TestActuator::new().with_backup_root(backup_root),
            ),
            Simulator::new().spawn(c.clone()),
        ];
        Self { env, client, garden_sa, seed_sa, config, worker, tasks, gardenlet: None }
    }

    /// Starts (or restarts) this seed's gardenlet: the shoot controller and the ShootState sync.
    fn start_gardenlet(&mut self) {
        if let Some(old) = self.gardenlet.take() {
            old.abort();
        }
        let garden = &self.garden_sa;
        let controller = ShootController {
            garden: garden.clone(),
            seed: self.seed_sa.clone(),
            config: self.config.clone(),
            wait_timeout: Duration::from_secs(60),
            backoff: gardenlet::shoot::controller::default_backoff(),
            metrics: None,
            caches: Default::default(),
        };
        let sync = gardenlet::shootstate_sync::run_all(
            self.seed_sa.clone(),
            garden.clone(),
            gardenlet::shootstate_sync::SAFE_SIZE_BYTES,
            self.config.seed.name.clone(),
        );
        let entries = gardenlet::backupentry::run(
            gardenlet::backupentry::Context {
                seed_name: self.config.seed.name.clone(),
                garden: garden.clone(),
                seed: self.seed_sa.clone(),
                grace: Duration::ZERO,
            },
            2,
            std::future::pending(),
            Default::default(),
        );
        self.gardenlet = Some(tokio::spawn(async move {
            tokio::join!(controller.run(std::future::pending()), sync, entries);
        }));
    }

    fn stop_gardenlet(&mut self) {
        if let Some(g) = self.gardenlet.take() {
            g.abort();
        }
    }
}

struct TwoSeeds {
    a: SeedSide,
    b: SeedSide,
    garden: kube::Client,
    backup_root: tempfile::TempDir,
}

async fn two_seeds() -> TwoSeeds {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let backup_root = tempfile::tempdir().unwrap();
    let mut a = SeedSide::start("seed-a", None, backup_root.path()).await;
    let garden = a.client.clone();
    let mut b = SeedSide::start("seed-b", Some(&a.env), backup_root.path()).await;
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "garden-dev"}})).unwrap();
    Api::<Namespace>::all(garden.clone()).create(&PostParams::default(), &ns).await.unwrap();
    a.start_gardenlet();
    b.start_gardenlet();
    TwoSeeds { a, b, garden, backup_root }
}

impl TwoSeeds {
    fn shoots(&self) -> Api<Shoot> {
        Api::namespaced(self.garden.clone(), "garden-dev")
    }

    async fn wait_shoot(&self, what: &str, timeout: Duration, check: impl Fn(&Shoot) -> bool) -> Shoot {
        support::shoots::wait_shoot(&self.shoots(), "mover", what, timeout, check).await
    }

    async fn create_on_a(&self) {
        let shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
        self.shoots().create(&PostParams::default(), &shoot).await.unwrap();
        self.wait_shoot("Create Succeeded on seed-a", Duration::from_secs(180), |s| {
            last_is(s, LastOperationType::Create, LastOperationState::Succeeded)
        })
        .await;
    }

    async fn move_to_b(&self, annotations: serde_json::Value) {
        // The garden labels the shoot for both seeds while it moves (admission does it in the
        // same request; here it is spelled out).
        let labels = serde_json::json!({"name.seed.gardener.cloud/seed-b": "true"});
        let patch = serde_json::json!({"metadata": {"annotations": annotations, "labels": labels}, "spec": {"seedName": "seed-b"}});
        self.shoots().patch("mover", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    }

    async fn wait_restored_on_b(&self) -> Shoot {
        self.wait_shoot("Restore Succeeded on seed-b", Duration::from_secs(300), |s| {
            s.status.as_ref().and_then(|st| st.seed_name.as_deref()) == Some("seed-b")
                && last_is(s, LastOperationType::Restore, LastOperationState::Succeeded)
        })
        .await
    }
}

fn last_is(s: &Shoot, type_: LastOperationType, state: LastOperationState) -> bool {
    s.status.as_ref().and_then(|st| st.last_operation.as_ref()).is_some_and(|l| l.type_ == type_ && l.state == state)
}

/// The persistent secrets' bytes: the CAs and the service-account key.
async fn persistent_secrets(seed: &kube::Client) -> BTreeMap<String, BTreeMap<String, Vec<u8>>> {
    let api: Api<Secret> = Api::namespaced(seed.clone(), NS);
    let mut out = BTreeMap::new();
    for name in ["ca", "ca-client", "ca-etcd", "ca-front-proxy", "ca-kubelet", "service-account-key"] {
        let s = api.get(name).await.unwrap();
        out.insert(name.to_string(), s.data.unwrap().into_iter().map(|(k, v)| (k, v.0)).collect());
    }
    out
}

/// `kind/name` → `status.state` of every extension object of the shoot in a seed.
async fn extension_states(seed: &kube::Client) -> BTreeMap<String, serde_json::Value> {
    let mut out = BTreeMap::new();
    macro_rules! collect {
        ($($t:ty),*) => {$(
            for o in Api::<$t>::namespaced(seed.clone(), NS).list(&ListParams::default()).await.unwrap() {
                let state = ext::ExtensionKind::default_status(&o).and_then(|s| s.state.clone());
                out.insert(format!("{}/{}", stringify!($t), o.name_any()), serde_json::to_value(state).unwrap());
            }
        )*};
    }
    collect!(ext::Infrastructure, ext::DNSRecord, ext::ControlPlane, ext::Network, ext::Worker, ext::Extension);
    for o in Api::<ext::BackupEntry>::all(seed.clone()).list(&ListParams::default()).await.unwrap() {
        let state = ext::ExtensionKind::default_status(&o).and_then(|s| s.state.clone());
        out.insert(format!("BackupEntry/{}", o.name_any()), serde_json::to_value(state).unwrap());
    }
    out
}

/// Writes a marker ConfigMap through the shoot's API (it lands in the shoot's etcd).
async fn write_marker(seed: &kube::Client) -> ConfigMap {
    let shoot = support::standin::admin_client(seed, NS).await.unwrap();
    let marker: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "migration-marker"},
        "data": {"written": "before the migration", "nonce": format!("{:x}", fastrand::u64(..))},
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(shoot, "default").create(&PostParams::default(), &marker).await.unwrap()
}

async fn read_marker(seed: &kube::Client) -> Option<ConfigMap> {
    let shoot = support::standin::admin_client(seed, NS).await.unwrap();
    Api::<ConfigMap>::namespaced(shoot, "default").get_opt("migration-marker").await.unwrap()
}

/// Nothing of the shoot is left in seed A: no namespace, no Cluster, no BackupEntry.
async fn assert_nothing_left(seed: &kube::Client) {
    assert!(Api::<Namespace>::all(seed.clone()).get_opt(NS).await.unwrap().is_none(), "namespace left on seed-a");
    assert!(Api::<ext::Cluster>::all(seed.clone()).get_opt(NS).await.unwrap().is_none(), "Cluster left on seed-a");
    let entries = Api::<ext::BackupEntry>::all(seed.clone()).list(&ListParams::default()).await.unwrap();
    assert!(entries.items.is_empty(), "BackupEntry left on seed-a: {:?}", entries.items.iter().map(|e| e.name_any()));
}

/// Waits (polling the test's own view, bounded) until an object carries an annotation.
async fn wait_annotated<K>(api: Api<K>, name: &str, value: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let started = Instant::now();
    loop {
        let annotated = api
            .get_opt(name)
            .await
            .unwrap()
            .and_then(|o| o.annotations().get("gardener.cloud/operation").cloned())
            .is_some_and(|v| v == value);
        if annotated {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{name} never got operation {value}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_shoot_migrates_with_its_secrets_states_and_etcd_data() {
    let seeds = two_seeds().await;
    seeds.create_on_a().await;
    let marker = write_marker(&seeds.a.client).await;
    let secrets_before = persistent_secrets(&seeds.a.client).await;
    let states_before = extension_states(&seeds.a.client).await;
    assert!(states_before.len() >= 7, "{states_before:?}");

    let started = Instant::now();
    seeds.move_to_b(serde_json::json!({})).await;
    seeds
        .wait_shoot("the hand-over to seed-b", Duration::from_secs(180), |s| {
            s.status.as_ref().and_then(|st| st.seed_name.as_deref()) == Some("seed-b")
        })
        .await;
    let handed_over = started.elapsed();
    let shoot = seeds.wait_restored_on_b().await;
    let took = started.elapsed();
    eprintln!(
        "migration seed-a → seed-b: hand-over after {handed_over:?}, Restore Succeeded after {took:?} (from the spec change)"
    );

    assert!(shoot.status.as_ref().unwrap().last_errors.is_empty());
    assert_nothing_left(&seeds.a.client).await;
    assert_eq!(persistent_secrets(&seeds.b.client).await, secrets_before, "CA and service-account key bytes");
    assert_eq!(extension_states(&seeds.b.client).await, states_before, "extension states");
    // etcd's data, revisions included, came along.
    let restored = read_marker(&seeds.b.client).await.expect("the marker is in the restored etcd");
    assert_eq!(restored.data, marker.data);
    assert_eq!(restored.resource_version(), marker.resource_version());
    assert_eq!(restored.uid(), marker.uid());
    // The snapshot was consumed: renamed, and its record marked restored.
    let state = Api::<ShootState>::namespaced(seeds.garden.clone(), "garden-dev").get("mover").await.unwrap();
    let record = gardenlet::shoot::backup::record(Some(&state)).unwrap();
    assert!(record.is_restored(), "{record:?}");
    let dir = seeds.backup_root.path().join(&record.bucket_name).join(&record.entry_name);
    assert!(dir.join("final-snapshot.restored.db").is_file());
    assert!(!dir.join("final-snapshot.db").exists());
}

#[tokio::test]
async fn a_migration_interrupted_by_restarting_either_gardenlet_completes() {
    let mut seeds = two_seeds().await;
    seeds.create_on_a().await;
    let marker = write_marker(&seeds.a.client).await;
    let states_before = extension_states(&seeds.a.client).await;

    // Hold the Worker's migrate on A and restart A's gardenlet while it waits there.
    let held = seeds.a.worker.hold.clone().lock_owned().await;
    seeds.move_to_b(serde_json::json!({})).await;
    wait_annotated(Api::<ext::Worker>::namespaced(seeds.a.client.clone(), NS), "mover", "migrate").await;
    seeds.a.start_gardenlet();
    drop(held);

    // Hold the Worker's restore on B and restart B's gardenlet while it waits there.
    let held = seeds.b.worker.hold.clone().lock_owned().await;
    wait_annotated(Api::<ext::Worker>::namespaced(seeds.b.client.clone(), NS), "mover", "restore").await;
    seeds.b.start_gardenlet();
    drop(held);

    seeds.wait_restored_on_b().await;
    assert_nothing_left(&seeds.a.client).await;
    assert_eq!(extension_states(&seeds.b.client).await, states_before, "extension states");
    let restored = read_marker(&seeds.b.client).await.expect("the marker is in the restored etcd");
    assert_eq!(restored.data, marker.data);
}

#[tokio::test]
async fn a_forced_restore_without_the_source_completes_and_the_source_stays_out() {
    let mut seeds = two_seeds().await;
    seeds.create_on_a().await;
    let garden = seeds.garden.clone();
    let secrets_before = persistent_secrets(&seeds.a.client).await;
    // The ShootState sync (it runs on change) must have every state: the bad case has nothing else.
    let states_before = extension_states(&seeds.a.client).await;
    let shoot_states = Api::<ShootState>::namespaced(garden.clone(), "garden-dev");
    let expected: BTreeMap<String, serde_json::Value> =
        states_before.iter().map(|(k, v)| (k.trim_start_matches("ext::").to_string(), v.clone())).collect();
    let saved = |st: &ShootState| -> BTreeMap<String, serde_json::Value> {
        st.spec
            .extensions
            .iter()
            .map(|e| {
                (
                    format!("{}/{}", e.kind, e.name.as_deref().unwrap_or_default()),
                    serde_json::to_value(&e.state).unwrap(),
                )
            })
            .collect()
    };
    let started = Instant::now();
    while saved(&shoot_states.get("mover").await.unwrap()) != expected {
        assert!(started.elapsed() < Duration::from_secs(60), "the ShootState sync never caught up");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Seed A's gardenlet is gone; an operator forces the restore on B.
    seeds.a.stop_gardenlet();
    let left_on_a = extension_states(&seeds.a.client).await;
    seeds.move_to_b(serde_json::json!({"gardener.cloud/operation": "force-restore"})).await;
    let restored = seeds.wait_restored_on_b().await;
    assert!(!restored.annotations().contains_key("gardener.cloud/operation"), "the force annotation is consumed");
    assert_eq!(persistent_secrets(&seeds.b.client).await, secrets_before, "CA and service-account key bytes");
    let states_after = extension_states(&seeds.b.client).await;
    for (key, state) in &states_after {
        if key.starts_with("BackupEntry/") {
            continue; // no final snapshot in the bad case: the entry is fresh on B
        }
        assert_eq!(Some(state), states_before.get(key), "{key} kept its state through the ShootState");
    }

    // A's gardenlet comes back and sees the shoot change again: it must not act on it.
    let versions_on_a = namespace_versions(&seeds.a.client).await;
    seeds.a.start_gardenlet();
    let patch = serde_json::json!({"metadata": {"annotations": {"gardener.cloud/operation": "reconcile"}}});
    seeds.shoots().patch("mover", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    seeds
        .wait_shoot("the requested reconcile on seed-b", Duration::from_secs(120), |s| {
            !s.annotations().contains_key("gardener.cloud/operation")
                && last_is(s, LastOperationType::Reconcile, LastOperationState::Succeeded)
        })
        .await;
    // Seed A's gardenlet has seen the same events by now (one watch, one shoot).
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(namespace_versions(&seeds.a.client).await, versions_on_a, "seed-a's gardenlet touched the shoot");
    assert_eq!(extension_states(&seeds.a.client).await, left_on_a);
    let status = seeds.shoots().get("mover").await.unwrap().status.unwrap();
    assert_eq!(status.seed_name.as_deref(), Some("seed-b"));
}

#[tokio::test]
async fn a_hibernated_shoot_migrates_and_wakes_up_with_its_data() {
    let seeds = two_seeds().await;
    seeds.create_on_a().await;
    let marker = write_marker(&seeds.a.client).await;
    let hibernate = serde_json::json!({"spec": {"hibernation": {"enabled": true}}});
    seeds.shoots().patch("mover", &PatchParams::default(), &Patch::Merge(&hibernate)).await.unwrap();
    seeds
        .wait_shoot("hibernated on seed-a", Duration::from_secs(120), |s| {
            s.status.as_ref().is_some_and(|st| st.hibernated)
                && last_is(s, LastOperationType::Reconcile, LastOperationState::Succeeded)
        })
        .await;

    seeds.move_to_b(serde_json::json!({})).await;
    let restored = seeds.wait_restored_on_b().await;
    assert!(restored.status.as_ref().unwrap().hibernated, "restored hibernated");
    assert_nothing_left(&seeds.a.client).await;
    // etcd did not start on B: the snapshot waits, unconsumed, for the wake-up.
    let states = Api::<ShootState>::namespaced(seeds.garden.clone(), "garden-dev");
    let record = gardenlet::shoot::backup::record(Some(&states.get("mover").await.unwrap())).unwrap();
    assert!(!record.is_restored(), "{record:?}");
    let dir = seeds.backup_root.path().join(&record.bucket_name).join(&record.entry_name);
    assert!(dir.join("final-snapshot.db").is_file());

    let wake = serde_json::json!({"spec": {"hibernation": {"enabled": false}}});
    seeds.shoots().patch("mover", &PatchParams::default(), &Patch::Merge(&wake)).await.unwrap();
    seeds
        .wait_shoot("awake on seed-b", Duration::from_secs(180), |s| {
            s.status.as_ref().is_some_and(|st| !st.hibernated)
                && last_is(s, LastOperationType::Reconcile, LastOperationState::Succeeded)
        })
        .await;
    let back = read_marker(&seeds.b.client).await.expect("the marker is in etcd after the wake-up");
    assert_eq!(back.data, marker.data);
    let record = gardenlet::shoot::backup::record(Some(&states.get("mover").await.unwrap())).unwrap();
    assert!(record.is_restored(), "consumed at the wake-up: {record:?}");
    assert!(!dir.join("final-snapshot.db").exists());
}

/// resourceVersions of everything in the shoot namespace that gardenlet writes.
async fn namespace_versions(seed: &kube::Client) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    macro_rules! collect {
        ($($t:ty),*) => {$(
            for o in Api::<$t>::namespaced(seed.clone(), NS).list(&ListParams::default()).await.unwrap() {
                out.insert(format!("{}/{}", stringify!($t), o.name_any()), o.resource_version().unwrap_or_default());
            }
        )*};
    }
    collect!(
        Secret,
        k8s_openapi::api::core::v1::Service,
        k8s_openapi::api::apps::v1::Deployment,
        k8s_openapi::api::apps::v1::StatefulSet,
        ext::Infrastructure,
        ext::Worker,
        ext::DNSRecord
    );
    let ns = Api::<Namespace>::all(seed.clone()).get(NS).await.unwrap();
    out.insert("Namespace".into(), ns.resource_version().unwrap_or_default());
    out
}

/// The simulator's path mapping (what lets it run the etcd pod's restore script locally).
#[test]
fn container_paths_map_longest_mount_first_and_once() {
    use std::path::PathBuf;
    let mounts = vec![
        ("/var/etcd".to_string(), PathBuf::from("/tmp/v/data")),
        ("/var/etcd/backup".to_string(), PathBuf::from("/srv/b")),
    ];
    assert_eq!(
        support::standin::map_paths("cp /var/etcd/backup/x /var/etcd/data.restore", &mounts),
        "cp /srv/b/x /tmp/v/data/data.restore"
    );
}
