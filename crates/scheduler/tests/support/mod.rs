//! Shared pieces of the real-apiserver tests: a control plane with the CRDs, the scheduler
//! running in-process, builders for seeds, shoots and the CloudProfile, and a bounded polling
//! helper that reports the last observed state when it gives up.

#![allow(dead_code)]

use api::common::{Condition, ConditionStatus, LastOperation};
use api::core::{CloudProfile, Seed, SeedStatus, Shoot, Toleration};
use api::helpers::constants::conditions::GARDENLET_READY;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use scheduler::Config;
use scheduler::config::BackoffConfig;
use scheduler::decide::fixtures;
use scheduler::metrics::Metrics;
use scheduler::readiness::Readiness;
use serde_json::json;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;
use testenv::TestEnv;

pub const NS: &str = "garden-dev";
/// The longest any single expectation may take to come true.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// A fresh control plane with every CRD, the project namespace, the `local` CloudProfile, and
/// the scheduler's part of the control-plane chart (its ServiceAccount and RBAC), installed
/// with Helm: [`as_scheduler`] acts as that ServiceAccount, so the tests prove its rules.
pub async fn garden() -> (TestEnv, Client) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("scheduler=info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    let env = TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..Default::default() })
        .await
        .unwrap_or_else(|e| panic!("starting the test control plane: {e}"));
    let client = env.client().await.unwrap();
    let ns = Namespace { metadata: ObjectMeta { name: Some(NS.into()), ..Default::default() }, ..Default::default() };
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
    let mut profile = CloudProfile::new("local", Default::default());
    profile.spec.type_ = "local".into();
    Api::<CloudProfile>::all(client.clone()).create(&PostParams::default(), &profile).await.unwrap();
    let values = serde_json::json!({
        "crds": {"enabled": false},
        "controllerManager": {"enabled": false},
        "scheduler": {"replicas": 1},
    });
    let chart = testenv::helm::chart("gardener/controlplane");
    testenv::helm::install(&env, "gardener-controlplane", &chart, "garden", &values, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (env, client)
}

/// A client acting as the scheduler's ServiceAccount (`garden/gardener-scheduler`).
pub async fn as_scheduler(env: &TestEnv) -> Client {
    env.client_as_service_account("garden", "gardener-scheduler").await.unwrap()
}

/// A test configuration: quick retries.
pub fn quick_config() -> Config {
    Config { backoff: BackoffConfig { initial_seconds: 0.2, max_seconds: 2.0, jitter: 0.2 }, ..Config::default() }
}

/// The scheduler running in this process under the SDK's runner (as the binary runs it, but
/// without leader election); stopped when dropped.
pub struct Running {
    pub metrics: Metrics,
    pub readiness: Readiness,
    /// The runner's `/healthz`, `/readyz` and `/metrics`.
    pub addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn start_scheduler(client: &Client, config: Config) -> Running {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let mut runner_config = runtime::RunnerConfig::new("gardener-scheduler", "default");
    runner_config.heartbeat_interval = None;
    let mut runner = runtime::Runner::new(client.clone(), runner_config).unwrap().with_listener(listener);
    let (metrics, readiness) = scheduler::app::add_to(&mut runner, client.clone(), config).unwrap();
    let task = tokio::spawn(async move {
        runner.run(std::future::pending()).await.unwrap();
    });
    Running { metrics, readiness, addr, task }
}

fn condition(type_: &str, status: ConditionStatus) -> Condition {
    Condition {
        type_: type_.into(),
        status,
        last_transition_time: Time(Timestamp::now()),
        last_update_time: Time(Timestamp::now()),
        reason: "Test".into(),
        message: "set by the test".into(),
        codes: Vec::new(),
    }
}

/// A `local` seed (the decision's fixture, without a status); change fields before
/// [`create_seed`].
pub fn seed(name: &str, region: &str) -> Seed {
    Seed { status: None, ..fixtures::in_region(fixtures::seed(name), region) }
}

pub fn tainted(s: Seed, key: &str) -> Seed {
    fixtures::tainted(s, key, None)
}

pub fn labelled(s: Seed, key: &str, value: &str) -> Seed {
    fixtures::labelled(s, &[(key, value)])
}

/// Creates the seed and gives it a status: `GardenletReady` as given, and `allocatable.shoots`.
pub async fn create_seed(client: &Client, seed: Seed, ready: bool, allocatable: Option<u32>) {
    let api = Api::<Seed>::all(client.clone());
    let name = seed.metadata.name.clone().unwrap();
    api.create(&PostParams::default(), &seed).await.unwrap_or_else(|e| panic!("creating seed {name}: {e}"));
    let status = SeedStatus {
        conditions: vec![condition(
            GARDENLET_READY,
            if ready { ConditionStatus::True } else { ConditionStatus::False },
        )],
        allocatable: allocatable
            .map(|n| BTreeMap::from([("shoots".to_string(), Quantity(n.to_string()))]))
            .unwrap_or_default(),
        ..Default::default()
    };
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&json!({ "status": status })))
        .await
        .unwrap_or_else(|e| panic!("setting the status of seed {name}: {e}"));
}

/// Sets `GardenletReady` of a seed.
pub async fn set_seed_ready(client: &Client, name: &str, ready: bool) {
    let status = if ready { ConditionStatus::True } else { ConditionStatus::False };
    let patch = json!({ "status": { "conditions": [condition(GARDENLET_READY, status)] } });
    Api::<Seed>::all(client.clone()).patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
}

/// A `local` shoot with one worker pool and networks disjoint from [`seed`]'s (the decision's
/// fixture) in `region`.
pub fn shoot(name: &str, region: &str) -> Shoot {
    let mut s = fixtures::shoot(name);
    s.metadata.namespace = Some(NS.into());
    s.spec.region = region.into();
    s
}

pub fn tolerating(mut s: Shoot, key: &str) -> Shoot {
    s.spec.tolerations.push(Toleration { key: key.into(), value: None });
    s
}

pub async fn create_shoot(client: &Client, shoot: &Shoot) {
    let name = shoot.metadata.name.clone().unwrap();
    Api::<Shoot>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), shoot)
        .await
        .unwrap_or_else(|e| panic!("creating shoot {name}: {e}"));
}

pub async fn get_shoot(client: &Client, name: &str) -> Shoot {
    Api::<Shoot>::namespaced(client.clone(), NS).get(name).await.unwrap()
}

pub async fn list_shoots(client: &Client) -> Vec<Shoot> {
    Api::<Shoot>::namespaced(client.clone(), NS).list(&Default::default()).await.unwrap().items
}

pub fn seed_of(shoot: &Shoot) -> Option<&str> {
    shoot.spec.seed_name.as_deref()
}

pub fn last_operation(shoot: &Shoot) -> Option<&LastOperation> {
    shoot.status.as_ref().and_then(|s| s.last_operation.as_ref())
}

/// The events about a shoot with the given reason.
pub async fn events(client: &Client, shoot: &str, reason: &str) -> Vec<K8sEvent> {
    Api::<K8sEvent>::namespaced(client.clone(), NS)
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason) && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(shoot)
        })
        .collect()
}

/// Polls `probe` every 100 ms until it returns `Ok`, for at most [`TIMEOUT`]; on timeout, panics
/// with `what` and the last observation the probe reported.
pub async fn eventually<T, Fut: Future<Output = Result<T, String>>>(what: &str, probe: impl FnMut() -> Fut) -> T {
    testenv::poll::until(what, TIMEOUT, Duration::from_millis(100), probe).await
}

/// A plain HTTP/1.1 GET; returns the status code and the body. (Blocking std I/O on a helper
/// thread, so the tests need no extra tokio features.)
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let response = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    })
    .await
    .unwrap();
    let code = response.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}
