//! Force deletion of a shoot whose deletion is stuck, against real kube-apiserver and
//! kube-controller-manager processes (as `shoot_lifecycle.rs`: garden and seed are one cluster,
//! SDK controllers with test actuators serve every kind but Network, gardenlet runs as the
//! chart's ServiceAccount). The shoot names a network type nothing serves, so its creation fails
//! with ERR_CONFIGURATION_PROBLEM; its Network carries a finalizer nobody removes (a controller
//! that took it and is gone), so the normal deletion cannot finish. With
//! `confirmation.gardener.cloud/force-deletion: "true"` the shoot and everything of it goes.
//! A deletion that hangs (gardenlet would wait an hour) gives way to the force-deletion at once:
//! the running deletion is cancelled as soon as the confirmation is seen.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::{ErrorCode, LastOperationState, LastOperationType};
use api::core::{Shoot, ShootState};
use api::extensions as ext;
use gardenlet::config::GardenletConfig;
use gardenlet::seed::SeedController;
use gardenlet::shoot::controller::ShootController;
use gardenlet::shoot::operation::apply::served::UNSERVED_AFTER;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::actuators::{TestActuator, spawn_controller};
use support::simulator::Simulator;

const CONFIG: &str = "seed:\n  name: local\n  capacityShoots: 10\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n    backup:\n      provider: local\n      region: local\n      secretRef:\n        name: backup\n        namespace: garden\nkubeApiserverServiceType: LoadBalancer\ncontrollers:\n  shootSyncPeriodSeconds: 3600\n  shootCareThresholdSeconds: 3600\n";

/// Gardener's example shoot as a user applies it here: network type `calico`, which nothing on
/// this garden serves.
const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: demo\n  namespace: garden-dev\n  labels:\n    name.seed.gardener.cloud/local: \"true\"\nspec:\n  seedName: local\n  region: local\n  credentialsBindingName: creds\n  provider:\n    type: local\n    workers:\n    - name: pool\n      minimum: 1\n      maximum: 2\n      machine:\n        type: local\n        image:\n          name: local\n          version: 1.0.0\n  kubernetes:\n    version: 1.20.2\n  networking:\n    type: calico\n    pods: 10.96.0.0/11\n    services: 10.112.0.0/13\n    nodes: 10.250.0.0/16\n";

/// gardenlet's wait bound: above the time after which an unserved extension object fails the
/// creation with ERR_CONFIGURATION_PROBLEM, short enough for the stuck deletion to fail soon.
const WAIT_TIMEOUT: Duration = Duration::from_secs(UNSERVED_AFTER.as_secs() + 20);

struct Harness {
    _env: testenv::TestEnv,
    client: kube::Client,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Harness {
    fn shoots(&self) -> Api<Shoot> {
        Api::namespaced(self.client.clone(), "garden-dev")
    }
}

/// The garden and seed, SDK controllers for every kind but Network, the workload simulator, and
/// gardenlet's shoot controller.
async fn harness() -> Harness {
    harness_with(WAIT_TIMEOUT).await
}

/// The harness with gardenlet's wait bound `wait_timeout`.
async fn harness_with(wait_timeout: Duration) -> Harness {
    let env =
        testenv::TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..support::simulator::seed_options() })
            .await
            .unwrap();
    let client = env.client().await.unwrap();
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "garden-dev"}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
    let creds: Secret = serde_json::from_value(
        serde_json::json!({"metadata": {"name": "provider-creds"}, "stringData": {"token": "t0ken"}}),
    )
    .unwrap();
    Api::<Secret>::namespaced(client.clone(), "garden-dev").create(&PostParams::default(), &creds).await.unwrap();
    let binding: api::security::CredentialsBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "security.gardener.cloud/v1alpha1", "kind": "CredentialsBinding",
        "metadata": {"name": "creds", "namespace": "garden-dev"},
        "provider": {"type": "local"},
        "credentialsRef": {"apiVersion": "v1", "kind": "Secret", "name": "provider-creds", "namespace": "garden-dev"},
    }))
    .unwrap();
    Api::<api::security::CredentialsBinding>::namespaced(client.clone(), "garden-dev")
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let config: Arc<GardenletConfig> = Arc::new(serde_yaml::from_str(CONFIG).unwrap());
    let gardenlet = support::chart::gardenlet_client(&env, CONFIG).await;
    let seed = SeedController::new(gardenlet.clone(), config.seed.clone(), Duration::from_secs(30), Default::default());
    seed.register().await.unwrap();
    seed.sync_status().await.unwrap();
    let mut tasks = vec![
        spawn_controller::<ext::Infrastructure>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::DNSRecord>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::ControlPlane>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::OperatingSystemConfig>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::Worker>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::BackupEntry>(client.clone(), &["local"], TestActuator::new()),
    ];
    tasks.push(Simulator::new().spawn(client.clone()));
    let backup_client = gardenlet.clone();
    let controller = ShootController {
        garden: gardenlet.clone(),
        seed: gardenlet,
        config,
        wait_timeout,
        backoff: gardenlet::shoot::controller::default_backoff(),
        metrics: None,
        caches: Default::default(),
    };
    tasks.push(tokio::spawn(controller.run(std::future::pending())));
    tasks.push(support::backup_entries(backup_client.clone(), backup_client, "local"));
    Harness { _env: env, client, tasks }
}

fn last_operation(s: &Shoot) -> Option<(LastOperationType, LastOperationState)> {
    s.status.as_ref().and_then(|st| st.last_operation.as_ref()).map(|l| (l.type_, l.state))
}

fn codes(s: &Shoot) -> Vec<ErrorCode> {
    s.status.iter().flat_map(|st| st.last_errors.iter()).flat_map(|e| e.codes.clone()).collect()
}

#[tokio::test]
async fn a_stuck_deletion_is_forced_and_leaves_nothing_behind() {
    let h = harness().await;
    let shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
    h.shoots().create(&PostParams::default(), &shoot).await.unwrap();
    // The creation waits for the Network nothing serves, and reports it with
    // ERR_CONFIGURATION_PROBLEM (docs/gardenlet-flows.md, Waits).
    let failing =
        support::shoots::wait_shoot(&h.shoots(), "demo", "the Network error", Duration::from_secs(400), |s| {
            codes(s).contains(&ErrorCode::ConfigurationProblem)
        })
        .await;
    assert_eq!(last_operation(&failing).map(|(t, _)| t), Some(LastOperationType::Create));
    eprintln!("the creation reported the unserved Network");

    // A controller took the Network and went away: its finalizer stays.
    let ns = "shoot--dev--demo";
    let networks = Api::<ext::Network>::namespaced(h.client.clone(), ns);
    let finalizer = serde_json::json!({"metadata": {"finalizers": ["extensions.gardener.cloud/calico"]}});
    networks.patch("demo", &PatchParams::default(), &Patch::Merge(&finalizer)).await.unwrap();
    h.shoots().delete("demo", &DeleteParams::default()).await.unwrap();
    // The normal deletion is stuck on it: it fails, and the Network is still there.
    // The normal deletion is stuck on it: the Network is being deleted and stays, the deletion
    // fails.
    let deadline = Instant::now() + Duration::from_secs(400);
    let stuck = loop {
        let s = h.shoots().get("demo").await.unwrap();
        let deleting = networks.get("demo").await.unwrap().metadata.deletion_timestamp.is_some();
        let failed = last_operation(&s).is_some_and(|(t, st)| {
            t == LastOperationType::Delete && matches!(st, LastOperationState::Error | LastOperationState::Failed)
        });
        if deleting && failed {
            eprintln!("the deletion is stuck on the Network");
            break s;
        }
        assert!(Instant::now() < deadline, "no stuck deletion (Network deleting: {deleting}): {:#?}", s.status);
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    // What admission requires for the confirmation (crates/admission/src/shoot/force_deletion.rs).
    assert!(stuck.metadata.deletion_timestamp.is_some());
    assert!(codes(&stuck).contains(&ErrorCode::ConfigurationProblem), "{:#?}", stuck.status);

    let confirm =
        serde_json::json!({"metadata": {"annotations": {"confirmation.gardener.cloud/force-deletion": "true"}}});
    h.shoots().patch("demo", &PatchParams::default(), &Patch::Merge(&confirm)).await.unwrap();
    eprintln!("force deletion confirmed");
    let deadline = Instant::now() + Duration::from_secs(400);
    while let Some(s) = h.shoots().get_opt("demo").await.unwrap() {
        assert!(Instant::now() < deadline, "shoot not force-deleted: {:#?}", s.status);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // Nothing is left: the namespace with every extension object, the Cluster, the ShootState,
    // the BackupEntry.
    assert!(Api::<Namespace>::all(h.client.clone()).get_opt(ns).await.unwrap().is_none(), "namespace left behind");
    assert!(Api::<ext::Cluster>::all(h.client.clone()).get_opt(ns).await.unwrap().is_none(), "Cluster left behind");
    assert!(
        Api::<ShootState>::namespaced(h.client.clone(), "garden-dev").get_opt("demo").await.unwrap().is_none(),
        "ShootState left behind"
    );
    let entries = Api::<ext::BackupEntry>::all(h.client.clone()).list(&ListParams::default()).await.unwrap();
    assert!(entries.items.is_empty(), "BackupEntry left behind: {:?}", entries.items.len());
    let garden_entries = Api::<api::core::BackupEntry>::all(h.client.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !garden_entries.list(&ListParams::default()).await.unwrap().items.is_empty() {
        assert!(Instant::now() < deadline, "the garden BackupEntry was not released");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    for kind_left in [
        Api::<ext::Infrastructure>::all(h.client.clone()).list(&ListParams::default()).await.unwrap().items.len(),
        Api::<ext::Worker>::all(h.client.clone()).list(&ListParams::default()).await.unwrap().items.len(),
        Api::<ext::Network>::all(h.client.clone()).list(&ListParams::default()).await.unwrap().items.len(),
    ] {
        assert_eq!(kind_left, 0, "extension objects left behind");
    }
}

#[tokio::test]
async fn a_hanging_deletion_gives_way_to_a_force_deletion() {
    // gardenlet waits an hour for each deleted object: only a cancelled deletion lets the
    // force-deletion run within the test's bound.
    let h = harness_with(Duration::from_secs(3600)).await;
    let shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
    h.shoots().create(&PostParams::default(), &shoot).await.unwrap();
    support::shoots::wait_shoot(&h.shoots(), "demo", "the Network error", Duration::from_secs(400), |s| {
        codes(s).contains(&ErrorCode::ConfigurationProblem)
    })
    .await;

    // Someone else's finalizer holds the Infrastructure: its deletion never ends.
    let ns = "shoot--dev--demo";
    let infrastructures = Api::<ext::Infrastructure>::namespaced(h.client.clone(), ns);
    let mut finalizers = infrastructures.get("demo").await.unwrap().metadata.finalizers.unwrap_or_default();
    finalizers.push("test.gardener.cloud/held".into());
    let held = serde_json::json!({"metadata": {"finalizers": finalizers}});
    infrastructures.patch("demo", &PatchParams::default(), &Patch::Merge(&held)).await.unwrap();
    h.shoots().delete("demo", &DeleteParams::default()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(400);
    loop {
        let s = h.shoots().get("demo").await.unwrap();
        let waiting = infrastructures.get("demo").await.unwrap().metadata.deletion_timestamp.is_some();
        let deleting = last_operation(&s) == Some((LastOperationType::Delete, LastOperationState::Processing));
        if waiting && deleting {
            eprintln!("the deletion waits for the held Infrastructure");
            break;
        }
        assert!(Instant::now() < deadline, "the deletion did not reach the Infrastructure: {:#?}", s.status);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let confirm =
        serde_json::json!({"metadata": {"annotations": {"confirmation.gardener.cloud/force-deletion": "true"}}});
    h.shoots().patch("demo", &PatchParams::default(), &Patch::Merge(&confirm)).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    while let Some(s) = h.shoots().get_opt("demo").await.unwrap() {
        assert!(Instant::now() < deadline, "the hanging deletion did not give way: {:#?}", s.status);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(Api::<Namespace>::all(h.client.clone()).get_opt(ns).await.unwrap().is_none(), "namespace left behind");
    let left = Api::<ext::Infrastructure>::all(h.client.clone()).list(&ListParams::default()).await.unwrap();
    assert!(left.items.is_empty(), "the held Infrastructure is left behind");
}
