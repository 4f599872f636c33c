//! Plumbing every controller of this binary shares, so that each controller module is only its
//! wiring (the runtime crate's [`::runtime::wiring`]) and its decision: a reconcile wrapper that
//! counts metrics, publishes a Warning event per failure and paces retries per object.

use crate::clock::Clock;
use crate::metrics::Metrics;
use ::runtime::backoff::{Backoff, BackoffConfig};
use ::runtime::wiring::Wiring;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client, Resource, ResourceExt};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

/// What every controller's context holds besides its own caches and settings.
pub struct Common {
    pub client: Client,
    pub clock: Arc<dyn Clock>,
    pub metrics: Metrics,
    /// The controller's name: metric label and event reporter (`gardener-controller-manager/<name>`).
    pub name: &'static str,
    recorder: Recorder,
    backoff: Backoff,
    published: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl std::fmt::Debug for Common {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Common").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Common {
    pub fn new(client: Client, clock: Arc<dyn Clock>, metrics: Metrics, name: &'static str) -> Self {
        metrics.register(name);
        let instance = std::env::var("POD_NAME").or_else(|_| std::env::var("HOSTNAME")).ok();
        let reporter = Reporter { controller: field_manager(name), instance };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            clock,
            metrics,
            name,
            backoff: Backoff::new(BackoffConfig::default()),
            published: Default::default(),
        }
    }

    /// Publishes an event on `obj` (its note redacted, see [`event`]); a failure to publish is
    /// logged, never propagated.
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let event = event(type_, reason, action, &note);
        let reference = obj.object_ref(&());
        let result = if reference.namespace.is_none() {
            self.publish_cluster_scoped(&reference, &event).await
        } else {
            self.recorder.publish(&event, &reference).await
        };
        if let Err(e) = result {
            tracing::warn!(error = %::runtime::events::error_chain(&e), reason, "publishing an event failed");
        }
    }

    /// Events about cluster-scoped objects (Project, Seed) as `core/v1` Events in `default`:
    /// kube-apiserver 1.20 accepts `events.k8s.io` Events about them only in `kube-system`,
    /// where `kubectl describe` does not look. The same event (object, reason, note) is
    /// published once per process, so a condition that persists does not flood the namespace.
    async fn publish_cluster_scoped(
        &self,
        reference: &k8s_openapi::api::core::v1::ObjectReference,
        event: &Event,
    ) -> Result<(), kube::Error> {
        use k8s_openapi::api::core::v1::{Event as CoreEvent, EventSource};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
        let key = format!("{:?}/{}/{}", reference.uid, event.reason, event.note.as_deref().unwrap_or_default());
        {
            let mut seen = self.published.lock().unwrap_or_else(|p| p.into_inner());
            if !seen.insert(key.clone()) {
                return Ok(());
            }
        }
        let now = Time(self.clock.now());
        let name = reference.name.clone().unwrap_or_default();
        let body = CoreEvent {
            metadata: ObjectMeta {
                generate_name: Some(format!("{name}.")),
                namespace: Some("default".into()),
                ..Default::default()
            },
            involved_object: reference.clone(),
            reason: Some(event.reason.clone()),
            message: event.note.clone(),
            type_: Some(match event.type_ {
                EventType::Normal => "Normal".into(),
                EventType::Warning => "Warning".into(),
            }),
            action: Some(event.action.clone()),
            count: Some(1),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            source: Some(EventSource { component: Some(field_manager(self.name)), host: None }),
            reporting_component: Some(field_manager(self.name)),
            ..Default::default()
        };
        let api: Api<CoreEvent> = Api::namespaced(self.client.clone(), "default");
        let result = api.create(&Default::default(), &body).await.map(drop);
        if result.is_err() {
            self.published.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
        }
        result
    }

    /// The wiring of this controller (named like it, on its client), stopping with `stop` and
    /// setting `ready` once its caches have synced.
    pub fn wiring(&self, stop: ::runtime::runner::Stop, ready: Arc<std::sync::atomic::AtomicBool>) -> Wiring {
        Wiring::new(self.name, self.client.clone(), stop, ready)
    }

    /// The retry after a failed reconcile of `obj` (capped exponential with jitter).
    pub fn retry_after_failure<K: Resource>(&self, obj: &K) -> Action {
        Action::requeue(self.backoff.failed(&backoff_key(obj)))
    }
}

/// The event every controller of this binary publishes: its note (an error chain, or a message a
/// controller built, which may quote object data) passes through the runtime crate's
/// [`::runtime::events::redact`] and is cut to the events' limit.
pub fn event(type_: EventType, reason: &str, action: &str, note: &str) -> Event {
    Event {
        type_,
        reason: reason.into(),
        note: Some(::runtime::events::truncate(&::runtime::events::redact(note), ::runtime::events::MAX_MESSAGE_BYTES)),
        action: action.into(),
        secondary: None,
    }
}

/// The server-side apply field manager of a controller.
pub fn field_manager(controller: &str) -> String {
    format!("gardener-controller-manager/{controller}")
}

fn backoff_key<K: Resource>(obj: &K) -> String {
    obj.meta().uid.clone().unwrap_or_else(|| format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any()))
}

/// An error of a reconcile, with a stable PascalCase reason for events and metrics.
pub trait Reason: std::error::Error + Send + Sync + 'static {
    fn reason(&self) -> &'static str;
}

/// A failed API call, with what was being done and a stable reason (metric label, event).
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct KubeError {
    reason: &'static str,
    what: String,
    #[source]
    source: kube::Error,
}

impl Reason for KubeError {
    fn reason(&self) -> &'static str {
        self.reason
    }
}

/// `map_err` adapter: `api.get(n).await.map_err(kube_err("ReadFailed", "reading ..."))`.
pub fn kube_err(reason: &'static str, what: impl Into<String>) -> impl FnOnce(kube::Error) -> KubeError {
    let what = what.into();
    move |source| KubeError { reason, what, source }
}

/// Runs one reconcile of `obj`: counts it, times it, and on failure counts the reason and
/// publishes a Warning event with the error's whole chain; a success forgets past failures.
pub async fn instrumented<K, E>(
    common: &Common,
    obj: &K,
    reconcile: impl Future<Output = Result<Action, E>>,
) -> Result<Action, E>
where
    K: Resource<DynamicType = ()>,
    E: Reason,
{
    let started = Instant::now();
    common.metrics.reconcile_started(common.name);
    let result = reconcile.await;
    common.metrics.observe_duration(common.name, started.elapsed().as_secs_f64());
    match &result {
        Ok(_) => common.backoff.reset(&backoff_key(obj)),
        Err(e) => {
            tracing::warn!(controller = common.name, object = %obj.name_any(), error = %::runtime::cli::report(e), "reconcile failed");
            common.metrics.reconcile_failed(common.name, e.reason());
            let message = ::runtime::events::event_message(e);
            common.event(obj, EventType::Warning, e.reason(), "Reconcile", message).await;
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_note_is_redacted_and_cut_to_the_limit() {
        // A message a controller built (not an error chain), quoting what an object carried.
        let note = "maintenance failed: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY----- and Authorization: Bearer abc.def.ghi; password=hunter22";
        let e = event(EventType::Warning, "MaintenanceFailed", "Maintain", note);
        let shown = e.note.unwrap_or_default();
        for secret in ["MIIEvQIBADANBg", "abc.def.ghi", "hunter22"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.starts_with("maintenance failed: [redacted] and Authorization: Bearer [redacted]"), "{shown}");
        assert_eq!((e.reason.as_str(), e.action.as_str()), ("MaintenanceFailed", "Maintain"));
        // Cut after redaction: a long note stays within the limit.
        let long = format!("token={} {}", "x".repeat(40), "y".repeat(2000));
        let e = event(EventType::Normal, "R", "A", &long);
        let shown = e.note.unwrap_or_default();
        assert!(shown.len() <= ::runtime::events::MAX_MESSAGE_BYTES && !shown.contains("xxxx"), "{shown}");
        // Ordinary messages are left alone.
        let e = event(EventType::Normal, "R", "A", "scaled in to 2 replicas");
        assert_eq!(e.note.as_deref(), Some("scaled in to 2 replicas"));
    }
}
