//! One shoot: **read** (seeds, the objects the shoot names, shoot counts from the caches) →
//! **decide** (the pure [`crate::decide::references::resolve`] and [`crate::decide::decide`],
//! under the state lock together with the reservation of the chosen seed) → **write** (`spec.seedName`, or the refusal in `status.lastOperation`, plus an Event).
//!
//! Writes carry the `resourceVersion` the decision was based on, so a decision made on a stale
//! object is refused by the API server (409) instead of overwriting a newer one.

use super::Context;
use super::state::{ShootKey, needs_scheduling};
use crate::decide::references::{self, Found};
use crate::decide::{Refusal, SeedName, decide};
use crate::metrics::{RESULT_SCHEDULED, RESULT_UNSCHEDULABLE};
use api::common::{LastOperation, LastOperationState, LastOperationType};
use api::core::{CloudProfile, ExposureClass, NamespacedCloudProfile, Seed, Shoot};
use api::helpers::cloudprofile_ref::{ProfileRef, profile_ref};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "gardener-scheduler";
pub const REASON_SCHEDULED: &str = "SchedulingSuccessful";
pub const REASON_FAILED: &str = "SchedulingFailed";
/// How soon a shoot is looked at again after a write conflict or while caches sync.
const SHORT_RETRY: Duration = Duration::from_millis(500);
/// Events carry at most 1 KiB of message.
const MAX_EVENT_MESSAGE: usize = 1024;

/// A decision that could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("writing spec.seedName={seed} to shoot {shoot}")]
    Place {
        shoot: ShootKey,
        seed: SeedName,
        #[source]
        source: kube::Error,
    },
    #[error("recording in the status of shoot {shoot} why it cannot be scheduled")]
    RecordRefusal {
        shoot: ShootKey,
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// A stable PascalCase name for Events and the error metric.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Place { .. } => "PlaceFailed",
            Self::RecordRefusal { .. } => "RecordRefusalFailed",
        }
    }
}

/// The reconcile entry point: schedules the shoot, and reports a failed write as a Warning event.
pub async fn reconcile(guard: Arc<DeserializeGuard<Shoot>>, ctx: Arc<Context>) -> Result<Action, Error> {
    let shoot = match &guard.0 {
        Ok(shoot) => shoot,
        Err(invalid) => {
            tracing::warn!(shoot = %ShootKey::from_meta(&invalid.metadata), error = %invalid, "cannot read the shoot; skipping it");
            return Ok(Action::await_change());
        }
    };
    let result = schedule(shoot, &ctx).await;
    if let Err(e) = &result {
        ctx.publish(&shoot.object_ref(&()), EventType::Warning, e.reason(), error_chain(e)).await;
    }
    result
}

/// After a failed write: count it and retry with the shoot's backoff.
pub fn error_policy(guard: Arc<DeserializeGuard<Shoot>>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.errors.with_label_values(&[error.reason()]).inc();
    let key = match &guard.0 {
        Ok(shoot) => ShootKey::of(shoot),
        Err(invalid) => ShootKey::from_meta(&invalid.metadata),
    };
    tracing::warn!(shoot = %key, error = %error_chain(error), "scheduling attempt failed");
    Action::requeue(ctx.next_backoff(&key))
}

#[tracing::instrument(skip_all, fields(shoot = %ShootKey::of(shoot)))]
async fn schedule(shoot: &Shoot, ctx: &Context) -> Result<Action, Error> {
    if !needs_scheduling(shoot) {
        return Ok(Action::await_change());
    }
    if !ctx.readiness.is_ready() {
        tracing::debug!(pending = ?ctx.readiness.pending(), "caches not synced yet");
        return Ok(Action::requeue(SHORT_RETRY));
    }
    let key = ShootKey::of(shoot);

    // Read.
    let seed_objects = ctx.seeds.state();
    let seeds: Vec<&Seed> = seed_objects.iter().filter_map(|s| s.0.as_ref().ok()).collect();
    let referenced = Referenced::lookup(shoot, ctx);

    // Decide, and reserve the chosen seed before anyone else decides.
    let decision = {
        let mut state = ctx.lock_state();
        let (now, timeout) = (Instant::now(), ctx.config.reservation_timeout());
        if state.expire(now, timeout) > 0 {
            tracing::warn!(
                "placements were not confirmed by the watch in time and no longer count against their seeds"
            );
        }
        if state.placed(&key) {
            return Ok(Action::await_change()); // this object predates our placement
        }
        if let Some(left) = state.reserved_for(&key, now, timeout) {
            return Ok(Action::requeue(left + SHORT_RETRY));
        }
        let started = Instant::now();
        let decision = references::resolve(shoot, &referenced.found())
            .and_then(|r| decide(shoot, &seeds, &*state, r.profile, r.exposure_class, &ctx.config));
        ctx.metrics.decision_duration.observe(started.elapsed().as_secs_f64());
        if let Ok(seed) = &decision {
            state.reserve(key.clone(), seed.as_str(), now);
        }
        decision
    };

    // Write.
    match decision {
        Ok(seed) => place(shoot, key, seed, ctx).await,
        Err(refusal) => refuse(shoot, key, refusal, ctx).await,
    }
}

/// The cache entries under the names the shoot uses; what they mean is decided by
/// [`references::resolve`].
#[derive(Default)]
struct Referenced {
    cloud_profile: Option<Arc<DeserializeGuard<CloudProfile>>>,
    namespaced_cloud_profile: Option<Arc<DeserializeGuard<NamespacedCloudProfile>>>,
    exposure_class: Option<Arc<DeserializeGuard<ExposureClass>>>,
}

impl Referenced {
    fn lookup(shoot: &Shoot, ctx: &Context) -> Self {
        let mut found = Self::default();
        match profile_ref(shoot) {
            Ok(ProfileRef::Cluster(name)) => found.cloud_profile = ctx.cloud_profiles.get(&ObjectRef::new(name)),
            Ok(ProfileRef::Namespaced { namespace, name }) => {
                found.namespaced_cloud_profile =
                    ctx.namespaced_cloud_profiles.get(&ObjectRef::new(name).within(namespace));
            }
            Err(_) => {} // resolve reports it
        }
        if let Some(name) = references::exposure_class_name(shoot) {
            found.exposure_class = ctx.exposure_classes.get(&ObjectRef::new(name));
        }
        found
    }

    fn found(&self) -> Found<'_> {
        Found {
            cloud_profile: self.cloud_profile.as_deref(),
            namespaced_cloud_profile: self.namespaced_cloud_profile.as_deref(),
            exposure_class: self.exposure_class.as_deref(),
        }
    }
}

async fn place(shoot: &Shoot, key: ShootKey, seed: SeedName, ctx: &Context) -> Result<Action, Error> {
    let api: Api<Shoot> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let patch = json!({
        "metadata": { "resourceVersion": shoot.resource_version() },
        "spec": { "seedName": seed.as_str() },
    });
    match api.patch(&key.name, &patch_params(), &Patch::Merge(&patch)).await {
        Ok(updated) => {
            ctx.lock_state().reset_attempts(&key);
            ctx.metrics.decisions.with_label_values(&[RESULT_SCHEDULED]).inc();
            tracing::info!(seed = %seed, "scheduled");
            ctx.publish(
                &updated.object_ref(&()),
                EventType::Normal,
                REASON_SCHEDULED,
                format!("Scheduled to seed {seed}"),
            )
            .await;
            if let Some(op) =
                scheduled_operation(updated.status.as_ref().and_then(|s| s.last_operation.as_ref()), &seed)
            {
                // Best effort: the placement is what matters, and gardenlet rewrites this soon.
                if let Err(e) = patch_last_operation(&api, &updated, &op).await
                    && !is_conflict_or_gone(&e)
                {
                    tracing::warn!(error = %runtime::events::error_chain(&e), "clearing the earlier refusal from the status failed");
                }
            }
            Ok(Action::await_change())
        }
        Err(e) => {
            // A refused write certainly did not happen; anything else (a timeout) may have, so
            // its reservation stays until the watch shows the shoot or it times out.
            if matches!(e, kube::Error::Api(_)) {
                ctx.lock_state().release(&key);
            }
            if is_conflict_or_gone(&e) {
                tracing::debug!(error = %runtime::events::error_chain(&e), "the shoot changed since the decision; deciding again");
                return Ok(Action::requeue(SHORT_RETRY));
            }
            Err(Error::Place { shoot: key, seed, source: e })
        }
    }
}

async fn refuse(shoot: &Shoot, key: ShootKey, refusal: Refusal, ctx: &Context) -> Result<Action, Error> {
    ctx.metrics.decisions.with_label_values(&[RESULT_UNSCHEDULABLE]).inc();
    let text = refusal.to_string();
    tracing::info!(reason = refusal.reason(), refusal = %text, "cannot schedule");
    let api: Api<Shoot> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let existing = shoot.status.as_ref().and_then(|s| s.last_operation.as_ref());
    let mut regarding = shoot.object_ref(&());
    if let Some(op) = refused_operation(existing, &text) {
        match patch_last_operation(&api, shoot, &op).await {
            // The event refers to the updated object, so that a new explanation starts a new
            // event instead of counting up the previous one.
            Ok(updated) => regarding = updated.object_ref(&()),
            Err(e) if is_conflict_or_gone(&e) => return Ok(Action::requeue(SHORT_RETRY)),
            Err(e) => return Err(Error::RecordRefusal { shoot: key, source: e }),
        }
    }
    ctx.publish(&regarding, EventType::Warning, REASON_FAILED, text).await;
    Ok(Action::requeue(ctx.next_backoff(&key)))
}

fn patch_params() -> PatchParams {
    PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() }
}

/// Patches `status.lastOperation`, on the condition that the shoot is still at the version the
/// decision saw.
async fn patch_last_operation(api: &Api<Shoot>, shoot: &Shoot, op: &LastOperation) -> Result<Shoot, kube::Error> {
    let patch = json!({
        "metadata": { "resourceVersion": shoot.resource_version() },
        "status": { "lastOperation": op },
    });
    api.patch_status(&shoot.name_any(), &patch_params(), &Patch::Merge(&patch)).await
}

fn is_conflict_or_gone(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409 || s.code == 404)
}

fn now() -> Time {
    Time(Timestamp::now())
}

/// The last operation that records a refusal, or `None` when the status already says so
/// (only a changed explanation is written, so retries do not churn the object).
pub fn refused_operation(existing: Option<&LastOperation>, text: &str) -> Option<LastOperation> {
    let unchanged = existing.is_some_and(|op| {
        op.type_ == LastOperationType::Create && op.state == LastOperationState::Pending && op.description == text
    });
    (!unchanged).then(|| LastOperation {
        description: text.to_string(),
        last_update_time: now(),
        progress: 0,
        state: LastOperationState::Pending,
        type_: LastOperationType::Create,
    })
}

/// After a placement: replaces a recorded refusal (a pending Create) with the placement, so the
/// status does not keep explaining a problem that is solved. Anything else is left alone.
pub fn scheduled_operation(existing: Option<&LastOperation>, seed: &SeedName) -> Option<LastOperation> {
    let refusal_recorded =
        existing.is_some_and(|op| op.type_ == LastOperationType::Create && op.state == LastOperationState::Pending);
    refusal_recorded.then(|| LastOperation {
        description: format!("Scheduled to seed {seed}; waiting for the seed to create the cluster"),
        last_update_time: now(),
        progress: 0,
        state: LastOperationState::Pending,
        type_: LastOperationType::Create,
    })
}

pub use runtime::events::error_chain;

impl Context {
    /// Publishes an event; a failure is logged, never fatal.
    pub(super) async fn publish(&self, regarding: &ObjectReference, type_: EventType, reason: &str, note: String) {
        let event = Event {
            type_,
            reason: reason.to_string(),
            note: Some(truncate(note, MAX_EVENT_MESSAGE)),
            action: "Schedule".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, regarding).await {
            tracing::warn!(error = %runtime::events::error_chain(&e), reason, "publishing an event failed");
        }
    }
}

fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max.saturating_sub(3);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(type_: LastOperationType, state: LastOperationState, description: &str) -> LastOperation {
        LastOperation { description: description.into(), last_update_time: now(), progress: 0, state, type_ }
    }

    #[test]
    fn refusal_is_written_only_when_it_changes() {
        use LastOperationState::*;
        use LastOperationType::*;
        let text = "0/1 seeds fit: 1 not ready";
        let cases = [
            ("no status yet", None, true),
            ("same refusal", Some(op(Create, Pending, text)), false),
            ("other refusal", Some(op(Create, Pending, "0/0 seeds fit: no seeds are registered")), true),
            ("something else", Some(op(Reconcile, Succeeded, text)), true),
        ];
        for (name, existing, want) in cases {
            let got = refused_operation(existing.as_ref(), text);
            assert_eq!(got.is_some(), want, "{name}");
            if let Some(got) = got {
                assert_eq!((got.type_, got.state, got.description.as_str(), got.progress), (Create, Pending, text, 0));
            }
        }
    }

    #[test]
    fn placement_replaces_only_a_recorded_refusal() {
        use LastOperationState::*;
        use LastOperationType::*;
        let seed = SeedName::from("a");
        assert!(scheduled_operation(None, &seed).is_none());
        assert!(scheduled_operation(Some(&op(Create, Processing, "creating")), &seed).is_none());
        let got = scheduled_operation(Some(&op(Create, Pending, "0/1 seeds fit: 1 not ready")), &seed).unwrap();
        assert!(got.description.starts_with("Scheduled to seed a"), "{}", got.description);
    }

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        let text = "ä".repeat(600);
        let cut = truncate(text, 1024);
        assert!(cut.len() <= 1024 && cut.ends_with("..."));
        assert_eq!(truncate("short".into(), 1024), "short");
    }
}
