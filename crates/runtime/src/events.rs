//! Kubernetes events for reconcile errors: one Warning event per failure on the object, with a
//! stable PascalCase reason and a message built from the whole error chain.
//!
//! Messages are built only from errors, never from object data, and pass through [`redact`]
//! so that key material or tokens an error might quote do not end up in an event.

use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use std::error::Error as StdError;

/// Events may carry at most 1 KiB of message.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// The error's message and every source below it, joined with ": " (a source whose message the
/// previous one already ends with is skipped, as wrapped errors often repeat themselves).
pub fn error_chain(err: &(dyn StdError + 'static)) -> String {
    chain_parts(err).join(": ")
}

/// The messages of the error and of every source below it, without repetitions (see
/// [`error_chain`]).
pub fn chain_parts(err: &(dyn StdError + 'static)) -> Vec<String> {
    let mut parts: Vec<String> = vec![err.to_string()];
    let mut current = err.source();
    while let Some(e) = current {
        let msg = e.to_string();
        if !parts.last().is_some_and(|p| p.ends_with(&msg)) && !msg.is_empty() {
            parts.push(msg);
        }
        current = e.source();
    }
    parts
}

/// Removes the shapes of secrets from a message: PEM blocks, bearer and other tokens,
/// `password=`-style assignments (see `api::helpers::redact`).
pub fn redact(message: &str) -> String {
    api::helpers::redact::redact_shapes(message)
}

/// Cuts a message to at most `max` bytes on a character boundary, marking the cut with "...".
pub fn truncate(message: &str, max: usize) -> String {
    if message.len() <= max {
        return message.to_string();
    }
    let mut end = max.saturating_sub(3);
    while end > 0 && !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

/// The message of an event for this error: redacted, at most 1 KiB.
pub fn event_message(err: &(dyn StdError + 'static)) -> String {
    truncate(&redact(&error_chain(err)), MAX_MESSAGE_BYTES)
}

/// Publishes Warning events; failures to publish are logged, never propagated (an event is
/// not worth failing a reconcile for).
#[derive(Clone)]
pub struct Events {
    recorder: Recorder,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").finish_non_exhaustive()
    }
}

impl Events {
    /// Events reported as `controller` (e.g. `extension-sdk/infrastructure`).
    pub fn new(client: kube::Client, controller: impl Into<String>, instance: Option<String>) -> Self {
        Self { recorder: Recorder::new(client, Reporter { controller: controller.into(), instance }) }
    }

    /// A Warning event on `obj` with `reason` and `message` (already built with
    /// [`event_message`]).
    pub async fn warn<K: Resource<DynamicType = ()>>(&self, obj: &K, reason: &str, action: &str, message: String) {
        let event = Event {
            type_: EventType::Warning,
            reason: reason.to_string(),
            note: Some(truncate(&message, MAX_MESSAGE_BYTES)),
            action: action.to_string(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, &obj.object_ref(&())).await {
            tracing::warn!(error = %crate::events::error_chain(&e), reason, "publishing a Warning event failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("creating network")]
    struct A(#[source] B);
    #[derive(Debug, thiserror::Error)]
    #[error("cloud API: 403 forbidden")]
    struct B;

    #[test]
    fn chain_joins_every_source() {
        assert_eq!(error_chain(&A(B)), "creating network: cloud API: 403 forbidden");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer: inner")]
    struct Repeats(#[source] Inner);
    #[derive(Debug, thiserror::Error)]
    #[error("inner")]
    struct Inner;

    #[test]
    fn chain_skips_repeated_sources() {
        assert_eq!(error_chain(&Repeats(Inner)), "outer: inner");
    }

    #[test]
    fn truncation_respects_the_limit_and_char_boundaries() {
        let long = "ä".repeat(1000);
        let t = truncate(&long, MAX_MESSAGE_BYTES);
        assert!(t.len() <= MAX_MESSAGE_BYTES);
        assert!(t.ends_with("..."));
        assert_eq!(truncate("short", 10), "short");
    }

    #[test]
    fn redaction_removes_key_material_and_tokens() {
        let msg =
            "bad key -----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY----- in secret; auth Bearer abc.def done";
        let r = redact(msg);
        assert!(!r.contains("MIIEv") && !r.contains("abc.def"), "{r}");
        assert!(r.contains("bad key [redacted] in secret") && r.contains("Bearer [redacted] done"), "{r}");
        assert_eq!(redact("-----BEGIN CERT no end"), "[redacted]");
    }
}
