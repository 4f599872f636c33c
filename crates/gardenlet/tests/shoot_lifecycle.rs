//! The shoot lifecycle against real kube-apiserver and kube-controller-manager processes
//! (garden and seed are the same cluster), a stand-in shoot kube-apiserver started from the
//! shoot's own generated certificates, SDK controllers with test actuators for every extension
//! kind, and the workload-readiness simulator from `support/`. gardenlet runs as the gardenlet
//! chart's ServiceAccount with the chart's RBAC (installed with Helm), so every flow here proves
//! the rules it needs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::{LastOperationState, LastOperationType};
use api::core::{Shoot, ShootState};
use api::extensions as ext;
use gardenlet::config::GardenletConfig;
use gardenlet::seed::SeedController;
use gardenlet::shoot::controller::ShootController;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use support::actuators::{TestActuator, spawn_controller};
use support::simulator::Simulator;

const CONFIG: &str = "seed:\n  name: local\n  capacityShoots: 10\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n    backup:\n      provider: local\n      region: local\n      secretRef:\n        name: backup\n        namespace: garden\nkubeApiserverServiceType: LoadBalancer\ncontrollers:\n  shootSyncPeriodSeconds: 3600\n  shootCareThresholdSeconds: 3600\nexposureClassHandlers:\n- name: internet-config\n  loadBalancerService:\n    annotations: {lb.example/zone: public}\n    labels: {exposure: internet}\n";

const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: demo\n  namespace: garden-dev\n  labels:\n    name.seed.gardener.cloud/local: \"true\"\nspec:\n  seedName: local\n  region: local\n  credentialsBindingName: creds\n  provider:\n    type: local\n    workers:\n    - name: pool\n      minimum: 1\n      maximum: 2\n      machine:\n        type: local\n        image:\n          name: local\n          version: 1.0.0\n  kubernetes:\n    version: 1.20.2\n  networking:\n    type: local-net\n    pods: 10.96.0.0/11\n    services: 10.112.0.0/13\n    nodes: 10.250.0.0/16\n  extensions:\n  - type: local-ext\n  - type: local-ext-before\n";

const REGISTRATION: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: ControllerRegistration\nmetadata:\n  name: provider-local\nspec:\n  resources:\n  - kind: Extension\n    type: local-ext-before\n    lifecycle:\n      reconcile: BeforeKubeAPIServer\n  - kind: Extension\n    type: local-ext\n";

/// The shoot's provider credential (the token in the Secret its CredentialsBinding names).
const CREDENTIAL: &str = "t0ken-of-the-provider-account-42";

struct Harness {
    _env: testenv::TestEnv,
    /// The admin (for the test's own reads and writes).
    client: kube::Client,
    /// gardenlet's ServiceAccount, bound by the chart's RBAC.
    gardenlet: kube::Client,
    config: Arc<GardenletConfig>,
    infra: TestActuator,
    worker: TestActuator,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The started gardenlet's garden caches.
    caches: gardenlet::shoot::caches::SharedCaches,
}

impl Drop for Harness {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn harness() -> Harness {
    let env =
        testenv::TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..support::simulator::seed_options() })
            .await
            .unwrap();
    let client = env.client().await.unwrap();
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "garden-dev"}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
    // The shoot's credentials, through a CredentialsBinding as current Gardener users write it.
    let creds: Secret = serde_json::from_value(
        serde_json::json!({"metadata": {"name": "provider-creds"}, "stringData": {"token": CREDENTIAL}}),
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
    let registration: api::core::ControllerRegistration = serde_yaml::from_str(REGISTRATION).unwrap();
    Api::<api::core::ControllerRegistration>::all(client.clone())
        .create(&PostParams::default(), &registration)
        .await
        .unwrap();
    let config: Arc<GardenletConfig> = Arc::new(serde_yaml::from_str(CONFIG).unwrap());
    let gardenlet = support::chart::gardenlet_client(&env, CONFIG).await;
    let seed = SeedController::new(gardenlet.clone(), config.seed.clone(), Duration::from_secs(30), Default::default());
    seed.register().await.unwrap();
    seed.sync_status().await.unwrap();

    let infra = TestActuator::new();
    let worker = TestActuator::new();
    let infra_handle = infra.handle();
    let worker_handle = worker.handle();
    let mut tasks = vec![
        spawn_controller::<ext::Infrastructure>(client.clone(), &["local"], infra_handle),
        spawn_controller::<ext::DNSRecord>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::ControlPlane>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::OperatingSystemConfig>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::Network>(client.clone(), &["local-net"], TestActuator::new()),
        spawn_controller::<ext::Worker>(client.clone(), &["local"], worker_handle),
        spawn_controller::<ext::Extension>(client.clone(), &["local-ext", "local-ext-before"], TestActuator::new()),
        spawn_controller::<ext::BackupEntry>(client.clone(), &["local"], TestActuator::new()),
    ];
    tasks.push(Simulator::new().spawn(client.clone()));
    Harness { _env: env, client, gardenlet, config, infra, worker, tasks, caches: Default::default() }
}

impl Harness {
    fn start_gardenlet(&mut self) -> tokio::task::JoinHandle<()> {
        // A started gardenlet has caches of its own, as a restarted process would.
        self.caches = Default::default();
        let controller = ShootController {
            garden: self.gardenlet.clone(),
            seed: self.gardenlet.clone(),
            config: self.config.clone(),
            wait_timeout: Duration::from_secs(60),
            backoff: gardenlet::shoot::controller::default_backoff(),
            metrics: None,
            caches: self.caches.clone(),
        };
        let entries = support::backup_entries(self.gardenlet.clone(), self.gardenlet.clone(), &self.config.seed.name);
        tokio::spawn(async move {
            // Aborting gardenlet's task ends both controllers.
            struct AbortOnDrop(tokio::task::JoinHandle<()>);
            impl Drop for AbortOnDrop {
                fn drop(&mut self) {
                    self.0.abort();
                }
            }
            let _entries = AbortOnDrop(entries);
            controller.run(std::future::pending()).await
        })
    }

    /// Starts gardenlet, creates the shoot and waits until its creation succeeded (`timeout`);
    /// returns gardenlet's task.
    async fn created_shoot(&mut self, timeout: Duration) -> tokio::task::JoinHandle<()> {
        let gardenlet = self.start_gardenlet();
        let shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
        self.shoots().create(&PostParams::default(), &shoot).await.unwrap();
        self.wait_shoot("the shoot's creation succeeded", timeout, succeeded).await;
        gardenlet
    }

    fn shoots(&self) -> Api<Shoot> {
        Api::namespaced(self.client.clone(), "garden-dev")
    }

    /// Creates the shoot and waits until its status carries an error.
    async fn create_and_wait_for_an_error(&self) -> Shoot {
        let shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
        self.shoots().create(&PostParams::default(), &shoot).await.unwrap();
        self.wait_shoot("an error in lastErrors", Duration::from_secs(120), |s| {
            s.status.as_ref().is_some_and(|st| !st.last_errors.is_empty())
        })
        .await
    }

    async fn wait_shoot(&self, what: &str, timeout: Duration, check: impl Fn(&Shoot) -> bool) -> Shoot {
        support::shoots::wait_shoot(&self.shoots(), "demo", what, timeout, check).await
    }
}

fn succeeded(s: &Shoot) -> bool {
    s.status.as_ref().and_then(|st| st.last_operation.as_ref()).is_some_and(|l| {
        l.state == LastOperationState::Succeeded && l.progress == 100 && l.type_ != LastOperationType::Delete
    })
}

/// Every object gardenlet manages in the seed namespace (and the Cluster and ShootState), by
/// kind and name, with its resourceVersion.
async fn snapshot(client: &kube::Client, ns: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    macro_rules! collect {
        ($($t:ty),*) => {$(
            for o in Api::<$t>::namespaced(client.clone(), ns).list(&ListParams::default()).await.unwrap() {
                out.insert(format!("{}/{}", stringify!($t), o.name_any()), o.resource_version().unwrap_or_default());
            }
        )*};
    }
    collect!(
        Secret,
        Service,
        Deployment,
        StatefulSet,
        ext::Infrastructure,
        ext::DNSRecord,
        ext::ControlPlane,
        ext::OperatingSystemConfig,
        ext::Network,
        ext::Worker,
        ext::Extension
    );
    let cluster = Api::<ext::Cluster>::all(client.clone()).get(ns).await.unwrap();
    out.insert("Cluster".into(), cluster.resource_version().unwrap_or_default());
    let state = Api::<ShootState>::namespaced(client.clone(), "garden-dev").get("demo").await.unwrap();
    out.insert("ShootState".into(), state.resource_version().unwrap_or_default());
    let published =
        Api::<api::core::InternalSecret>::namespaced(client.clone(), "garden-dev").get("demo.ca-client").await;
    out.insert("InternalSecret".into(), published.unwrap().resource_version().unwrap_or_default());
    let maps = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), "garden-dev");
    out.insert("ConfigMap".into(), maps.get("demo.ca-cluster").await.unwrap().resource_version().unwrap_or_default());
    let namespace = Api::<Namespace>::all(client.clone()).get(ns).await.unwrap();
    out.insert("Namespace".into(), namespace.resource_version().unwrap_or_default());
    out
}

#[tokio::test]
async fn a_shoot_is_created_reconciled_without_writes_and_deleted() {
    let mut h = harness().await;
    let gardenlet = h.start_gardenlet();
    // Another seed's shoot, labelled for that seed as the garden does: not in this gardenlet's cache.
    let mut elsewhere: Shoot = serde_yaml::from_str(SHOOT).unwrap();
    elsewhere.metadata.name = Some("elsewhere".into());
    elsewhere.metadata.labels = Some([("name.seed.gardener.cloud/other".to_string(), "true".to_string())].into());
    elsewhere.spec.seed_name = Some("other".into());
    h.shoots().create(&PostParams::default(), &elsewhere).await.unwrap();
    let started = Instant::now();
    let shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
    h.shoots().create(&PostParams::default(), &shoot).await.unwrap();
    let done = h.wait_shoot("Create Succeeded", Duration::from_secs(180), succeeded).await;
    let cached: Vec<String> = h.caches.shoots().state().iter().map(|s| s.name_any()).collect();
    assert_eq!(cached, ["demo"], "gardenlet caches only its own seed's shoots");
    let other = h.shoots().get("elsewhere").await.unwrap();
    assert!(other.status.and_then(|s| s.last_operation).is_none(), "another seed's shoot is not touched");
    eprintln!("shoot creation to Succeeded took {:?}", started.elapsed());
    let status = done.status.clone().unwrap();
    assert_eq!(status.technical_id, "shoot--dev--demo");
    assert_eq!(status.seed_name.as_deref(), Some("local"));
    assert_eq!(status.observed_generation, done.metadata.generation);
    assert!(status.last_errors.is_empty());
    let ns = "shoot--dev--demo";
    // Conditions come from real checks: the stand-in API server answers, the (simulated)
    // workloads are rolled out, the system resources exist, and no node ever registers here.
    let condition = |t: &str| status.conditions.iter().find(|c| c.type_ == t).map(|c| (c.status, c.reason.clone()));
    use api::common::ConditionStatus::{Progressing, True};
    assert_eq!(condition("APIServerAvailable"), Some((True, "HealthzRequestSucceeded".into())));
    assert_eq!(condition("ControlPlaneHealthy"), Some((True, "ControlPlaneRunning".into())));
    assert_eq!(condition("SystemComponentsHealthy"), Some((True, "SystemComponentsRunning".into())));
    // A first failure is Progressing (it turns False after the care threshold; see the care test).
    assert_eq!(condition("EveryNodeReady"), Some((Progressing, "MissingNodes".into())));
    // The credentials of the CredentialsBinding reached the seed as the cloudprovider Secret.
    let cloudprovider = Api::<Secret>::namespaced(h.client.clone(), ns).get("cloudprovider").await.unwrap();
    assert_eq!(
        cloudprovider.data.unwrap()["token"].0,
        CREDENTIAL.as_bytes(),
        "the Secret the CredentialsBinding names"
    );

    // Every extension object exists and is ready by the contract.
    macro_rules! ready {
        ($t:ty, $name:expr) => {{
            let o = Api::<$t>::namespaced(h.client.clone(), ns).get($name).await.unwrap();
            let r = api::helpers::extension_operation::check_ready(
                &o.metadata,
                api::extensions::ExtensionKind::default_status(&o),
            );
            assert_eq!(r, Ok(()), "{} {}", stringify!($t), $name);
        }};
    }
    ready!(ext::Infrastructure, "demo");
    ready!(ext::DNSRecord, "demo-internal");
    ready!(ext::ControlPlane, "demo");
    ready!(ext::OperatingSystemConfig, "osc-pool");
    ready!(ext::Network, "demo");
    ready!(ext::Worker, "demo");
    ready!(ext::Extension, "local-ext");
    ready!(ext::Extension, "local-ext-before");
    let entry_name = format!("shoot--dev--demo--{}", done.metadata.uid.clone().unwrap());
    let entry = Api::<ext::BackupEntry>::all(h.client.clone()).get(&entry_name).await.unwrap();
    assert_eq!(
        api::helpers::extension_operation::check_ready(
            &entry.metadata,
            api::extensions::ExtensionKind::default_status(&entry)
        ),
        Ok(())
    );
    // The garden's BackupEntry: in the project namespace, owned by the Shoot, reporting the
    // extension entry's operation and the seed.
    let garden_entry =
        Api::<api::core::BackupEntry>::namespaced(h.client.clone(), "garden-dev").get(&entry_name).await.unwrap();
    assert_eq!(garden_entry.spec.bucket_name, entry.spec.bucket_name);
    assert_eq!(garden_entry.spec.seed_name(), Some("local"));
    assert_eq!(garden_entry.spec.shoot_ref.as_ref().map(|r| r.name.as_str()), Some("demo"));
    let garden_status = garden_entry.status.clone().unwrap_or_default();
    assert_eq!(garden_status.seed_name.as_deref(), Some("local"));
    assert_eq!(
        garden_status.last_operation.map(|o| o.state),
        Some(api::common::LastOperationState::Succeeded),
        "{:#?}",
        garden_entry.status
    );
    // The extension registered as BeforeKubeAPIServer was done before the kube-apiserver
    // Deployment was created; the default one only after it.
    let before = Api::<ext::Extension>::namespaced(h.client.clone(), ns).get("local-ext-before").await.unwrap();
    let after = Api::<ext::Extension>::namespaced(h.client.clone(), ns).get("local-ext").await.unwrap();
    let apiserver_created = Api::<Deployment>::namespaced(h.client.clone(), ns)
        .get("kube-apiserver")
        .await
        .unwrap()
        .metadata
        .creation_timestamp
        .unwrap();
    let done_at = |e: &ext::Extension| {
        e.status.as_ref().unwrap().default.last_operation.as_ref().unwrap().last_update_time.clone()
    };
    assert!(
        done_at(&before).0 <= apiserver_created.0,
        "before-kube-apiserver extension finished after the Deployment appeared"
    );
    assert!(
        after.metadata.creation_timestamp.unwrap().0 >= apiserver_created.0,
        "after-kube-apiserver extension created too early"
    );
    let worker = Api::<ext::Worker>::namespaced(h.client.clone(), ns).get("demo").await.unwrap();
    assert!(!worker.spec.pools[0].user_data.is_empty(), "the Worker got the OSC's user data");

    // The control plane objects are as specified.
    let apiserver = Api::<Deployment>::namespaced(h.client.clone(), ns).get("kube-apiserver").await.unwrap();
    let args = apiserver.spec.unwrap().template.spec.unwrap().containers[0].args.clone().unwrap();
    assert!(args.contains(&"--enable-bootstrap-token-auth=true".to_string()), "{args:?}");
    assert!(Api::<StatefulSet>::namespaced(h.client.clone(), ns).get("etcd-main").await.is_ok());
    for d in ["kube-controller-manager", "kube-scheduler"] {
        assert!(Api::<Deployment>::namespaced(h.client.clone(), ns).get(d).await.is_ok(), "{d}");
    }
    let state = Api::<ShootState>::namespaced(h.client.clone(), "garden-dev").get("demo").await.unwrap();
    let persisted: Vec<&str> = state.spec.gardener.iter().map(|g| g.name.as_str()).collect();
    for name in ["ca", "ca-client", "ca-etcd", "ca-front-proxy", "service-account-key"] {
        assert!(persisted.contains(&name), "ShootState lacks {name}: {persisted:?}");
    }
    // The client CA is published for the controller-manager, owned by the Shoot (collected with it).
    let published = Api::<api::core::InternalSecret>::namespaced(h.client.clone(), "garden-dev")
        .get("demo.ca-client")
        .await
        .unwrap();
    let keys: Vec<&str> = published.spec.data.keys().map(String::as_str).collect();
    assert_eq!(keys, ["ca.crt", "ca.key"]);
    assert_eq!(published.metadata.owner_references.unwrap()[0].kind, "Shoot");

    // The shoot's own API (the stand-in, reached with gardenlet's generated admin kubeconfig
    // and TLS verification) holds the kubeadm-style system resources.
    let admin = Api::<Secret>::namespaced(h.client.clone(), ns).get("kubeconfig-admin").await.unwrap();
    let text = String::from_utf8(admin.data.unwrap()["kubeconfig"].0.clone()).unwrap();
    let shoot_client = testenv::client_from(&kube::config::Kubeconfig::from_yaml(&text).unwrap()).await.unwrap();
    let info = Api::<ConfigMap>::namespaced(shoot_client.clone(), "kube-public").get("cluster-info").await.unwrap();
    assert!(info.data.unwrap()["kubeconfig"].contains("certificate-authority-data"));
    let tokens = Api::<Secret>::namespaced(shoot_client.clone(), "kube-system")
        .list(&ListParams::default().fields("type=bootstrap.kubernetes.io/token"))
        .await
        .unwrap();
    assert_eq!(tokens.items.len(), 1, "one bootstrap token");
    secrets_are_encrypted_in_etcd(&h.client, ns, &shoot_client).await;

    // gardenlet's ServiceAccount may watch what its caches hold (it read from them).
    assert!(h.caches.started(), "the garden caches did not start (RBAC?)");

    // A second reconcile of the unchanged shoot writes nothing it manages.
    let before = snapshot(&h.client, ns).await;
    let calls_before = h.infra.calls.load(Ordering::SeqCst);
    let controller = ShootController {
        garden: h.client.clone(),
        seed: h.client.clone(),
        config: h.config.clone(),
        wait_timeout: Duration::from_secs(60),
        backoff: gardenlet::shoot::controller::default_backoff(),
        metrics: None,
        caches: Default::default(),
    };
    let current = h.shoots().get("demo").await.unwrap();
    controller.reconcile_once(&current).await.unwrap();
    let again = h.shoots().get("demo").await.unwrap();
    assert_eq!(again.resource_version(), current.resource_version(), "a quiet resync writes no status either");
    let after = snapshot(&h.client, ns).await;
    let changed: Vec<_> = before.iter().filter(|(k, v)| after.get(*k) != Some(*v)).map(|(k, _)| k).collect();
    assert!(changed.is_empty(), "a no-op reconcile changed {changed:?}");
    assert_eq!(h.infra.calls.load(Ordering::SeqCst), calls_before, "no actuator call for an unchanged shoot");

    // Deletion leaves nothing of the shoot in the seed and removes the ShootState.
    h.shoots().delete("demo", &DeleteParams::default()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    while h.shoots().get_opt("demo").await.unwrap().is_some() {
        assert!(
            Instant::now() < deadline,
            "shoot not deleted: {:#?}",
            h.shoots().get_opt("demo").await.unwrap().and_then(|s| s.status)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(Api::<Namespace>::all(h.client.clone()).get_opt(ns).await.unwrap().is_none(), "namespace left behind");
    assert!(Api::<ext::Cluster>::all(h.client.clone()).get_opt(ns).await.unwrap().is_none(), "Cluster left behind");
    assert!(
        Api::<ShootState>::namespaced(h.client.clone(), "garden-dev").get_opt("demo").await.unwrap().is_none(),
        "ShootState left behind"
    );
    // Without a grace period the BackupEntry controller deletes the backups right after.
    let garden_entries = Api::<api::core::BackupEntry>::namespaced(h.client.clone(), "garden-dev");
    let deadline = Instant::now() + Duration::from_secs(60);
    while garden_entries.get_opt(&entry_name).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "the garden BackupEntry was not released");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        Api::<ext::BackupEntry>::all(h.client.clone()).get_opt(&entry_name).await.unwrap().is_none(),
        "BackupEntry left behind"
    );
    gardenlet.abort();
}

#[tokio::test]
async fn an_extension_error_lands_in_last_errors_and_clears_on_success() {
    let mut h = harness().await;
    h.infra.fail_first.store(1, Ordering::SeqCst);
    let _gardenlet = h.start_gardenlet();
    let failed = h.create_and_wait_for_an_error().await;
    let errors = failed.status.unwrap().last_errors;
    assert_eq!(errors[0].task_id.as_deref(), Some("Deploying Infrastructure"));
    assert_eq!(errors[0].codes, [api::common::ErrorCode::InfraRateLimitsExceeded]);
    assert!(errors[0].description.contains("rate limit"), "{}", errors[0].description);
    let done = h.wait_shoot("Succeeded after the retry", Duration::from_secs(180), succeeded).await;
    assert!(done.status.unwrap().last_errors.is_empty(), "success clears lastErrors");
}

#[tokio::test]
async fn a_restarted_gardenlet_converges_with_the_same_ca() {
    let mut h = harness().await;
    let first = h.start_gardenlet();
    let shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
    h.shoots().create(&PostParams::default(), &shoot).await.unwrap();
    // Drop the first gardenlet in the middle of its flow: once the CA exists, at a random
    // later moment.
    let states: Api<ShootState> = Api::namespaced(h.client.clone(), "garden-dev");
    let deadline = Instant::now() + Duration::from_secs(120);
    let ca_before = loop {
        if let Some(state) = states.get_opt("demo").await.unwrap()
            && let Some(ca) = state.spec.gardener.iter().find(|g| g.name == "ca")
        {
            break ca.data.clone();
        }
        assert!(Instant::now() < deadline, "no CA persisted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    tokio::time::sleep(Duration::from_millis(fastrand::u64(0..1500))).await;
    first.abort();
    let progress =
        h.shoots().get("demo").await.unwrap().status.and_then(|s| s.last_operation).map(|l| (l.state, l.progress));
    eprintln!("first gardenlet stopped at {progress:?}");
    let _second = h.start_gardenlet();
    h.wait_shoot("Succeeded after restart", Duration::from_secs(180), succeeded).await;
    let ca_after = states.get("demo").await.unwrap().spec.gardener.into_iter().find(|g| g.name == "ca").unwrap().data;
    assert_eq!(ca_before, ca_after, "the CA survived the restart byte for byte");
    let seed_ca = Api::<Secret>::namespaced(h.client.clone(), "shoot--dev--demo").get("ca").await.unwrap();
    let seed_ca_crt = String::from_utf8(seed_ca.data.unwrap()["ca.crt"].0.clone()).unwrap();
    use base64::Engine;
    let persisted_crt = ca_after.0["ca.crt"].as_str().unwrap();
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(persisted_crt).unwrap(), seed_ca_crt.as_bytes());
}

async fn annotate(client: &kube::Client, name: &str, op: &str) {
    let patch = serde_json::json!({"metadata": {"annotations": {"gardener.cloud/operation": op}}});
    Api::<Shoot>::namespaced(client.clone(), "garden-dev")
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_shoot_that_never_got_far_deletes_cleanly() {
    let mut h = harness().await;
    // The infrastructure never succeeds: the creation stops early.
    h.infra.fail_first.store(usize::MAX, Ordering::SeqCst);
    let _gardenlet = h.start_gardenlet();
    let shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
    h.shoots().create(&PostParams::default(), &shoot).await.unwrap();
    h.wait_shoot("a failed attempt", Duration::from_secs(120), |s| {
        s.status.as_ref().is_some_and(|st| !st.last_errors.is_empty())
    })
    .await;
    h.shoots().delete("demo", &DeleteParams::default()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    while h.shoots().get_opt("demo").await.unwrap().is_some() {
        assert!(
            Instant::now() < deadline,
            "shoot not deleted: {:#?}",
            h.shoots().get_opt("demo").await.unwrap().and_then(|s| s.status)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let ns = "shoot--dev--demo";
    assert!(Api::<Namespace>::all(h.client.clone()).get_opt(ns).await.unwrap().is_none(), "namespace left behind");
    assert!(
        Api::<ext::Infrastructure>::namespaced(h.client.clone(), ns)
            .list(&ListParams::default())
            .await
            .map(|l| l.items.is_empty())
            .unwrap_or(true)
    );
    assert!(
        Api::<ShootState>::namespaced(h.client.clone(), "garden-dev").get_opt("demo").await.unwrap().is_none(),
        "ShootState left behind"
    );
}

/// A shoot on a NamespacedCloudProfile with an ExposureClass: the Cluster carries the profile's
/// merged spec as a CloudProfile; a class whose handler this gardenlet does not configure fails
/// the flow naming the handler, and a configured handler's annotations and labels go onto the
/// kube-apiserver Service. (The infrastructure never succeeds, so the flow stops early.)
#[tokio::test]
async fn namespaced_cloud_profile_and_exposure_class_handler() {
    let mut h = harness().await;
    h.infra.fail_first.store(usize::MAX, Ordering::SeqCst);
    let classes: Api<api::core::ExposureClass> = Api::all(h.client.clone());
    for (name, handler) in [("internet", "internet-config"), ("elsewhere", "sni-gateway")] {
        let class = api::core::ExposureClass::new(
            name,
            api::core::exposureclass::ExposureClassFields { handler: handler.into(), scheduling: None },
        );
        classes.create(&PostParams::default(), &class).await.unwrap();
    }
    let profiles: Api<api::core::NamespacedCloudProfile> = Api::namespaced(h.client.clone(), "garden-dev");
    let team: api::core::NamespacedCloudProfile = serde_json::from_value(serde_json::json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "NamespacedCloudProfile",
        "metadata": {"name": "team", "namespace": "garden-dev"},
        "spec": {"parent": {"kind": "CloudProfile", "name": "local"}},
    }))
    .unwrap();
    profiles.create(&PostParams::default(), &team).await.unwrap();
    let merged = serde_json::json!({"status": {"cloudProfileSpec": {
        "type": "local", "kubernetes": {"versions": [{"version": "1.20.2"}]},
        "machineTypes": [{"name": "team-large", "cpu": "8", "gpu": "0", "memory": "32Gi"}],
    }}});
    profiles.patch_status("team", &PatchParams::default(), &Patch::Merge(&merged)).await.unwrap();

    let _gardenlet = h.start_gardenlet();
    let mut shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
    shoot.spec.cloud_profile = Some(api::core::shoot::CloudProfileReference {
        kind: Some("NamespacedCloudProfile".into()),
        name: "team".into(),
    });
    shoot.spec.exposure_class_name = Some("elsewhere".into());
    h.shoots().create(&PostParams::default(), &shoot).await.unwrap();
    let failed = h
        .wait_shoot("the unknown handler reported", Duration::from_secs(120), |s| {
            s.status.as_ref().is_some_and(|st| st.last_errors.iter().any(|e| e.description.contains("sni-gateway")))
        })
        .await;
    let error = failed.status.unwrap().last_errors.into_iter().find(|e| e.description.contains("sni-gateway")).unwrap();
    assert!(
        error.description.contains(
            "ExposureClass \"elsewhere\" names handler \"sni-gateway\", which this gardenlet's exposureClassHandlers do not configure (configured: internet-config)"
        ),
        "{}",
        error.description
    );

    let ns = "shoot--dev--demo";
    let cluster = Api::<ext::Cluster>::all(h.client.clone()).get(ns).await.unwrap();
    let profile = &cluster.spec.cloud_profile.0;
    assert_eq!(profile["kind"], "CloudProfile", "{profile}");
    assert_eq!(profile["metadata"]["name"], "team");
    assert_eq!(profile["metadata"]["namespace"], "garden-dev");
    assert_eq!(profile["spec"]["machineTypes"][0]["name"], "team-large", "the merged spec: {profile}");

    // The configured handler: its metadata on the Service.
    h.shoots()
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({"spec": {"exposureClassName": "internet"}})),
        )
        .await
        .unwrap();
    annotate(&h.client, "demo", "retry").await;
    let services: Api<Service> = Api::namespaced(h.client.clone(), ns);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let svc = services.get_opt("kube-apiserver").await.unwrap();
        let meta = svc.as_ref().map(|s| &s.metadata);
        let annotated = meta.and_then(|m| m.annotations.as_ref()).and_then(|a| a.get("lb.example/zone"));
        let labels = meta.and_then(|m| m.labels.clone()).unwrap_or_default();
        if annotated.map(String::as_str) == Some("public") {
            assert_eq!(labels.get("exposure").map(String::as_str), Some("internet"));
            assert_eq!(
                labels.get("handler.exposureclass.gardener.cloud/name").map(String::as_str),
                Some("internet-config")
            );
            assert_eq!(labels.get("app").map(String::as_str), Some("kubernetes"));
            break;
        }
        assert!(Instant::now() < deadline, "the Service never got the handler's metadata: {meta:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn replicas(client: &kube::Client, ns: &str) -> Vec<(String, i32)> {
    let mut out = Vec::new();
    for d in ["kube-apiserver", "kube-controller-manager", "kube-scheduler"] {
        let dep = Api::<Deployment>::namespaced(client.clone(), ns).get(d).await.unwrap();
        out.push((d.to_string(), dep.spec.unwrap().replicas.unwrap()));
    }
    let sts = Api::<StatefulSet>::namespaced(client.clone(), ns).get("etcd-main").await.unwrap();
    out.push(("etcd-main".to_string(), sts.spec.unwrap().replicas.unwrap()));
    out
}

#[tokio::test]
async fn hibernation_scales_everything_down_and_wake_up_restores_it() {
    let mut h = harness().await;
    let _gardenlet = h.created_shoot(Duration::from_secs(180)).await;
    let ns = "shoot--dev--demo";
    let running = replicas(&h.client, ns).await;
    assert!(running.iter().all(|(_, r)| *r == 1), "{running:?}");

    let set_hibernation = |enabled: bool| serde_json::json!({"spec": {"hibernation": {"enabled": enabled}}});
    h.shoots().patch("demo", &PatchParams::default(), &Patch::Merge(&set_hibernation(true))).await.unwrap();
    let hibernated = h
        .wait_shoot("hibernated", Duration::from_secs(120), |s| {
            succeeded(s)
                && s.status.as_ref().is_some_and(|st| st.hibernated && st.observed_generation == s.metadata.generation)
        })
        .await;
    assert!(replicas(&h.client, ns).await.iter().all(|(_, r)| *r == 0), "everything scaled to zero");
    assert!(
        Api::<ext::DNSRecord>::namespaced(h.client.clone(), ns)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(h.worker.hibernated_seen.lock().unwrap().last(), Some(&true), "the Worker saw the hibernation");
    let conditions = hibernated.status.unwrap().conditions;
    assert!(
        conditions.iter().all(|c| c.status == api::common::ConditionStatus::True && c.reason == "Hibernated"),
        "{conditions:?}"
    );

    h.shoots().patch("demo", &PatchParams::default(), &Patch::Merge(&set_hibernation(false))).await.unwrap();
    h.wait_shoot("woken up", Duration::from_secs(180), |s| {
        succeeded(s)
            && s.status.as_ref().is_some_and(|st| !st.hibernated && st.observed_generation == s.metadata.generation)
    })
    .await;
    assert_eq!(replicas(&h.client, ns).await, running, "every replica count is restored");
    assert!(Api::<ext::DNSRecord>::namespaced(h.client.clone(), ns).get_opt("demo-internal").await.unwrap().is_some());
    assert_eq!(h.worker.hibernated_seen.lock().unwrap().last(), Some(&false), "the Worker saw the wake-up");
}

#[tokio::test]
async fn a_shoot_owned_by_another_seed_is_only_taken_over_when_forced() {
    let mut h = harness().await;
    let shoot: Shoot = serde_yaml::from_str(SHOOT).unwrap();
    h.shoots().create(&PostParams::default(), &shoot).await.unwrap();
    // Another seed runs this shoot's control plane and has not handed it over.
    let owned = serde_json::json!({"status": {"seedName": "old-seed"}});
    h.shoots().patch_status("demo", &PatchParams::default(), &Patch::Merge(&owned)).await.unwrap();
    let _gardenlet = h.start_gardenlet();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let untouched = h.shoots().get("demo").await.unwrap();
    assert!(
        untouched.status.as_ref().unwrap().last_operation.is_none(),
        "gardenlet acted on a shoot another seed owns"
    );
    assert!(Api::<Namespace>::all(h.client.clone()).get_opt("shoot--dev--demo").await.unwrap().is_none());

    annotate(&h.client, "demo", "force-restore").await;
    let done = h.wait_shoot("forced takeover Succeeded", Duration::from_secs(180), succeeded).await;
    assert_eq!(done.status.as_ref().unwrap().seed_name.as_deref(), Some("local"), "ownership moved");
    let annotations = done.metadata.annotations.unwrap_or_default();
    assert!(!annotations.contains_key("gardener.cloud/operation"), "the request was consumed");
}

/// The harness registered the seed as gardenlet's ServiceAccount (the chart's rules suffice);
/// take away `patch` on the Seed's status and writing it is refused with `forbidden`, naming
/// the ServiceAccount; another seed's name is refused too (the rules name this seed only).
#[tokio::test]
async fn the_chart_rbac_limits_gardenlet_to_its_seed_and_no_rule_can_go() {
    let h = harness().await;
    let config: GardenletConfig = serde_yaml::from_str(CONFIG).unwrap();
    let mut other = config.seed.clone();
    other.name = "someone-else".into();
    let intruder = SeedController::new(h.gardenlet.clone(), other, Duration::from_secs(30), Default::default());
    let refused = intruder.register().await.expect_err("registering another seed must be forbidden");
    assert!(runtime::cli::report(&refused).contains("forbidden"), "{}", runtime::cli::report(&refused));

    let role = "gardener.cloud:system:gardenlet:local";
    let roles = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(h.client.clone());
    let mut cluster_role = roles.get(role).await.unwrap();
    let rules = cluster_role.rules.as_mut().unwrap();
    rules.retain(|r| r.resources.as_deref() != Some(&["seeds/status".to_string()][..]));
    cluster_role.metadata.managed_fields = None;
    roles.patch(role, &PatchParams::apply("rbac-test").force(), &Patch::Apply(&cluster_role)).await.unwrap();
    // Something to write: the conditions gardenlet maintains are gone.
    let clear = serde_json::json!({"status": {"conditions": null}});
    Api::<api::core::Seed>::all(h.client.clone())
        .patch_status("local", &PatchParams::default(), &Patch::Merge(&clear))
        .await
        .unwrap();
    let seed = SeedController::new(h.gardenlet.clone(), config.seed, Duration::from_secs(30), Default::default());
    let refused = seed.sync_status().await.expect_err("writing the status without the rule must be forbidden");
    let report = runtime::cli::report(&refused);
    assert!(report.contains("forbidden") && report.contains("system:serviceaccount:garden:gardenlet"), "{report}");
}

/// Collects what gardenlet logs (test code only).
#[derive(Clone, Default)]
struct LogBuffer(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A provider error that quotes the shoot's credentials, a token and a private key reaches the
/// Shoot's `lastErrors` and `lastOperation`, the garden's events and gardenlet's log with none
/// of them; the error itself (its first words, its code) still arrives.
#[tokio::test]
async fn secrets_in_an_extension_error_reach_no_status_event_or_log() {
    // The process-wide subscriber: a thread-local one loses events when tests running in
    // parallel registered gardenlet's callsites first. Other tests' gardenlets log here too,
    // which only widens the search for leaks; this test's failure is recognised by its message.
    static LOGS: std::sync::OnceLock<LogBuffer> = std::sync::OnceLock::new();
    let logs = LOGS
        .get_or_init(|| {
            let logs = LogBuffer::default();
            let writer = logs.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new("gardenlet=debug"))
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("no other test sets a global subscriber");
            logs
        })
        .clone();

    let mut h = harness().await;
    let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzaG9vdCJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg";
    let key_body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7";
    *h.infra.fail_message.lock().unwrap() = format!(
        "simulated provider error: rate limit exceeded for account {CREDENTIAL}; token {jwt}; \
         key -----BEGIN PRIVATE KEY-----\n{key_body}\n-----END PRIVATE KEY-----"
    );
    h.infra.fail_first.store(1, Ordering::SeqCst);
    let _gardenlet = h.start_gardenlet();
    let failed = h.create_and_wait_for_an_error().await;
    let secrets = [CREDENTIAL, jwt, key_body];
    let status = serde_json::to_string(&failed.status).unwrap();
    for secret in secrets {
        assert!(!status.contains(secret), "the Shoot's status carries {secret}: {status}");
    }
    let error = &failed.status.as_ref().unwrap().last_errors[0];
    assert!(error.description.contains("rate limit exceeded for account [redacted]"), "{}", error.description);
    assert_eq!(error.codes, [api::common::ErrorCode::InfraRateLimitsExceeded]);

    h.wait_shoot("Succeeded after the retry", Duration::from_secs(180), succeeded).await;
    let events = Api::<k8s_openapi::api::core::v1::Event>::namespaced(h.client.clone(), "garden-dev")
        .list(&ListParams::default())
        .await
        .unwrap();
    let events = serde_json::to_string(&events.items).unwrap();
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        logged
            .lines()
            .any(|l| l.contains("flow task failed") && l.contains("rate limit exceeded for account [redacted]")),
        "the failure is logged, redacted: {logged}"
    );
    for secret in secrets {
        assert!(!events.contains(secret), "a garden event carries {secret}");
        assert!(!logged.contains(secret), "gardenlet logged {secret}");
    }
}

/// The care controller (as gardenlet's ServiceAccount, on an injected clock) notices a broken
/// control plane without any reconcile: `Progressing` at once, `False` once the threshold has
/// passed, `True` again after the repair; a tick that finds nothing new writes nothing.
#[tokio::test]
async fn care_reports_a_broken_control_plane_between_reconciles() {
    use api::common::ConditionStatus::{False, Progressing, True};
    use std::sync::atomic::AtomicI64;
    let mut h = harness().await;
    let _gardenlet = h.created_shoot(Duration::from_secs(180)).await;

    let offset = Arc::new(AtomicI64::new(0));
    let clock_offset = offset.clone();
    let care = gardenlet::shoot::health::care::CareController {
        garden: h.gardenlet.clone(),
        seed: h.gardenlet.clone(),
        seed_name: "local".into(),
        period: Duration::from_millis(500),
        threshold: Duration::from_secs(60),
        concurrency: 2,
        clock: Arc::new(move || {
            let skew = k8s_openapi::jiff::SignedDuration::from_secs(clock_offset.load(Ordering::SeqCst));
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now() + skew)
        }),
        shoots: h.caches.clone(),
    };
    let care = tokio::spawn(care.run(std::future::pending()));

    // Nothing changed since the reconcile: the care ticks write nothing.
    let before = h.shoots().get("demo").await.unwrap().resource_version();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(h.shoots().get("demo").await.unwrap().resource_version(), before, "an unchanged shoot is not written");

    let condition = |s: &Shoot| {
        s.status.as_ref().and_then(|st| st.conditions.iter().find(|c| c.type_ == "ControlPlaneHealthy").cloned())
    };
    Api::<Deployment>::namespaced(h.client.clone(), "shoot--dev--demo")
        .delete("kube-scheduler", &DeleteParams::default())
        .await
        .unwrap();
    let broken = h
        .wait_shoot("ControlPlaneHealthy Progressing", Duration::from_secs(30), |s| {
            condition(s).is_some_and(|c| c.status == Progressing)
        })
        .await;
    let c = condition(&broken).unwrap();
    assert!(c.message.contains("kube-scheduler: missing"), "{}", c.message);
    assert_eq!(c.reason, "ControlPlaneUnhealthy");

    offset.store(61, Ordering::SeqCst);
    h.wait_shoot("ControlPlaneHealthy False after the threshold", Duration::from_secs(30), |s| {
        condition(s).is_some_and(|c| c.status == False)
    })
    .await;

    // A reconcile puts the scheduler back; the conditions are True again.
    annotate(&h.client, "demo", "reconcile").await;
    h.wait_shoot("ControlPlaneHealthy True after the repair", Duration::from_secs(120), |s| {
        condition(s).is_some_and(|c| c.status == True)
    })
    .await;
    care.abort();
}

/// A Secret written through the shoot's API is stored in its etcd encrypted with the shoot's key
/// (`k8s:enc:aescbc:v1:<key name>:` and no plaintext), read raw with etcdctl and the etcd client
/// certificate gardenlet generated.
async fn secrets_are_encrypted_in_etcd(seed: &kube::Client, ns: &str, shoot: &kube::Client) {
    let plaintext = "at-rest-plaintext-0123456789";
    let secret: Secret = serde_json::from_value(
        serde_json::json!({"metadata": {"name": "at-rest"}, "stringData": {"value": plaintext}}),
    )
    .unwrap();
    Api::<Secret>::namespaced(shoot.clone(), "default").create(&PostParams::default(), &secret).await.unwrap();
    let raw = etcd_raw(seed, ns, "/registry/secrets/default/at-rest").await;
    let prefix = encryption_prefix(seed, ns, "etcd-encryption-key").await;
    assert!(raw.starts_with(prefix.as_bytes()), "stored as {:?}", String::from_utf8_lossy(&raw[..raw.len().min(64)]));
    assert!(!raw.windows(plaintext.len()).any(|w| w == plaintext.as_bytes()), "the plaintext is in etcd");
    // Read back through the API, it is the same Secret.
    let back = Api::<Secret>::namespaced(shoot.clone(), "default").get("at-rest").await.unwrap();
    assert_eq!(back.data.unwrap()["value"].0, plaintext.as_bytes());
}

/// The raw bytes etcd stores under `key`, read with etcdctl and the etcd client certificate
/// gardenlet generated for the shoot in `ns`.
async fn etcd_raw(seed: &kube::Client, ns: &str, key: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let secrets = Api::<Secret>::namespaced(seed.clone(), ns);
    for (name, data_key) in [("ca-etcd-bundle", "bundle.crt"), ("etcd-client", "tls.crt"), ("etcd-client", "tls.key")] {
        let data = secrets.get(name).await.unwrap().data.unwrap();
        std::fs::write(dir.path().join(format!("{name}-{data_key}")), &data[data_key].0).unwrap();
    }
    let service = Api::<Service>::namespaced(seed.clone(), ns).get("etcd-main-client").await.unwrap();
    let ip = service.spec.unwrap().cluster_ip.unwrap();
    let etcdctl = testenv::Assets::from_env().unwrap().etcd.with_file_name("etcdctl");
    let file = |n: &str| dir.path().join(n).display().to_string();
    let out = std::process::Command::new(&etcdctl)
        .env("ETCDCTL_API", "3")
        .args([
            format!("--endpoints=https://{ip}:2379"),
            format!("--cacert={}", file("ca-etcd-bundle-bundle.crt")),
            format!("--cert={}", file("etcd-client-tls.crt")),
            format!("--key={}", file("etcd-client-tls.key")),
            // The server certificate names the Service, not the loopback address the stand-in
            // listens on; the client certificate is still required.
            "--insecure-skip-tls-verify=true".into(),
            "get".into(),
            key.into(),
            "--print-value-only".into(),
        ])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", etcdctl.display()));
    assert!(out.status.success(), "etcdctl: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The prefix etcd values encrypted with the key in Secret `key_secret` start with.
async fn encryption_prefix(seed: &kube::Client, ns: &str, key_secret: &str) -> String {
    let key =
        Api::<Secret>::namespaced(seed.clone(), ns).get(key_secret).await.unwrap().data.unwrap()["value"].0.clone();
    let name = gardenlet::components::kube_apiserver::encryption_key_name(&String::from_utf8(key).unwrap());
    format!("k8s:enc:aescbc:v1:{name}:")
}

/// A client of the shoot's API from the admin kubeconfig `text`, with its CA bundle replaced by
/// `ca` and its user by `user` where given.
async fn shoot_client_with(text: &str, ca: Option<&str>, user: Option<serde_json::Value>) -> kube::Client {
    use base64::Engine;
    let mut v: serde_json::Value = serde_yaml::from_str(text).unwrap();
    if let Some(ca) = ca {
        v["clusters"][0]["cluster"]["certificate-authority-data"] =
            base64::engine::general_purpose::STANDARD.encode(ca).into();
    }
    if let Some(user) = user {
        v["users"][0]["user"] = user;
    }
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&serde_yaml::to_string(&v).unwrap()).unwrap();
    testenv::client_from(&kubeconfig).await.unwrap()
}

/// The HTTP status of `GET /api` (discovery: any authenticated user may read it), or 0 when
/// there is no answer (TLS refused).
async fn api_status(client: &kube::Client) -> u16 {
    let request = http::Request::get("/api").body(Vec::new()).unwrap();
    match client.request_text(request).await {
        Ok(_) => 200,
        Err(kube::Error::Api(e)) => e.code,
        Err(e) => {
            eprintln!("GET /api: {e}");
            0
        }
    }
}

fn rotation_phases(s: &Shoot) -> Option<[api::core::shoot::credentials::RotationPhase; 3]> {
    let r = s.status.as_ref()?.credentials.as_ref()?.rotation.as_ref()?;
    Some([
        r.certificate_authorities.as_ref()?.phase,
        r.service_account_key.as_ref()?.phase,
        r.etcd_encryption_key.as_ref()?.phase,
    ])
}

#[tokio::test]
async fn credentials_rotate_in_two_phases() {
    use api::core::shoot::credentials::RotationPhase;
    let mut h = harness().await;
    let _gardenlet = h.created_shoot(Duration::from_secs(240)).await;
    let ns = "shoot--dev--demo";
    let seed_secrets = Api::<Secret>::namespaced(h.client.clone(), ns);
    let text = |s: &Secret, k: &str| String::from_utf8(s.data.as_ref().unwrap()[k].0.clone()).unwrap();
    let old_kubeconfig = text(&seed_secrets.get("kubeconfig-admin").await.unwrap(), "kubeconfig");
    let old_admin = shoot_client_with(&old_kubeconfig, None, None).await;

    // Before: a Secret stored with the first encryption key, a token signed with the first
    // service-account key.
    let shoot_secrets = Api::<Secret>::namespaced(old_admin.clone(), "default");
    let before: Secret =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "before"}, "stringData": {"v": "kept"}}))
            .unwrap();
    shoot_secrets.create(&PostParams::default(), &before).await.unwrap();
    let first_key = encryption_prefix(&h.client, ns, "etcd-encryption-key").await;
    assert!(etcd_raw(&h.client, ns, "/registry/secrets/default/before").await.starts_with(first_key.as_bytes()));
    let sa: k8s_openapi::api::core::v1::ServiceAccount =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "robot"}})).unwrap();
    Api::namespaced(old_admin.clone(), "default").create(&PostParams::default(), &sa).await.unwrap();
    let body = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let request = http::Request::post("/api/v1/namespaces/default/serviceaccounts/robot/token")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let issued: serde_json::Value = old_admin.request(request).await.unwrap();
    let token = issued["status"]["token"].as_str().unwrap().to_string();
    let robot = shoot_client_with(&old_kubeconfig, None, Some(serde_json::json!({"token": token}))).await;
    assert_eq!(api_status(&robot).await, 200, "the token works");
    // A token Secret as kube-controller-manager issues them (the stand-in runs none, so it
    // stays without data): phase one must replace it.
    let legacy: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "robot-token-legacy", "annotations": {"kubernetes.io/service-account.name": "robot"}},
        "type": "kubernetes.io/service-account-token",
    }))
    .unwrap();
    shoot_secrets.create(&PostParams::default(), &legacy).await.unwrap();

    // Phase one of every two-phase rotation at once.
    let started = Instant::now();
    annotate(&h.client, "demo", "rotate-credentials-start").await;
    let prepared = h
        .wait_shoot("all rotations Prepared", Duration::from_secs(300), |s| {
            succeeded(s) && rotation_phases(s) == Some([RotationPhase::Prepared; 3])
        })
        .await;
    eprintln!("phase one took {:?}", started.elapsed());
    assert!(!prepared.annotations().contains_key("gardener.cloud/operation"), "the request is consumed");
    let ca = prepared.status.as_ref().unwrap().credentials.as_ref().unwrap().rotation.as_ref().unwrap();
    let ca = ca.certificate_authorities.as_ref().unwrap();
    assert!(ca.last_initiation_time.is_some() && ca.last_initiation_finished_time.is_some());
    let bundle = text(&seed_secrets.get("ca-bundle").await.unwrap(), "bundle.crt");
    assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 2, "old and new cluster CA are trusted");
    let published = Api::<ConfigMap>::namespaced(h.client.clone(), "garden-dev").get("demo.ca-cluster").await.unwrap();
    assert_eq!(published.data.unwrap()["ca.crt"], bundle, "the garden publishes both CAs");
    let new_kubeconfig = text(&seed_secrets.get("kubeconfig-admin").await.unwrap(), "kubeconfig");
    assert_ne!(new_kubeconfig, old_kubeconfig);
    let new_admin = shoot_client_with(&new_kubeconfig, None, None).await;
    assert_eq!(api_status(&new_admin).await, 200, "a certificate of the new client CA works");
    let old_admin = shoot_client_with(&old_kubeconfig, None, None).await;
    assert_eq!(api_status(&old_admin).await, 200, "a certificate of the old client CA still works");
    let robot = shoot_client_with(&old_kubeconfig, None, Some(serde_json::json!({"token": token}))).await;
    assert_eq!(api_status(&robot).await, 200, "a token of the old key still works");
    assert!(
        shoot_secrets.get_opt("robot-token-legacy").await.unwrap().is_some(),
        "token Secrets from before the rotation stay until phase two (deleting one revokes its token)"
    );
    let robot_sa: k8s_openapi::api::core::v1::ServiceAccount =
        Api::namespaced(new_admin.clone(), "default").get("robot").await.unwrap();
    let first = robot_sa.secrets.unwrap_or_default()[0].name.clone().unwrap();
    assert!(first.starts_with("robot-token-"), "a new token Secret comes first in the ServiceAccount: {first}");
    let issued = shoot_secrets.get(&first).await.unwrap();
    assert_eq!(issued.type_.as_deref(), Some("kubernetes.io/service-account-token"));
    assert_eq!(issued.annotations()["kubernetes.io/service-account.name"], "robot");
    let sa_started = prepared.status.as_ref().unwrap().credentials.as_ref().unwrap().rotation.as_ref().unwrap();
    let sa_started = sa_started.service_account_key.as_ref().unwrap().last_initiation_time.clone().unwrap();
    let proxy = Api::<k8s_openapi::api::apps::v1::DaemonSet>::namespaced(new_admin.clone(), "kube-system")
        .get("kube-proxy")
        .await
        .unwrap();
    let annotations = proxy.spec.unwrap().template.metadata.unwrap().annotations.unwrap_or_default();
    assert_eq!(
        annotations.get(gardenlet::shoot::credentials::service_account_tokens::RESTARTED_FOR),
        Some(&sa_started.0.to_string()),
        "kube-proxy is restarted onto the new tokens"
    );
    let second_key = encryption_prefix(&h.client, ns, "etcd-encryption-key").await;
    assert_ne!(second_key, first_key);
    assert_eq!(encryption_prefix(&h.client, ns, "etcd-encryption-key-old").await, first_key);
    let raw = etcd_raw(&h.client, ns, "/registry/secrets/default/before").await;
    assert!(raw.starts_with(second_key.as_bytes()), "the Secret was rewritten with the new key");
    let states = Api::<ShootState>::namespaced(h.client.clone(), "garden-dev");
    let persisted = |state: &ShootState| state.spec.gardener.iter().map(|g| g.name.clone()).collect::<Vec<_>>();
    let names = persisted(&states.get("demo").await.unwrap());
    for old in ["ca-old", "ca-client-old", "service-account-key-old", "etcd-encryption-key-old"] {
        assert!(names.iter().any(|n| n == old), "{old} is kept in the ShootState between the phases: {names:?}");
    }

    // Phase two.
    let started = Instant::now();
    annotate(&h.client, "demo", "rotate-credentials-complete").await;
    let completed = h
        .wait_shoot("all rotations Completed", Duration::from_secs(300), |s| {
            succeeded(s) && rotation_phases(s) == Some([RotationPhase::Completed; 3])
        })
        .await;
    eprintln!("phase two took {:?}", started.elapsed());
    let rotation = completed.status.unwrap().credentials.unwrap().rotation.unwrap();
    assert!(rotation.certificate_authorities.unwrap().last_completion_time.is_some());
    let bundle = text(&seed_secrets.get("ca-bundle").await.unwrap(), "bundle.crt");
    assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 1, "only the new cluster CA");
    let new_admin = shoot_client_with(&new_kubeconfig, Some(&bundle), None).await;
    assert_eq!(api_status(&new_admin).await, 200);
    // The old client certificate, presented to a server the client trusts, is refused.
    let old_admin = shoot_client_with(&old_kubeconfig, Some(&bundle), None).await;
    assert_eq!(api_status(&old_admin).await, 401, "a certificate of the old client CA is refused");
    let robot = shoot_client_with(&new_kubeconfig, Some(&bundle), Some(serde_json::json!({"token": token}))).await;
    assert_eq!(api_status(&robot).await, 401, "a token of the old key is refused");
    let remaining = Api::<Secret>::namespaced(new_admin.clone(), "default");
    assert!(remaining.get_opt("robot-token-legacy").await.unwrap().is_none(), "the old token Secret is deleted");
    assert!(remaining.get_opt(&first).await.unwrap().is_some(), "the new token Secret stays");
    let back = Api::<Secret>::namespaced(new_admin.clone(), "default").get("before").await.unwrap();
    assert_eq!(back.data.unwrap()["v"].0, b"kept", "the Secret is readable without the old key");
    for old in ["ca-old", "service-account-key-old", "etcd-encryption-key-old"] {
        assert!(seed_secrets.get_opt(old).await.unwrap().is_none(), "{old} is gone from the seed");
    }
    let names = persisted(&states.get("demo").await.unwrap());
    // The two-phase credentials leave no previous one; the SSH key pair, renewed in one step by
    // rotate-credentials-start, keeps its previous pair until the next key-pair rotation.
    let previous: Vec<&String> = names.iter().filter(|n| n.ends_with("-old")).collect();
    assert_eq!(previous, ["ssh-keypair-old"], "previous credentials in the ShootState: {names:?}");
}

/// Polls `get` until `check` holds (test code: a panic after `timeout` is the failure report).
async fn eventually<T>(
    what: &str,
    timeout: Duration,
    mut get: impl AsyncFnMut() -> T,
    check: impl Fn(&T) -> bool,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        let value = get().await;
        if check(&value) {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `authorized_keys` the pool's OperatingSystemConfig gives the nodes, and that config.
async fn node_authorized_keys(client: &kube::Client) -> (String, ext::OperatingSystemConfig) {
    let osc = Api::<ext::OperatingSystemConfig>::namespaced(client.clone(), "shoot--dev--demo")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .remove(0);
    let file = osc.spec.files.iter().find(|f| f.path == "/var/lib/gardener-user/authorized_keys").unwrap();
    (file.content.inline.as_ref().unwrap().data.clone(), osc)
}

const USER_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMvRjR1zPZ0cLUS1pGE4mG4E/ZfY4Uq0bk8rOl3TIwCz jane@laptop";

fn operations_bastion(name: &str, key: &str) -> api::operations::Bastion {
    use base64::Engine;
    serde_json::from_value(serde_json::json!({
        "apiVersion": "operations.gardener.cloud/v1alpha1", "kind": "Bastion",
        "metadata": {"name": name, "namespace": "garden-dev"},
        "spec": {"shootRef": {"name": "demo"}, "seedName": "local", "providerType": "local",
                 "sshPublicKey": base64::engine::general_purpose::STANDARD.encode(key),
                 "ingress": [{"ipBlock": {"cidr": "10.3.0.0/16"}}]},
    }))
    .unwrap()
}

/// gardenlet's Bastion controller (as its ServiceAccount, so the chart's rules are proven):
/// the extension Bastion appears in the shoot's namespace with the user's key in its user data,
/// the address comes back with `BastionReady`, deleting the Bastion deletes the extension
/// Bastion before the finalizer goes; a key that is no SSH key is reported, nothing is made.
/// The shoot's own key pair is in its project namespace, and its nodes get its public key.
#[tokio::test]
async fn bastions_are_served_through_the_extension_and_removed_with_it() {
    use api::operations::Bastion;
    use base64::Engine;
    let mut h = harness().await;
    h.tasks.push(spawn_controller::<ext::Bastion>(h.client.clone(), &["local"], TestActuator::new()));
    let _gardenlet = h.created_shoot(Duration::from_secs(180)).await;
    let ready = Arc::new(std::sync::atomic::AtomicBool::new(false));
    h.tasks.push(tokio::spawn(gardenlet::bastion::run(
        h.gardenlet.clone(),
        h.gardenlet.clone(),
        "local".into(),
        2,
        std::future::pending(),
        ready,
    )));

    // The shoot's key pair, published as Gardener does, and on the nodes.
    let garden_secrets: Api<Secret> = Api::namespaced(h.client.clone(), "garden-dev");
    let pair = garden_secrets.get("demo.ssh-keypair").await.unwrap().data.unwrap();
    let public = String::from_utf8(pair["id_rsa.pub"].0.clone()).unwrap();
    assert!(public.starts_with("ssh-ed25519 "), "{public}");
    assert!(String::from_utf8_lossy(&pair["id_rsa"].0).starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"));
    assert!(garden_secrets.get_opt("demo.ssh-keypair.old").await.unwrap().is_none(), "no rotation yet");
    let worker = Api::<ext::Worker>::namespaced(h.client.clone(), "shoot--dev--demo").get("demo").await.unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    assert_eq!(b64.decode(worker.spec.ssh_public_key.unwrap()).unwrap(), public.as_bytes());
    let (keys, osc) = node_authorized_keys(&h.client).await;
    assert_eq!(keys, public);
    assert!(osc.spec.units.iter().any(|u| u.name == "sshd.service"));

    let bastions: Api<Bastion> = Api::namespaced(h.client.clone(), "garden-dev");
    bastions.create(&PostParams::default(), &operations_bastion("jane", USER_KEY)).await.unwrap();
    let ready = eventually(
        "BastionReady",
        Duration::from_secs(60),
        async || bastions.get("jane").await.unwrap(),
        |b| {
            b.status.as_ref().is_some_and(|s| {
                s.conditions.iter().any(|c| c.type_ == "BastionReady" && c.status == api::common::ConditionStatus::True)
            })
        },
    )
    .await;
    let status = ready.status.unwrap();
    assert_eq!(status.ingress.unwrap().ip.as_deref(), Some(support::actuators::BASTION_STAND_IN_IP));
    assert_eq!(status.observed_generation, ready.metadata.generation);
    assert!(ready.metadata.finalizers.unwrap_or_default().contains(&"gardener".to_string()));
    let extensions: Api<ext::Bastion> = Api::namespaced(h.client.clone(), "shoot--dev--demo");
    let extension = extensions.get("jane").await.unwrap();
    assert_eq!(extension.spec.ingress[0].ip_block.cidr, "10.3.0.0/16");
    let user_data = String::from_utf8(b64.decode(&extension.spec.user_data).unwrap()).unwrap();
    assert!(user_data.contains(USER_KEY), "{user_data}");

    bastions.delete("jane", &DeleteParams::default()).await.unwrap();
    eventually(
        "the Bastion gone",
        Duration::from_secs(60),
        async || bastions.get_opt("jane").await.unwrap(),
        |b| b.is_none(),
    )
    .await;
    assert!(extensions.get_opt("jane").await.unwrap().is_none(), "the extension Bastion went first");

    bastions
        .create(&PostParams::default(), &operations_bastion("mallory", "ssh-ed25519 AAAA; rm -rf /"))
        .await
        .unwrap();
    let refused = eventually(
        "the invalid key reported",
        Duration::from_secs(60),
        async || bastions.get("mallory").await.unwrap(),
        |b| b.status.as_ref().is_some_and(|s| !s.conditions.is_empty()),
    )
    .await;
    let condition = &refused.status.unwrap().conditions[0];
    assert_eq!(condition.reason, "FailedReconciling");
    assert!(condition.message.contains("spec.sshPublicKey") && !condition.message.contains("rm -rf"), "{condition:?}");
    assert!(extensions.get_opt("mallory").await.unwrap().is_none());
}

/// `rotate-ssh-keypair`: a new pair, the previous one kept as `.old` and still on the nodes
/// (until the next rotation), the status's times set; the next rotation replaces `.old`.
#[tokio::test]
async fn the_ssh_key_pair_rotates_in_one_step_keeping_the_previous_key() {
    let mut h = harness().await;
    let _gardenlet = h.created_shoot(Duration::from_secs(180)).await;
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), "garden-dev");
    let public = |s: Secret| String::from_utf8(s.data.unwrap()["id_rsa.pub"].0.clone()).unwrap();
    let first = public(secrets.get("demo.ssh-keypair").await.unwrap());

    annotate(&h.client, "demo", "rotate-ssh-keypair").await;
    let rotated = h
        .wait_shoot("the key pair rotated", Duration::from_secs(120), |s| {
            succeeded(s)
                && s.status
                    .as_ref()
                    .and_then(|st| st.credentials.as_ref())
                    .and_then(|c| c.rotation.as_ref())
                    .and_then(|r| r.ssh_keypair.as_ref())
                    .is_some_and(|k| k.last_completion_time.is_some())
        })
        .await;
    assert!(!rotated.annotations().contains_key("gardener.cloud/operation"));
    let second = public(secrets.get("demo.ssh-keypair").await.unwrap());
    assert_ne!(second, first);
    assert_eq!(public(secrets.get("demo.ssh-keypair.old").await.unwrap()), first);
    let (keys, _) = node_authorized_keys(&h.client).await;
    assert_eq!(keys, format!("{second}{first}"), "both keys are accepted");

    // A later reconcile (the status now holds the rotation's time to the second) renews nothing.
    let done = rotated.status.as_ref().and_then(|s| s.last_operation.as_ref()).map(|l| l.last_update_time.clone());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    annotate(&h.client, "demo", "reconcile").await;
    h.wait_shoot("another reconcile", Duration::from_secs(120), |s| {
        succeeded(s)
            && s.status.as_ref().and_then(|st| st.last_operation.as_ref()).map(|l| l.last_update_time.clone()) != done
    })
    .await;
    assert_eq!(public(secrets.get("demo.ssh-keypair").await.unwrap()), second, "no second renewal");
    assert_eq!(public(secrets.get("demo.ssh-keypair.old").await.unwrap()), first);

    // Wait for the next second: the rotation's time is its identity.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    annotate(&h.client, "demo", "rotate-ssh-keypair").await;
    eventually(
        "the second rotation",
        Duration::from_secs(120),
        async || public(secrets.get("demo.ssh-keypair").await.unwrap()),
        |k| *k != second,
    )
    .await;
    eventually(
        "the previous pair replaced",
        Duration::from_secs(60),
        async || public(secrets.get("demo.ssh-keypair.old").await.unwrap()),
        |k| *k == second,
    )
    .await;
}

/// The provider the status records for the stored data.
fn provider_in_status(s: &Shoot) -> Option<String> {
    let at_rest = s.status.as_ref()?.credentials.as_ref()?.encryption_at_rest.as_ref()?;
    Some(at_rest.provider.as_ref()?.type_.clone())
}

/// `encryptionConfig.provider.type` changed on a created shoot: gardenlet rotates the etcd
/// encryption key through both phases in one operation, a Secret stored before under `aescbc`
/// and the first key is stored under `secretbox` and the new key afterwards (read raw with
/// etcdctl), and the status records the new provider once the data was rewritten.
#[tokio::test]
async fn a_provider_change_rotates_the_key_and_rewrites_every_secret_under_the_new_provider() {
    use api::core::shoot::credentials::RotationPhase;
    let mut h = harness().await;
    let _gardenlet = h.created_shoot(Duration::from_secs(240)).await;
    let ns = "shoot--dev--demo";
    let created = h.wait_shoot("the status records aescbc", Duration::from_secs(30), |s| {
        provider_in_status(s).as_deref() == Some("aescbc")
    });
    created.await;
    let seed_secrets = Api::<Secret>::namespaced(h.client.clone(), ns);
    let kubeconfig = seed_secrets.get("kubeconfig-admin").await.unwrap().data.unwrap()["kubeconfig"].0.clone();
    let admin = shoot_client_with(&String::from_utf8(kubeconfig).unwrap(), None, None).await;
    let before: Secret =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "before"}, "stringData": {"v": "kept"}}))
            .unwrap();
    Api::<Secret>::namespaced(admin.clone(), "default").create(&PostParams::default(), &before).await.unwrap();
    let raw = etcd_raw(&h.client, ns, "/registry/secrets/default/before").await;
    assert!(raw.starts_with(encryption_prefix(&h.client, ns, "etcd-encryption-key").await.as_bytes()));

    let started = Instant::now();
    let change = serde_json::json!({"spec": {"kubernetes": {"kubeAPIServer": {"encryptionConfig": {"provider": {"type": "secretbox"}}}}}});
    h.shoots().patch("demo", &PatchParams::default(), &Patch::Merge(&change)).await.unwrap();
    let changed = h
        .wait_shoot("secretbox recorded after a completed key rotation", Duration::from_secs(300), |s| {
            let key = s.status.as_ref().and_then(|st| st.credentials.as_ref()).and_then(|c| c.rotation.as_ref());
            let key = key.and_then(|r| r.etcd_encryption_key.as_ref()).map(|k| k.phase);
            succeeded(s)
                && key == Some(RotationPhase::Completed)
                && provider_in_status(s).as_deref() == Some("secretbox")
        })
        .await;
    eprintln!("the provider change took {:?}", started.elapsed());
    let rotation = changed.status.as_ref().unwrap().credentials.as_ref().unwrap().rotation.as_ref().unwrap();
    let key = rotation.etcd_encryption_key.as_ref().unwrap();
    assert!(key.last_initiation_time.is_some() && key.last_completion_time.is_some(), "{key:?}");
    assert!(rotation.certificate_authorities.is_none(), "only the etcd encryption key is rotated: {rotation:?}");

    let new_key =
        String::from_utf8(seed_secrets.get("etcd-encryption-key").await.unwrap().data.unwrap()["value"].0.clone());
    let name = gardenlet::components::kube_apiserver::encryption_key_name(&new_key.unwrap());
    let raw = etcd_raw(&h.client, ns, "/registry/secrets/default/before").await;
    let prefix = format!("k8s:enc:secretbox:v1:{name}:");
    assert!(raw.starts_with(prefix.as_bytes()), "stored as {:?}", String::from_utf8_lossy(&raw[..raw.len().min(64)]));
    assert!(!raw.windows(4).any(|w| w == b"kept"), "the plaintext is in etcd");
    let back = Api::<Secret>::namespaced(admin, "default").get("before").await.unwrap();
    assert_eq!(back.data.unwrap()["v"].0, b"kept");
}
