//! Conformance harness for extension authors (feature `testing`).
//!
//! [`Conformance`] takes an actuator and a sample object, starts a real etcd and kube-apiserver
//! (from `KUBEBUILDER_ASSETS`, see `testenv`), runs an [`ExtensionController`] with the
//! actuator, drives the object through its whole lifecycle with the [`Deployer`] (as gardenlet
//! would) and checks the contract at every step:
//!
//! create → ten no-op updates → spec update → explicit reconcile request → migrate → (the
//! migrated object is left alone and deleted without a Delete) → restore (the state
//! round-trips exactly) → delete → gone.
//!
//! ```no_run
//! # async fn t() {
//! # use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
//! # use extension_sdk::api::extensions::Infrastructure;
//! # struct My;
//! # impl Actuator<Infrastructure> for My {
//! #   async fn reconcile(&self, _: &Infrastructure, _: &ClusterContext) -> Result<Outcome<Infrastructure>, ActuatorError> { Ok(Outcome::done()) }
//! #   async fn delete(&self, _: &Infrastructure, _: &ClusterContext) -> Result<(), ActuatorError> { Ok(()) }
//! # }
//! # use extension_sdk::api::extensions::{DefaultSpec, InfrastructureSpec};
//! let mut sample = Infrastructure::new(
//!     "demo",
//!     InfrastructureSpec {
//!         default: DefaultSpec { type_: "example".into(), ..Default::default() },
//!         region: "local".into(),
//!         ..Default::default()
//!     },
//! );
//! sample.metadata.namespace = Some("shoot--dev--demo".into());
//! let report = extension_sdk::testing::Conformance::new(My, sample)
//!     .with_spec_update(|infra| infra.spec.region = "other".into())
//!     .run()
//!     .await
//!     .unwrap_or_else(|e| panic!("{e}"));
//! println!("{report}");
//! # }
//! ```

use crate::actuator::Actuator;
use crate::controller::{ControllerConfig, ExtensionController};
use crate::deployer::Deployer;
use crate::kinds::{ExtensionResource, kind_name};
use crate::metrics::Metrics;
use crate::runner::stop_signal;
use api::common::{LastOperationState, LastOperationType};
use api::helpers::constants::{ANNOTATION_OPERATION, ANNOTATION_TIMESTAMP};
use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

pub use testenv;

mod cluster;
mod recording;

pub use cluster::{TestCluster, sample_shoot};
pub use recording::{Call, CallKind, CallLog, Recording};

/// A contract violation (or a setup failure), naming the lifecycle step.
#[derive(Debug, thiserror::Error)]
#[error("conformance step `{step}`: {message}")]
pub struct ConformanceError {
    pub step: String,
    pub message: String,
}

pub(crate) fn err(step: &str, message: impl fmt::Display) -> ConformanceError {
    ConformanceError { step: step.into(), message: message.to_string() }
}

macro_rules! ensure {
    ($cond:expr, $step:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(err($step, format!($($msg)+)));
        }
    };
}

/// What a conformance run measured.
#[derive(Clone, Debug)]
pub struct Report {
    pub kind: String,
    /// Each lifecycle step and how long it took.
    pub steps: Vec<(String, Duration)>,
    /// Environment start-up plus every step.
    pub total: Duration,
    /// Actuator calls by kind.
    pub calls: BTreeMap<String, usize>,
    /// Actuator calls caused by the ten no-op updates (the contract says zero).
    pub noop_calls: usize,
    /// Reconciles the controller ran for the no-op updates (each one skipped).
    pub noop_reconciles: u64,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "conformance of {}: passed in {:.1?}", self.kind, self.total)?;
        for (step, d) in &self.steps {
            writeln!(f, "  {step:<28} {d:.1?}")?;
        }
        writeln!(f, "  actuator calls: {:?}", self.calls)?;
        write!(f, "  no-op updates: {} reconciles, {} actuator calls", self.noop_reconciles, self.noop_calls)
    }
}

type Update<K> = Box<dyn Fn(&mut K) + Send + Sync>;

type MakeActuator<A> = Box<dyn FnOnce(Client) -> A + Send>;

/// Gives the client the controller and the actuator act as, in a started test cluster (for
/// example a ServiceAccount bound by the extension's chart); see [`Conformance::with_identity`].
type Identity = Box<dyn for<'a> FnOnce(&'a TestCluster) -> BoxFuture<'a, Result<Client, String>> + Send>;

/// The conformance run for one actuator and one sample object.
pub struct Conformance<K: ExtensionResource, A> {
    actuator: MakeActuator<A>,
    sample: K,
    update: Option<Update<K>>,
    shoot: Option<Value>,
    step_timeout: Duration,
    identity: Option<Identity>,
}

impl<K: ExtensionResource, A> fmt::Debug for Conformance<K, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conformance").field("sample", &self.sample).finish_non_exhaustive()
    }
}

impl<K: ExtensionResource, A: Actuator<K>> Conformance<K, A> {
    /// `sample` needs a name, a namespace for namespaced kinds, and a spec the actuator accepts.
    pub fn new(actuator: A, sample: K) -> Self
    where
        A: Send,
    {
        Self::with_client(move |_| actuator, sample)
    }

    /// Like [`Conformance::new`] for an actuator that needs a client of the test cluster.
    pub fn with_client(make: impl FnOnce(Client) -> A + Send + 'static, sample: K) -> Self {
        Self {
            actuator: Box::new(make),
            sample,
            update: None,
            shoot: None,
            step_timeout: Duration::from_secs(60),
            identity: None,
        }
    }

    /// Runs the controller and the actuator as the client `identity` gives (default: the
    /// cluster's admin), so the run also proves the extension's RBAC; the suite's own reads and
    /// writes stay the admin's.
    pub fn with_identity(
        mut self,
        identity: impl for<'a> FnOnce(&'a TestCluster) -> BoxFuture<'a, Result<Client, String>> + Send + 'static,
    ) -> Self {
        self.identity = Some(Box::new(identity));
        self
    }

    /// A spec change for the "spec update" step (without one, that step redeploys unchanged).
    pub fn with_spec_update(mut self, update: impl Fn(&mut K) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(update));
        self
    }

    /// The Shoot the Cluster carries (default: [`sample_shoot`] of the sample's type).
    pub fn with_shoot(mut self, shoot: Value) -> Self {
        self.shoot = Some(shoot);
        self
    }

    /// How long each step may take.
    pub fn with_step_timeout(mut self, timeout: Duration) -> Self {
        self.step_timeout = timeout;
        self
    }

    /// Runs the lifecycle and checks the contract.
    pub async fn run(self) -> Result<Report, ConformanceError> {
        let started = Instant::now();
        let tc = TestCluster::start().await?;
        let mut steps = vec![("start apiserver".to_string(), started.elapsed())];
        let type_ = self.sample.default_spec().type_.clone();
        if let Some(ns) = self.sample.namespace() {
            tc.namespace(&ns).await?;
        }
        if let Some(cluster) = self.sample.cluster_name() {
            tc.cluster(&cluster, self.shoot.clone().unwrap_or_else(|| sample_shoot(&type_))).await?;
        }
        let acting = match self.identity {
            Some(identity) => identity(&tc).await.map_err(|e| err("setup", e))?,
            None => tc.client.clone(),
        };
        let log = CallLog::default();
        let metrics = Metrics::standalone("conformance").map_err(|e| err("setup", e))?;
        let config = ControllerConfig::new([type_]).backoff(runtime::backoff::BackoffConfig {
            initial: Duration::from_millis(200),
            max: Duration::from_secs(5),
            jitter: 0.1,
        });
        let controller = ExtensionController::new(
            acting.clone(),
            Recording::new((self.actuator)(acting), log.clone()),
            config,
            metrics.clone(),
        );
        let (stop_tx, stop) = stop_signal();
        let handle = tokio::spawn(controller.run(stop));
        let run = Run {
            tc: &tc,
            log: &log,
            metrics: &metrics,
            deployer: Deployer::new(tc.client.clone()).with_timeout(self.step_timeout),
        };
        let result = run.lifecycle(self.sample, self.update.as_deref(), &mut steps).await;
        drop(stop_tx);
        let _ = tokio::time::timeout(Duration::from_secs(10), handle).await;
        let (noop_calls, noop_reconciles) = result?;
        let mut calls = BTreeMap::new();
        for c in log.calls().iter().filter(|c| !c.requeued) {
            *calls.entry(format!("{:?}", c.kind)).or_insert(0) += 1;
        }
        Ok(Report { kind: kind_name::<K>(), steps, total: started.elapsed(), calls, noop_calls, noop_reconciles })
    }
}

struct Run<'a> {
    tc: &'a TestCluster,
    log: &'a CallLog,
    metrics: &'a Metrics,
    deployer: Deployer,
}

/// Checks the status after a successful operation `op`.
fn check_succeeded<K: ExtensionResource>(step: &str, obj: &K, op: LastOperationType) -> Result<(), ConformanceError> {
    let status = obj.default_status().ok_or_else(|| err(step, "no status"))?;
    let last = status.last_operation.as_ref().ok_or_else(|| err(step, "no lastOperation"))?;
    ensure!(
        last.type_ == op && last.state == LastOperationState::Succeeded,
        step,
        "lastOperation is {} {}, want {op} Succeeded",
        last.type_,
        last.state
    );
    ensure!(last.progress == 100, step, "progress {} after success", last.progress);
    ensure!(status.last_error.is_none(), step, "lastError left after success: {:?}", status.last_error);
    ensure!(
        status.observed_generation == obj.meta().generation,
        step,
        "observedGeneration {:?} != generation {:?}",
        status.observed_generation,
        obj.meta().generation
    );
    ensure!(
        !obj.annotations().contains_key(ANNOTATION_OPERATION),
        step,
        "operation annotation left: {:?}",
        obj.annotations().get(ANNOTATION_OPERATION)
    );
    if let Some(ts) = obj.annotations().get(ANNOTATION_TIMESTAMP)
        && let Ok(requested) = ts.parse::<Timestamp>()
    {
        ensure!(
            last.last_update_time.0.as_second() >= requested.as_second(),
            step,
            "lastUpdateTime before the request timestamp"
        );
    }
    Ok(())
}

fn has_finalizer<K: ExtensionResource>(obj: &K) -> bool {
    obj.finalizers().iter().any(|f| *f == K::finalizer())
}

fn fresh<K: ExtensionResource>(sample: &K) -> K {
    let mut obj = sample.clone();
    let meta = obj.meta_mut();
    meta.uid = None;
    meta.resource_version = None;
    meta.generation = None;
    meta.creation_timestamp = None;
    meta.deletion_timestamp = None;
    meta.finalizers = None;
    meta.managed_fields = None;
    *obj.ext_status_mut() = None;
    obj
}

impl Run<'_> {
    async fn timed<T>(
        &self,
        steps: &mut Vec<(String, Duration)>,
        name: &str,
        f: impl Future<Output = Result<T, ConformanceError>>,
    ) -> Result<T, ConformanceError> {
        let started = Instant::now();
        let r = f.await?;
        steps.push((name.to_string(), started.elapsed()));
        Ok(r)
    }

    fn expect_calls(&self, step: &str, kind: CallKind, want: usize) -> Result<(), ConformanceError> {
        let have = self.log.count(kind);
        ensure!(
            have == want,
            step,
            "{kind:?} completed {have} time(s), want {want}; calls: {:?}",
            self.log.calls().iter().map(|c| c.kind).collect::<Vec<_>>()
        );
        Ok(())
    }

    /// Waits until the controller ran at least one more reconcile than `before`.
    async fn reconciled_since<K: ExtensionResource>(&self, step: &str, before: u64) -> Result<u64, ConformanceError> {
        let kind = kind_name::<K>();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = self.metrics.reconciliations(&kind);
            if now > before {
                return Ok(now);
            }
            ensure!(Instant::now() < deadline, step, "the controller did not see the update");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn lifecycle<K: ExtensionResource>(
        &self,
        sample: K,
        update: Option<&(dyn Fn(&mut K) + Send + Sync)>,
        steps: &mut Vec<(String, Duration)>,
    ) -> Result<(usize, u64), ConformanceError> {
        let d = &self.deployer;
        let ns = sample.namespace();
        let name = sample.name_any();
        let api = K::api(self.tc.client.clone(), ns.as_deref());
        let sample = fresh(&sample);

        let step = "create";
        let created =
            self.timed(steps, step, async { d.deploy_and_wait(&sample).await.map_err(|e| err(step, e)) }).await?;
        check_succeeded(step, &created, LastOperationType::Create)?;
        ensure!(has_finalizer(&created), step, "finalizer {} missing", K::finalizer());
        self.expect_calls(step, CallKind::Reconcile, 1)?;
        let first = &self.log.calls()[0];
        ensure!(first.had_finalizer, step, "the finalizer was not added before the actuator ran");
        ensure!(first.annotation.is_none(), step, "the reconcile annotation was not removed before the actuator ran");

        let step = "ten no-op updates";
        let calls_before = self.log.len();
        let reconciles_before = self.metrics.reconciliations(&kind_name::<K>());
        let mut seen = reconciles_before;
        let started = Instant::now();
        for i in 0..10 {
            let patch = json!({"metadata": {"labels": {"conformance.gardener.cloud/no-op": i.to_string()}}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(|e| err(step, e))?;
            seen = self.reconciled_since::<K>(step, seen).await?;
        }
        steps.push((step.into(), started.elapsed()));
        let noop_calls = self.log.len() - calls_before;
        ensure!(noop_calls == 0, step, "{noop_calls} actuator call(s) for no-op updates");
        let noop_reconciles = seen - reconciles_before;

        let step = "spec update";
        let mut updated = api.get(&name).await.map_err(|e| err(step, e))?;
        let generation = updated.meta().generation;
        if let Some(update) = update {
            update(&mut updated);
        }
        let updated = self
            .timed(steps, step, async { d.deploy_and_wait(&fresh(&updated)).await.map_err(|e| err(step, e)) })
            .await?;
        check_succeeded(step, &updated, LastOperationType::Reconcile)?;
        if update.is_some() {
            ensure!(updated.meta().generation > generation, step, "the update did not change the spec");
        }
        self.expect_calls(step, CallKind::Reconcile, 2)?;

        let step = "reconcile request";
        let requested = self
            .timed(steps, step, async {
                d.request_reconcile::<K>(ns.as_deref(), &name).await.map_err(|e| err(step, e))?;
                d.wait::<K>(ns.as_deref(), &name, Some(LastOperationType::Reconcile)).await.map_err(|e| err(step, e))
            })
            .await?;
        check_succeeded(step, &requested, LastOperationType::Reconcile)?;
        self.expect_calls(step, CallKind::Reconcile, 3)?;

        let mut last = requested;
        if K::MIGRATABLE {
            last = self.migrate_and_restore(&sample, steps).await?;
        }

        let step = "delete";
        self.timed(steps, step, async { d.delete_and_wait::<K>(ns.as_deref(), &name).await.map_err(|e| err(step, e)) })
            .await?;
        self.expect_calls(step, CallKind::Delete, 1)?;
        ensure!(api.get_opt(&name).await.map_err(|e| err(step, e))?.is_none(), step, "still exists");
        drop(last);
        Ok((noop_calls, noop_reconciles))
    }

    async fn migrate_and_restore<K: ExtensionResource>(
        &self,
        sample: &K,
        steps: &mut Vec<(String, Duration)>,
    ) -> Result<K, ConformanceError> {
        let d = &self.deployer;
        let ns = sample.namespace();
        let name = sample.name_any();
        let api = K::api(self.tc.client.clone(), ns.as_deref());

        let step = "migrate";
        let migrated = self
            .timed(steps, step, async { d.migrate_and_wait::<K>(ns.as_deref(), &name).await.map_err(|e| err(step, e)) })
            .await?
            .ok_or_else(|| err(step, "the object disappeared"))?;
        check_succeeded(step, &migrated, LastOperationType::Migrate)?;
        ensure!(!has_finalizer(&migrated), step, "the finalizer was not removed after migrate");
        self.expect_calls(step, CallKind::Migrate, 1)?;
        self.expect_calls(step, CallKind::Delete, 0)?;
        let migrate_call = self
            .log
            .calls()
            .into_iter()
            .find(|c| c.kind == CallKind::Migrate)
            .ok_or_else(|| err(step, "no migrate call"))?;
        ensure!(
            migrate_call.annotation.as_deref() == Some("migrate"),
            step,
            "the migrate annotation was removed before migrate succeeded"
        );
        let status = migrated.default_status().cloned().unwrap_or_default();
        let state = status.state.clone();
        let resources = status.resources.clone();

        let step = "migrated object left alone";
        let calls = self.log.len();
        let before = self.metrics.reconciliations(&kind_name::<K>());
        d.request_reconcile::<K>(ns.as_deref(), &name).await.map_err(|e| err(step, e))?;
        self.reconciled_since::<K>(step, before).await?;
        ensure!(self.log.len() == calls, step, "the actuator was called for a migrated object");
        self.timed(steps, "delete migrated object", async {
            d.delete_and_wait::<K>(ns.as_deref(), &name).await.map_err(|e| err("delete migrated object", e))
        })
        .await?;
        self.expect_calls("delete migrated object", CallKind::Delete, 0)?;

        let step = "restore";
        let restored = self
            .timed(steps, step, async {
                d.restore_and_wait(&fresh(sample), state.clone(), resources.clone()).await.map_err(|e| err(step, e))
            })
            .await?;
        check_succeeded(step, &restored, LastOperationType::Restore)?;
        ensure!(has_finalizer(&restored), step, "the finalizer was not added before restore");
        self.expect_calls(step, CallKind::Restore, 1)?;
        let call = self
            .log
            .calls()
            .into_iter()
            .find(|c| c.kind == CallKind::Restore)
            .ok_or_else(|| err(step, "no restore call"))?;
        let want_state = state.map(|s| s.0);
        ensure!(
            call.state == want_state,
            step,
            "restore received state {:?}, migrate left {:?}",
            call.state,
            want_state
        );
        ensure!(
            call.annotation.as_deref() == Some("restore"),
            step,
            "the restore annotation was removed before restore succeeded"
        );
        let status = restored.default_status().cloned().unwrap_or_default();
        let expected = call.returned_state.clone().or(want_state);
        ensure!(
            status.state.map(|s| s.0) == expected,
            step,
            "status.state after restore differs from the state restored"
        );
        drop(api);
        Ok(restored)
    }
}
