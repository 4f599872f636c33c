//! An actuator wrapper that records every call (what the actuator was given and what it
//! returned), so that tests can check the contract around the actuator.

use crate::actuator::{Actuator, ActuatorError, Outcome};
use crate::cluster::ClusterContext;
use crate::kinds::ExtensionResource;
use api::helpers::constants::ANNOTATION_OPERATION;
use kube::ResourceExt;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Which actuator method was called.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CallKind {
    Reconcile,
    Delete,
    ForceDelete,
    Migrate,
    Restore,
}

/// One recorded actuator call: what the actuator was given and what it returned.
#[derive(Clone, Debug)]
pub struct Call {
    pub kind: CallKind,
    pub name: String,
    /// `status.state` of the object the actuator received.
    pub state: Option<Value>,
    /// `status.state` the actuator returned, if it set one.
    pub returned_state: Option<Value>,
    pub had_finalizer: bool,
    /// The operation annotation the object still carried.
    pub annotation: Option<String>,
    pub ok: bool,
    /// The call succeeded but asked to be called again (`Outcome::requeue`): the operation goes
    /// on, so the call does not complete a step.
    pub requeued: bool,
}

/// The calls made to a [`Recording`] actuator. Cheap to clone; clones share the log.
#[derive(Clone, Debug, Default)]
pub struct CallLog(Arc<Mutex<Vec<Call>>>);

impl CallLog {
    fn push(&self, call: Call) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(call);
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many calls of this kind completed their operation (calls that asked to be called
    /// again are part of the operation that follows them, and not counted).
    pub fn count(&self, kind: CallKind) -> usize {
        self.calls().iter().filter(|c| c.kind == kind && !c.requeued).count()
    }

    /// How many calls were made.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Wraps an actuator and records every call into a [`CallLog`].
#[derive(Debug)]
pub struct Recording<A> {
    inner: A,
    log: CallLog,
}

fn requeued<K: ExtensionResource>(r: &Result<Outcome<K>, ActuatorError>) -> bool {
    r.as_ref().is_ok_and(|o| o.requeue_after.is_some())
}

impl<A> Recording<A> {
    pub fn new(inner: A, log: CallLog) -> Self {
        Self { inner, log }
    }
}

fn call_of<K: ExtensionResource>(kind: CallKind, obj: &K, finalizer: &str) -> Call {
    Call {
        kind,
        name: obj.name_any(),
        state: obj.default_status().and_then(|s| s.state.clone()).map(|s| s.0),
        returned_state: None,
        had_finalizer: obj.finalizers().iter().any(|f| f == finalizer),
        annotation: obj.annotations().get(ANNOTATION_OPERATION).cloned(),
        ok: false,
        requeued: false,
    }
}

impl<A> Recording<A> {
    fn record<T>(&self, mut call: Call, result: &Result<T, ActuatorError>, state: Option<&Value>, requeued: bool) {
        call.requeued = requeued;
        call.ok = result.is_ok();
        call.returned_state = state.cloned();
        self.log.push(call);
    }
}

impl<K: ExtensionResource, A: Actuator<K>> Actuator<K> for Recording<A> {
    async fn reconcile(&self, obj: &K, cluster: &ClusterContext) -> Result<Outcome<K>, ActuatorError> {
        let call = call_of(CallKind::Reconcile, obj, &K::finalizer());
        let r = self.inner.reconcile(obj, cluster).await;
        self.record(call, &r, r.as_ref().ok().and_then(|o| o.state.as_ref()), requeued(&r));
        r
    }

    async fn delete(&self, obj: &K, cluster: &ClusterContext) -> Result<(), ActuatorError> {
        let call = call_of(CallKind::Delete, obj, &K::finalizer());
        let r = self.inner.delete(obj, cluster).await;
        self.record(call, &r, None, false);
        r
    }

    async fn force_delete(&self, obj: &K, cluster: &ClusterContext) -> Result<(), ActuatorError> {
        let call = call_of(CallKind::ForceDelete, obj, &K::finalizer());
        let r = self.inner.force_delete(obj, cluster).await;
        self.record(call, &r, None, false);
        r
    }

    async fn migrate(&self, obj: &K, cluster: &ClusterContext) -> Result<Outcome<K>, ActuatorError> {
        let call = call_of(CallKind::Migrate, obj, &K::finalizer());
        let r = self.inner.migrate(obj, cluster).await;
        self.record(call, &r, r.as_ref().ok().and_then(|o| o.state.as_ref()), requeued(&r));
        r
    }

    async fn restore(&self, obj: &K, cluster: &ClusterContext) -> Result<Outcome<K>, ActuatorError> {
        let call = call_of(CallKind::Restore, obj, &K::finalizer());
        let r = self.inner.restore(obj, cluster).await;
        self.record(call, &r, r.as_ref().ok().and_then(|o| o.state.as_ref()), requeued(&r));
        r
    }
}
