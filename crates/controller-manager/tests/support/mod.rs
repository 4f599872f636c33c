//! Shared pieces of the real-apiserver tests: a control plane with the CRDs and the garden
//! control-plane chart's RBAC (installed with Helm), the controllers running in-process under
//! the SDK's runner with a manual clock as the chart's ServiceAccount (so every test proves the
//! chart grants what the controllers use), object builders, and a bounded polling helper that
//! reports the last observed state when it gives up.

#![allow(dead_code)]

use api::core::shoot::provider::Machine;
use api::core::shoot::{Networking, Provider, Worker};
use api::core::{Shoot, ShootSpec};
use controller_manager::metrics::Metrics;
use controller_manager::{Config, ManualClock, app};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use testenv::TestEnv;

/// The longest any single expectation may take to come true.
pub const TIMEOUT: Duration = Duration::from_secs(90);

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("controller_manager=info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
}

/// A fresh control plane with every CRD.
pub async fn garden() -> (TestEnv, Client) {
    garden_with(testenv::Options::default()).await
}

/// The namespace of the chart's release (and of the controller-manager's ServiceAccount).
pub const RELEASE_NS: &str = "garden";
/// The controller-manager's ServiceAccount.
pub const SA: &str = "gardener-controller-manager";
/// The user name of [`SA`].
pub const SA_USER: &str = "system:serviceaccount:garden:gardener-controller-manager";

/// A fresh control plane (with options) with every CRD, and the controller-manager's part of
/// the control-plane chart (its RBAC; its pods stay pending without nodes).
pub async fn garden_with(options: testenv::Options) -> (TestEnv, Client) {
    init_tracing();
    let options = testenv::Options { crds: api::crds::all(), ..options };
    let env = TestEnv::start_with(options).await.unwrap_or_else(|e| panic!("starting the test control plane: {e}"));
    let client = env.client().await.unwrap();
    let values = serde_json::json!({
        "crds": {"enabled": false},
        "scheduler": {"enabled": false},
        "controllerManager": {"replicas": 1},
    });
    let chart = testenv::helm::chart("gardener/controlplane");
    testenv::helm::install(&env, "gardener-controlplane", &chart, RELEASE_NS, &values, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (env, client)
}

/// A client acting as the controller-manager's ServiceAccount.
pub async fn as_controller_manager(env: &TestEnv) -> Client {
    env.client_as_service_account(RELEASE_NS, SA).await.unwrap()
}

/// The controllers running in this process (as the binary runs them, without leader
/// election); stopped when dropped.
pub struct Running {
    pub metrics: Metrics,
    pub clock: ManualClock,
    pub addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts every controller with `config`, on a manual clock standing at the real time now, as
/// the controller-manager's ServiceAccount.
pub async fn start(env: &TestEnv, config: Config) -> Running {
    let client = &as_controller_manager(env).await;
    let clock = ManualClock::new(Timestamp::now());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut runner_config = ::runtime::RunnerConfig::new("gardener-controller-manager", "default");
    runner_config.heartbeat_interval = None;
    let mut runner = ::runtime::Runner::new(client.clone(), runner_config).unwrap().with_listener(listener);
    let metrics = app::add_to(&mut runner, client.clone(), &config, Arc::new(clock.clone())).unwrap();
    let task = tokio::spawn(async move {
        runner.run(std::future::pending()).await.unwrap();
    });
    let running = Running { metrics, clock, addr, task };
    eventually("the controllers' caches to sync (/readyz 200)", || async {
        let response = tokio::task::spawn_blocking(move || testenv::binary::http_get(addr, "/readyz")).await.unwrap();
        match response {
            Some(r) if r.split_whitespace().nth(1) == Some("200") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    running
}

/// Polls `probe` every 100 ms until it returns `Ok`, at most [`TIMEOUT`]; panics with the last
/// observation otherwise.
pub async fn eventually<T, Fut: Future<Output = Result<T, String>>>(what: &str, probe: impl FnMut() -> Fut) -> T {
    testenv::poll::until(what, TIMEOUT, Duration::from_millis(100), probe).await
}

/// Creates a namespace.
pub async fn namespace(client: &Client, name: &str) {
    let ns = Namespace { metadata: ObjectMeta { name: Some(name.into()), ..Default::default() }, ..Default::default() };
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
}

/// A `local` shoot with one worker pool and networks disjoint from the test seeds'.
pub fn shoot(name: &str, namespace: &str) -> Shoot {
    let mut s = Shoot::new(
        name,
        ShootSpec {
            cloud_profile_name: Some("local".into()),
            provider: Provider {
                type_: "local".into(),
                workers: vec![Worker {
                    name: "pool".into(),
                    machine: Machine { type_: "local".into(), ..Default::default() },
                    minimum: 1,
                    maximum: 2,
                    ..Default::default()
                }],
                ..Default::default()
            },
            networking: Some(Networking {
                type_: Some("calico".into()),
                nodes: Some("10.250.0.0/16".into()),
                pods: Some("100.96.0.0/11".into()),
                services: Some("100.64.0.0/13".into()),
                ..Default::default()
            }),
            region: "local".into(),
            ..Default::default()
        },
    );
    s.metadata.namespace = Some(namespace.into());
    s
}

pub async fn create_shoot(client: &Client, shoot: &Shoot) -> Shoot {
    let ns = shoot.metadata.namespace.clone().unwrap();
    Api::<Shoot>::namespaced(client.clone(), &ns).create(&PostParams::default(), shoot).await.unwrap()
}

/// The notes of the events about `name` with `reason` in `namespace`; `""` for cluster-scoped
/// objects, whose events are `core/v1` Events in `default`.
pub async fn event_notes(client: &Client, namespace: &str, name: &str, reason: &str) -> Vec<String> {
    if namespace.is_empty() {
        return Api::<k8s_openapi::api::core::v1::Event>::namespaced(client.clone(), "default")
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.involved_object.name.as_deref() == Some(name) && e.reason.as_deref() == Some(reason))
            .filter_map(|e| e.message)
            .collect();
    }
    Api::<K8sEvent>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name) && e.reason.as_deref() == Some(reason)
        })
        .filter_map(|e| e.note)
        .collect()
}
