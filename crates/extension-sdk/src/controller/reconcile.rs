//! One reconcile: read (object, Cluster) → decide → write (metadata, status, actuator call,
//! events, metrics). The order of writes is the contract's:
//!
//! * Create/Reconcile/Restore: Processing, then add the finalizer and drop a `reconcile`
//!   annotation (one patch), actuator, Succeeded or Error; a `restore` annotation goes after
//!   success.
//! * Delete: Processing, actuator, Succeeded, finalizer removed.
//! * Migrate: Processing, actuator's migrate (never delete), Succeeded, then finalizer and
//!   `migrate` annotation removed together.

use super::decide::{Action, ClusterView, Filter, Plan, SkipReason, decide};
use super::{Context, status};
use crate::actuator::{Actuator, ActuatorError, Outcome};
use crate::cluster::ClusterContext;
use crate::kinds::ExtensionResource;
use api::common::LastOperationType;
use api::helpers::constants::ANNOTATION_OPERATION;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action as Requeue;
use kube::{Resource, ResourceExt};
use runtime::events::event_message;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// Failures of the SDK itself (not of the actuator, which end up in the status).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading Cluster {name}")]
    ReadCluster {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("Cluster {0} does not exist")]
    ClusterMissing(String),
    #[error("{what} of {object}")]
    Write {
        what: &'static str,
        object: String,
        #[source]
        source: kube::Error,
    },
    #[error("{object} changed while it was being reconciled")]
    Conflict { object: String },
    #[error("encoding the status of {object}")]
    Encode {
        object: String,
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    /// Stable PascalCase reason for events and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::ReadCluster { .. } => "ReadClusterFailed",
            Self::ClusterMissing(_) => "ClusterMissing",
            Self::Write { .. } => "WriteFailed",
            Self::Conflict { .. } => "Conflict",
            Self::Encode { .. } => "EncodeFailed",
        }
    }
}

/// The `kube::runtime` reconciler.
pub(crate) async fn reconcile<K: ExtensionResource, A: Actuator<K>>(
    guard: Arc<DeserializeGuard<K>>,
    ctx: Arc<Context<K, A>>,
) -> Result<Requeue, Error> {
    let span = tracing::info_span!(
        "reconcile",
        kind = %ctx.kind,
        namespace = guard.meta().namespace.as_deref().unwrap_or(""),
        name = guard.meta().name.as_deref().unwrap_or(""),
    );
    async move {
        ctx.metrics.reconcile_started(&ctx.kind);
        let started = Instant::now();
        let result = match &guard.0 {
            Ok(obj) => reconcile_object(obj, &ctx).await,
            Err(invalid) => {
                tracing::error!(error = %invalid.error, "object cannot be decoded; ignoring it");
                ctx.metrics.reconcile_failed(&ctx.kind, "InvalidObject");
                let message = runtime::events::truncate(&format!("cannot decode object: {}", invalid.error), 1024);
                ctx.events.warn(&*guard, "InvalidObject", "Decode", message).await;
                Ok(Requeue::await_change())
            }
        };
        ctx.metrics.observe_duration(&ctx.kind, started.elapsed().as_secs_f64());
        result
    }
    .instrument(span)
    .await
}

/// The `kube::runtime` error policy: SDK failures are retried with the per-object backoff.
pub(crate) fn error_policy<K: ExtensionResource, A: Actuator<K>>(
    guard: Arc<DeserializeGuard<K>>,
    err: &Error,
    ctx: Arc<Context<K, A>>,
) -> Requeue {
    let key = object_key(guard.meta());
    if matches!(err, Error::Conflict { .. }) {
        tracing::debug!(error = %err, "conflict; retrying with the current object");
        return Requeue::requeue(Duration::from_millis(200 + fastrand::u64(0..300)));
    }
    tracing::warn!(error = %runtime::events::error_chain(err), "reconcile failed");
    ctx.metrics.reconcile_failed(&ctx.kind, err.reason());
    let message = event_message(err);
    let reason = err.reason();
    let events = ctx.events.clone();
    tokio::spawn(async move { events.warn(&*guard, reason, "Reconcile", message).await });
    Requeue::requeue(ctx.backoff.failed(&key))
}

fn object_key(meta: &kube::api::ObjectMeta) -> String {
    meta.uid.clone().unwrap_or_else(|| {
        format!("{}/{}", meta.namespace.as_deref().unwrap_or(""), meta.name.as_deref().unwrap_or(""))
    })
}

fn describe<K: ExtensionResource>(obj: &K) -> String {
    match obj.namespace() {
        Some(ns) => format!("{} {ns}/{}", K::kind(&()), obj.name_any()),
        None => format!("{} {}", K::kind(&()), obj.name_any()),
    }
}

fn now() -> Time {
    Time(Timestamp::now())
}

async fn reconcile_object<K: ExtensionResource, A: Actuator<K>>(
    obj: &K,
    ctx: &Context<K, A>,
) -> Result<Requeue, Error> {
    let filter = Filter {
        types: &ctx.config.types,
        class: ctx.config.class,
        mode: ctx.config.mode,
        migratable: K::MIGRATABLE,
        finalizer: &ctx.finalizer,
    };
    let key = object_key(obj.meta());
    let mut cluster = ClusterContext::none();
    let mut view = ClusterView::NotLoaded;
    // The watch cache may lag behind this controller's own last writes (a reconcile queued by
    // the Processing write can start before the Succeeded write is in the cache). Deciding to
    // act is therefore confirmed on a fresh read, which costs one GET only when acting.
    let mut current: Option<K> = None;
    let plan = loop {
        let obj = current.as_ref().unwrap_or(obj);
        match decide(obj.meta(), obj.default_spec(), obj.default_status(), view, &filter) {
            Action::LoadCluster => {
                (cluster, view) = load_cluster(obj, ctx, &key).await?;
            }
            Action::Skip(reason) => {
                tracing::debug!(reason = reason.as_str(), "nothing to do");
                if reason == SkipReason::UpToDate {
                    ctx.backoff.reset(&key);
                }
                return Ok(Requeue::await_change());
            }
            Action::Wait => {
                tracing::debug!("waiting for state (wait-for-state)");
                return Ok(Requeue::await_change());
            }
            Action::Act(plan) if current.is_some() => break plan,
            Action::Act(_) => {
                let api = K::api(ctx.client.clone(), obj.namespace().as_deref());
                match api.get_opt(&obj.name_any()).await {
                    Ok(Some(fresh)) => current = Some(fresh),
                    Ok(None) => return Ok(Requeue::await_change()),
                    Err(source) => return Err(Error::Write { what: "reading", object: describe(obj), source }),
                }
            }
        }
    };
    let obj = current.as_ref().unwrap_or(obj);
    if !plan.fresh
        && let Some(remaining) = ctx.backoff.remaining(&key)
    {
        tracing::debug!(?remaining, operation = %plan.operation, "retry not due yet");
        return Ok(Requeue::requeue(remaining));
    }
    tracing::info!(operation = %plan.operation, "acting");
    let fingerprint = cluster.exists().then(|| cluster.fingerprint());
    let requeue = execute(obj.clone(), &plan, &cluster, ctx, &key).await?;
    if requeue.is_none()
        && let Some(fp) = fingerprint
    {
        ctx.cluster_seen.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone(), fp);
    }
    Ok(requeue.map_or_else(Requeue::await_change, Requeue::requeue))
}

async fn load_cluster<K: ExtensionResource, A>(
    obj: &K,
    ctx: &Context<K, A>,
    key: &str,
) -> Result<(ClusterContext, ClusterView), Error> {
    let Some(name) = obj.cluster_name() else {
        return Ok((ClusterContext::none(), ClusterView::Absent));
    };
    let found = ClusterContext::read(&ctx.client, &name)
        .await
        .map_err(|source| Error::ReadCluster { name: name.clone(), source })?;
    match found {
        Some(c) => {
            let seen = ctx.cluster_seen.lock().unwrap_or_else(|p| p.into_inner()).get(key).copied();
            let view = ClusterView::Loaded { failed: c.is_failed(), changed: seen != Some(c.fingerprint()) };
            Ok((c, view))
        }
        // A namespaced object needs its Cluster, except to be cleaned up; a BackupEntry may have none.
        None if obj.namespace().is_none() || obj.meta().deletion_timestamp.is_some() => {
            Ok((ClusterContext::none(), ClusterView::Absent))
        }
        None => Err(Error::ClusterMissing(name)),
    }
}

/// Runs the plan. `Ok(Some(d))`: call again after `d` (requeue or backoff); `Ok(None)`: done.
async fn execute<K: ExtensionResource, A: Actuator<K>>(
    mut obj: K,
    plan: &Plan,
    cluster: &ClusterContext,
    ctx: &Context<K, A>,
    key: &str,
) -> Result<Option<Duration>, Error> {
    let op = plan.operation;
    // Processing goes first: once a request's annotation is gone, a deployer must already see
    // the operation running, never the previous success.
    obj = write_status(ctx, &obj, |s| status::processing(K::default_status_of_mut(s), op, &ctx.kind, &now())).await?;
    if matches!(op, LastOperationType::Create | LastOperationType::Reconcile | LastOperationType::Restore) {
        let add = !obj.finalizers().contains(&ctx.finalizer);
        let remove = plan.remove_reconcile_annotation.then_some(ANNOTATION_OPERATION);
        if add || remove.is_some() {
            let mut finalizers = obj.finalizers().to_vec();
            if add {
                finalizers.push(ctx.finalizer.clone());
            }
            obj = patch_metadata(ctx, &obj, Some(finalizers), remove).await?;
        }
    }

    let result = match tokio::time::timeout(ctx.timeout, call_actuator(ctx, &obj, cluster, plan)).await {
        Ok(r) => r.map_err(|e| (e, false)),
        Err(_) => Err((ActuatorError::new(format!("{op} did not finish within {:?}", ctx.timeout)), true)),
    };
    let outcome = match result {
        Ok(outcome) => outcome,
        Err((e, _)) if e.requeue().is_some() => {
            let after = e.requeue().unwrap_or_default();
            let generation = obj.meta().generation;
            write_status(ctx, &obj, |s| {
                status::requeued(K::default_status_of_mut(s), op, &ctx.kind, generation, &now())
            })
            .await?;
            ctx.backoff.requeue(key, after);
            return Ok(Some(after));
        }
        Err((e, timed_out)) => return fail(ctx, &obj, op, &e, timed_out, key).await,
    };
    let mut outcome = outcome.unwrap_or_default();
    let requeue_after = outcome.requeue_after;

    // Everything the actuator returned goes into the status in one write.
    let mut desired = obj.ext_status().cloned().unwrap_or_default();
    apply_outcome::<K>(&mut desired, &mut outcome);
    if let Some(output) = outcome.output.take()
        && let Err(e) = K::apply_output(&ctx.client, &obj, output, &mut desired).await
    {
        return fail(ctx, &obj, op, &ActuatorError::context("storing the actuator's output", e), false, key).await;
    }
    let generation = obj.meta().generation;
    let t = now();
    if let Some(after) = requeue_after {
        status::requeued(K::default_status_of_mut(&mut desired), op, &ctx.kind, generation, &t);
        write_status(ctx, &obj, |s| *s = desired).await?;
        ctx.backoff.requeue(key, after);
        return Ok(Some(after));
    }
    let description = outcome.description.take();
    status::succeeded(K::default_status_of_mut(&mut desired), op, &ctx.kind, generation, description.as_deref(), &t);
    obj = write_status(ctx, &obj, |s| *s = desired).await?;
    ctx.backoff.reset(key);
    tracing::info!(operation = %op, "succeeded");

    match op {
        LastOperationType::Delete | LastOperationType::Migrate => {
            K::cleanup(&ctx.client, &obj).await.map_err(|source| Error::Write {
                what: "cleaning up",
                object: describe(&obj),
                source,
            })?;
            let finalizers: Vec<String> = obj.finalizers().iter().filter(|f| **f != ctx.finalizer).cloned().collect();
            patch_metadata(ctx, &obj, Some(finalizers), plan.remove_annotation_after.map(|_| ANNOTATION_OPERATION))
                .await?;
            ctx.cluster_seen.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
        }
        _ => {
            if plan.remove_annotation_after.is_some() {
                patch_metadata(ctx, &obj, None, Some(ANNOTATION_OPERATION)).await?;
            }
        }
    }
    Ok(None)
}

async fn call_actuator<K: ExtensionResource, A: Actuator<K>>(
    ctx: &Context<K, A>,
    obj: &K,
    cluster: &ClusterContext,
    plan: &Plan,
) -> Result<Option<Outcome<K>>, ActuatorError> {
    let a = &ctx.actuator;
    match plan.operation {
        LastOperationType::Create | LastOperationType::Reconcile => a.reconcile(obj, cluster).await.map(Some),
        LastOperationType::Restore => a.restore(obj, cluster).await.map(Some),
        LastOperationType::Migrate => a.migrate(obj, cluster).await.map(Some),
        LastOperationType::Delete if plan.force => a.force_delete(obj, cluster).await.map(|()| None),
        LastOperationType::Delete => a.delete(obj, cluster).await.map(|()| None),
    }
}

fn apply_outcome<K: ExtensionResource>(status: &mut K::Status, outcome: &mut Outcome<K>) {
    if let Some(f) = outcome.take_status_fn() {
        f(status);
    }
    let d = K::default_status_of_mut(status);
    if let Some(state) = outcome.state.take() {
        d.state = Some(state.into());
    }
    if let Some(resources) = outcome.resources.take() {
        d.resources = resources;
    }
    if let Some(ps) = outcome.provider_status.take() {
        d.provider_status = Some(ps.into());
    }
}

/// Records an actuator failure: Error status with codes, a Warning event, the error metric and
/// the next attempt after the object's backoff.
async fn fail<K: ExtensionResource, A>(
    ctx: &Context<K, A>,
    obj: &K,
    op: LastOperationType,
    err: &ActuatorError,
    timed_out: bool,
    key: &str,
) -> Result<Option<Duration>, Error> {
    let reason = format!("{op}{}", if timed_out { "TimedOut" } else { "Failed" });
    let message = event_message(err);
    tracing::warn!(operation = %op, reason = %reason, codes = ?err.codes(), error = %message, "actuator failed");
    let generation = obj.meta().generation;
    // Counted before the status is written: whoever sees the Error status sees the count too.
    ctx.metrics.reconcile_failed(&ctx.kind, &reason);
    write_status(ctx, obj, |s| {
        status::failed(K::default_status_of_mut(s), op, &ctx.kind, generation, &message, err.codes(), &now())
    })
    .await?;
    ctx.events.warn(obj, &reason, &op.to_string(), message).await;
    Ok(Some(ctx.backoff.failed(key)))
}

/// Patches the status subresource with the merge patch from the current to the changed status;
/// writes nothing when nothing changed.
async fn write_status<K: ExtensionResource, A>(
    ctx: &Context<K, A>,
    obj: &K,
    change: impl FnOnce(&mut K::Status),
) -> Result<K, Error> {
    let encode = |source| Error::Encode { object: describe(obj), source };
    let current = serde_json::to_value(obj.ext_status()).map_err(encode)?;
    let mut desired = obj.ext_status().cloned().unwrap_or_default();
    change(&mut desired);
    let desired = serde_json::to_value(&desired).map_err(encode)?;
    let Some(patch) = status::merge_patch(&current, &desired) else {
        return Ok(obj.clone());
    };
    let api = K::api(ctx.client.clone(), obj.namespace().as_deref());
    let params = PatchParams { field_manager: Some(ctx.field_manager.clone()), ..Default::default() };
    api.patch_status(&obj.name_any(), &params, &Patch::Merge(json!({ "status": patch })))
        .await
        .map_err(|source| classify(source, "writing the status", obj))
}

/// Sets the finalizers and/or removes an annotation, guarded by the object's resourceVersion.
async fn patch_metadata<K: ExtensionResource, A>(
    ctx: &Context<K, A>,
    obj: &K,
    finalizers: Option<Vec<String>>,
    remove_annotation: Option<&str>,
) -> Result<K, Error> {
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), json!(obj.resource_version()));
    if let Some(f) = finalizers {
        meta.insert("finalizers".into(), json!(f));
    }
    if let Some(a) = remove_annotation {
        meta.insert("annotations".into(), json!({ a: Value::Null }));
    }
    let api = K::api(ctx.client.clone(), obj.namespace().as_deref());
    let params = PatchParams { field_manager: Some(ctx.field_manager.clone()), ..Default::default() };
    api.patch(&obj.name_any(), &params, &Patch::Merge(json!({ "metadata": meta })))
        .await
        .map_err(|source| classify(source, "updating finalizers/annotations", obj))
}

fn classify<K: ExtensionResource>(source: kube::Error, what: &'static str, obj: &K) -> Error {
    match source {
        kube::Error::Api(s) if s.code == 409 => Error::Conflict { object: describe(obj) },
        source => Error::Write { what, object: describe(obj), source },
    }
}
