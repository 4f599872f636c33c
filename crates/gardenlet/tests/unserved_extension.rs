//! A shoot naming an extension type no controller serves, against real kube-apiserver and
//! kube-controller-manager processes (as `shoot_lifecycle.rs`: garden and seed are one cluster,
//! SDK controllers with test actuators serve every kind but Network, gardenlet runs as the
//! chart's ServiceAccount): the creation ends with an error naming the kind, the type and the
//! seed, long before the wait's own timeout; and a deletion issued while the creation waits takes
//! over at once instead of after the creation gave up.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::{ErrorCode, LastOperationState, LastOperationType};
use api::core::Shoot;
use api::extensions as ext;
use gardenlet::config::GardenletConfig;
use gardenlet::seed::SeedController;
use gardenlet::shoot::controller::ShootController;
use gardenlet::shoot::operation::apply::served::UNSERVED_AFTER;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::actuators::{TestActuator, spawn_controller};
use support::simulator::Simulator;

const CONFIG: &str = "seed:\n  name: local\n  capacityShoots: 10\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n    backup:\n      provider: local\n      region: local\n      secretRef:\n        name: backup\n        namespace: garden\nkubeApiserverServiceType: LoadBalancer\ncontrollers:\n  shootSyncPeriodSeconds: 3600\n  shootCareThresholdSeconds: 3600\n";

/// Gardener's example shoot as a user applies it here: network type `calico`, which nothing on
/// this garden serves.
const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: demo\n  namespace: garden-dev\n  labels:\n    name.seed.gardener.cloud/local: \"true\"\nspec:\n  seedName: local\n  region: local\n  credentialsBindingName: creds\n  provider:\n    type: local\n    workers:\n    - name: pool\n      minimum: 1\n      maximum: 2\n      machine:\n        type: local\n        image:\n          name: local\n          version: 1.0.0\n  kubernetes:\n    version: 1.20.2\n  networking:\n    type: calico\n    pods: 10.96.0.0/11\n    services: 10.112.0.0/13\n    nodes: 10.250.0.0/16\n";

/// The wait bound of the old behaviour: the creation must end well before it.
const OLD_TIMEOUT: Duration = Duration::from_secs(600);

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
/// gardenlet's shoot controller with the old ten-minute wait bound.
async fn harness() -> Harness {
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
        wait_timeout: OLD_TIMEOUT,
        backoff: gardenlet::shoot::controller::default_backoff(),
        metrics: None,
        caches: Default::default(),
    };
    tasks.push(tokio::spawn(controller.run(std::future::pending())));
    tasks.push(support::backup_entries(backup_client.clone(), backup_client, "local"));
    Harness { _env: env, client, tasks }
}

fn last_operation(s: &Shoot) -> Option<(LastOperationType, LastOperationState, String)> {
    s.status.as_ref().and_then(|st| st.last_operation.as_ref()).map(|l| (l.type_, l.state, l.description.clone()))
}

/// The shoot `name` of [`SHOOT`].
fn shoot(name: &str) -> Shoot {
    let mut shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
    shoot.metadata.name = Some(name.into());
    shoot
}

/// One garden for both cases, one after the other (two control planes side by side are too much
/// for a small machine).
#[tokio::test]
async fn a_network_type_no_controller_serves_fails_the_creation_and_a_deletion_takes_over_its_wait() {
    let h = harness().await;
    the_creation_fails_naming_kind_type_and_seed(&h).await;
    a_deletion_takes_over_a_creation_that_waits(&h).await;
}

async fn the_creation_fails_naming_kind_type_and_seed(h: &Harness) {
    h.shoots().create(&PostParams::default(), &shoot("demo")).await.unwrap();
    // Generous for a loaded machine, and still far below the old wait bound: the error comes
    // from the unserved check, not from the wait's timeout.
    let failed =
        support::shoots::wait_shoot(&h.shoots(), "demo", "the creation failed", Duration::from_secs(180), |s| {
            last_operation(s).is_some_and(|(_, state, _)| state == LastOperationState::Failed)
        })
        .await;
    let status = failed.status.clone().unwrap();
    let network_errors: Vec<_> =
        status.last_errors.iter().filter(|e| e.task_id.as_deref() == Some("Deploying Network")).collect();
    assert_eq!(network_errors.len(), 1, "{:#?}", status.last_errors);
    let error = network_errors[0];
    for want in [
        "Network shoot--dev--demo/demo",
        &format!("was not picked up within {}s", UNSERVED_AFTER.as_secs()),
        "no controller installed for it on seed local",
        "no ControllerRegistration serves Network type \"calico\"",
    ] {
        assert!(error.description.contains(want), "missing {want:?} in {}", error.description);
    }
    assert_eq!(error.codes, vec![ErrorCode::ConfigurationProblem]);
    let (type_, _, description) = last_operation(&failed).unwrap();
    assert_eq!(type_, LastOperationType::Create);
    assert!(description.contains("no controller installed for it on seed local"), "{description}");
    assert!(description.contains("non-retryable"), "{description}");
}

async fn a_deletion_takes_over_a_creation_that_waits(h: &Harness) {
    h.shoots().create(&PostParams::default(), &shoot("other")).await.unwrap();
    // The creation waits for the Network nothing picks up.
    let networks = Api::<ext::Network>::namespaced(h.client.clone(), "shoot--dev--other");
    let deadline = Instant::now() + Duration::from_secs(120);
    while networks.list(&ListParams::default()).await.map(|l| l.items.is_empty()).unwrap_or(true) {
        let status = h.shoots().get("other").await.unwrap().status;
        assert!(Instant::now() < deadline, "no Network was deployed: {status:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    h.shoots().delete("other", &DeleteParams::default()).await.unwrap();
    // The deletion cancels the creation: the creation never reports its own end (neither the
    // unserved Network nor any other error), and the shoot goes.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut saw_delete = false;
    while let Some(s) = h.shoots().get_opt("other").await.unwrap() {
        let status = s.status.clone().unwrap_or_default();
        if let Some((type_, state, description)) = last_operation(&s) {
            if type_ == LastOperationType::Create {
                assert!(
                    state == LastOperationState::Processing && !saw_delete,
                    "the creation ended on its own ({state:?}: {description}) instead of being cancelled"
                );
            }
            saw_delete |= type_ == LastOperationType::Delete;
        }
        assert!(
            !status.last_errors.iter().any(|e| e.description.contains("was not picked up")),
            "the creation was not cancelled: {:#?}",
            status.last_errors
        );
        assert!(Instant::now() < deadline, "shoot not deleted: {status:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
