//! Shared pieces of the SDK's real-apiserver tests: a scripted actuator that counts its calls
//! with atomics, sample objects, and bounded waiting.

#![allow(dead_code)]

use extension_sdk::api::common::{LastOperationState, LastOperationType, SecretReference};
use extension_sdk::api::extensions::{DefaultSpec, ExtensionKind, Infrastructure, InfrastructureSpec};
use extension_sdk::kinds::ExtensionResource;
use extension_sdk::kube::{Api, Client, ResourceExt};
use extension_sdk::runner::{Stop, stop_signal};
use extension_sdk::testing::{TestCluster, sample_shoot};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, ControllerConfig, ExtensionController, Metrics, Outcome};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const NS: &str = "shoot--dev--test";
pub const TYPE: &str = "test";

/// Bounds every test.
pub async fn bounded<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(120), f).await.expect("the test did not finish within 120 s")
}

/// A cluster with every CRD, the namespace `NS` and its Cluster object.
pub async fn cluster() -> TestCluster {
    let tc = TestCluster::start().await.unwrap_or_else(|e| panic!("{e}"));
    tc.namespace(NS).await.unwrap();
    tc.cluster(NS, sample_shoot(TYPE)).await.unwrap();
    tc
}

pub fn infra(name: &str) -> Infrastructure {
    let mut i = Infrastructure::new(
        name,
        InfrastructureSpec {
            default: DefaultSpec { type_: TYPE.into(), ..Default::default() },
            region: "local".into(),
            secret_ref: SecretReference { name: "creds".into(), namespace: None },
            ssh_public_key: None,
        },
    );
    i.metadata.namespace = Some(NS.into());
    i
}

/// What the scripted actuator does on its next calls.
#[derive(Clone, Debug)]
pub enum Script {
    Succeed,
    Fail(String),
    /// Fail this many times, then succeed.
    FailTimes(usize, String),
    Sleep(Duration),
    /// Ask for a requeue this many times, then succeed.
    RequeueTimes(usize),
}

/// Counts of calls, by method.
#[derive(Debug, Default)]
pub struct Counts {
    pub reconcile: AtomicUsize,
    pub delete: AtomicUsize,
    pub force_delete: AtomicUsize,
    pub migrate: AtomicUsize,
    pub restore: AtomicUsize,
}

impl Counts {
    pub fn total(&self) -> usize {
        [&self.reconcile, &self.delete, &self.force_delete, &self.migrate, &self.restore]
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .sum()
    }
    pub fn get(c: &AtomicUsize) -> usize {
        c.load(Ordering::SeqCst)
    }
}

/// What the actuator saw of the object in the API server while it ran.
#[derive(Clone, Debug)]
pub struct Seen {
    pub annotation: Option<String>,
    pub finalizers: Vec<String>,
    pub last_operation: Option<(LastOperationType, LastOperationState, i32)>,
}

/// A test actuator, generic over the kind.
#[derive(Clone)]
pub struct Scripted {
    pub counts: Arc<Counts>,
    pub script: Arc<Mutex<Script>>,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    client: Client,
    failures: Arc<AtomicUsize>,
}

impl Scripted {
    pub fn new(client: Client, script: Script) -> Self {
        Self {
            counts: Arc::default(),
            script: Arc::new(Mutex::new(script)),
            seen: Arc::default(),
            client,
            failures: Arc::default(),
        }
    }

    pub fn set(&self, script: Script) {
        *self.script.lock().unwrap() = script;
    }

    async fn observe<K: ExtensionResource>(&self, obj: &K) {
        let api = K::api(self.client.clone(), obj.namespace().as_deref());
        if let Ok(current) = api.get(&obj.name_any()).await {
            let last =
                current.default_status().and_then(|s| s.last_operation.clone()).map(|l| (l.type_, l.state, l.progress));
            self.seen.lock().unwrap().push(Seen {
                annotation: current.annotations().get("gardener.cloud/operation").cloned(),
                finalizers: current.finalizers().to_vec(),
                last_operation: last,
            });
        }
    }

    async fn run<K: ExtensionResource>(&self, obj: &K) -> Result<Outcome<K>, ActuatorError> {
        self.observe(obj).await;
        let script = self.script.lock().unwrap().clone();
        match script {
            Script::Succeed => Ok(Outcome::done().with_state(serde_json::json!({"seen": obj.name_any()}))),
            Script::Fail(msg) => Err(ActuatorError::new(msg)),
            Script::FailTimes(n, msg) => {
                if self.failures.fetch_add(1, Ordering::SeqCst) < n {
                    Err(ActuatorError::new(msg))
                } else {
                    Ok(Outcome::done())
                }
            }
            Script::Sleep(d) => {
                tokio::time::sleep(d).await;
                Ok(Outcome::done())
            }
            Script::RequeueTimes(n) => {
                if self.failures.fetch_add(1, Ordering::SeqCst) < n {
                    Ok(Outcome::done().requeue(Duration::from_millis(300)))
                } else {
                    Ok(Outcome::done())
                }
            }
        }
    }
}

impl<K: ExtensionResource<Output = ()>> Actuator<K> for Scripted {
    async fn reconcile(&self, obj: &K, _: &ClusterContext) -> Result<Outcome<K>, ActuatorError> {
        self.counts.reconcile.fetch_add(1, Ordering::SeqCst);
        self.run(obj).await
    }
    async fn delete(&self, obj: &K, _: &ClusterContext) -> Result<(), ActuatorError> {
        self.counts.delete.fetch_add(1, Ordering::SeqCst);
        self.run(obj).await.map(|_| ())
    }
    async fn force_delete(&self, obj: &K, _: &ClusterContext) -> Result<(), ActuatorError> {
        self.counts.force_delete.fetch_add(1, Ordering::SeqCst);
        self.run(obj).await.map(|_| ())
    }
    async fn migrate(&self, obj: &K, _: &ClusterContext) -> Result<Outcome<K>, ActuatorError> {
        self.counts.migrate.fetch_add(1, Ordering::SeqCst);
        self.run(obj).await
    }
    async fn restore(&self, obj: &K, _: &ClusterContext) -> Result<Outcome<K>, ActuatorError> {
        self.counts.restore.fetch_add(1, Ordering::SeqCst);
        self.run(obj).await
    }
}

/// A fast-retrying controller config for `TYPE`.
pub fn config() -> ControllerConfig {
    ControllerConfig::new([TYPE]).backoff(runtime::backoff::BackoffConfig {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(2),
        jitter: 0.1,
    })
}

/// A running controller; stops when dropped.
pub struct Running {
    pub metrics: Metrics,
    stop: Option<futures_stop::Sender>,
    pub handle: tokio::task::JoinHandle<()>,
}

mod futures_stop {
    pub type Sender = futures::channel::oneshot::Sender<()>;
}

impl Running {
    pub async fn stop(mut self) {
        drop(self.stop.take());
        let _ = tokio::time::timeout(Duration::from_secs(30), &mut self.handle).await;
    }
}

/// Starts a controller for kind `K` with `actuator`.
pub fn start<K: ExtensionResource, A: Actuator<K>>(client: &Client, actuator: A, config: ControllerConfig) -> Running {
    let metrics = Metrics::standalone("test").unwrap();
    let controller = ExtensionController::new(client.clone(), actuator, config, metrics.clone());
    let (tx, stop): (_, Stop) = stop_signal();
    Running { metrics, stop: Some(tx), handle: tokio::spawn(controller.run(stop)) }
}

/// Polls `probe` every 50 ms until it returns `Some`, for at most 30 s.
pub async fn eventually<T, Fut: Future<Output = Option<T>>>(what: &str, probe: impl FnMut() -> Fut) -> T {
    testenv::poll::until_some(what, Duration::from_secs(30), Duration::from_millis(50), probe).await
}

/// Waits until the object's last operation has the given type and state.
pub async fn wait_state<K: ExtensionResource>(
    api: &Api<K>,
    name: &str,
    op: LastOperationType,
    state: LastOperationState,
) -> K {
    eventually(&format!("{name} to be {op} {state}"), || async {
        let obj = api.get_opt(name).await.ok().flatten()?;
        let last = obj.default_status().and_then(|s| s.last_operation.clone())?;
        (last.type_ == op && last.state == state).then_some(obj)
    })
    .await
}

/// Waits until the controller has run at least one more reconcile than `before`.
pub async fn reconciled_since(metrics: &Metrics, kind: &str, before: u64) -> u64 {
    eventually("another reconcile", || async {
        let now = metrics.reconciliations(kind);
        (now > before).then_some(now)
    })
    .await
}

/// The status of an object as JSON.
pub fn status_json<K: ExtensionKind>(obj: &K) -> serde_json::Value {
    serde_json::to_value(obj.ext_status()).unwrap()
}
