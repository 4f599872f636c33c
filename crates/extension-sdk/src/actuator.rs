//! What an extension author writes: an [`Actuator`] for one kind, returning an [`Outcome`] or an
//! [`ActuatorError`] that carries error codes. Everything else (when to call which method, the
//! status, the finalizer, annotations) is the controller's job.

use crate::cluster::ClusterContext;
use crate::kinds::ExtensionResource;
use api::common::{ErrorCode, NamedResourceReference};
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::time::Duration;

/// Provider logic for one extension kind. Every method receives the object (as it is after the
/// SDK added its finalizer and removed a `reconcile` annotation) and the shoot context from the
/// `Cluster` (empty for kinds without one, such as BackupBucket).
///
/// Only `reconcile` and `delete` are required. The defaults: `force_delete` calls `delete`,
/// `migrate` does nothing (nothing of this seed to clean up), `restore` calls `reconcile`
/// (which sees `status.state` on the object). BackupBucket never gets `migrate` or `restore`.
pub trait Actuator<K: ExtensionResource>: Send + Sync + 'static {
    /// Creates or updates whatever the object describes. Called for Create and Reconcile.
    fn reconcile(
        &self,
        obj: &K,
        cluster: &ClusterContext,
    ) -> impl Future<Output = Result<Outcome<K>, ActuatorError>> + Send;

    /// Removes whatever the object created, real infrastructure included.
    fn delete(&self, obj: &K, cluster: &ClusterContext) -> impl Future<Output = Result<(), ActuatorError>> + Send;

    /// Deletion when the object carries `confirmation.gardener.cloud/force-deletion=true`:
    /// remove what can be removed and do not block on the rest.
    fn force_delete(
        &self,
        obj: &K,
        cluster: &ClusterContext,
    ) -> impl Future<Output = Result<(), ActuatorError>> + Send {
        self.delete(obj, cluster)
    }

    /// Stops managing the object on this seed: clean up only what lives in this seed's control
    /// plane, never the real infrastructure. The returned state is kept in `status.state` for
    /// the destination seed.
    fn migrate(
        &self,
        _obj: &K,
        _cluster: &ClusterContext,
    ) -> impl Future<Output = Result<Outcome<K>, ActuatorError>> + Send {
        async { Ok(Outcome::done()) }
    }

    /// Rebuilds the controller's view on a new seed from `status.state` plus the real world.
    fn restore(
        &self,
        obj: &K,
        cluster: &ClusterContext,
    ) -> impl Future<Output = Result<Outcome<K>, ActuatorError>> + Send {
        self.reconcile(obj, cluster)
    }
}

type StatusFn<K> = Box<dyn FnOnce(&mut <K as api::extensions::ExtensionKind>::Status) + Send>;

/// What a successful actuator call hands back. Fields left `None` leave the status untouched.
pub struct Outcome<K: ExtensionResource> {
    /// New `status.state`: whatever is needed to rebuild this object's controller elsewhere.
    pub state: Option<serde_json::Value>,
    /// New `status.resources`: named references that `state` uses.
    pub resources: Option<Vec<NamedResourceReference>>,
    /// New `status.providerStatus`.
    pub provider_status: Option<serde_json::Value>,
    /// The kind-specific result (OperatingSystemConfig: the user data).
    pub output: Option<K::Output>,
    /// Ask to be called again after this long. The status stays `Processing`; this is not an
    /// error and does not count as one.
    pub requeue_after: Option<Duration>,
    /// `lastOperation.description` on success, instead of the generic "Successfully ...".
    pub description: Option<String>,
    status: Option<StatusFn<K>>,
}

impl<K: ExtensionResource> Default for Outcome<K> {
    fn default() -> Self {
        Self {
            state: None,
            resources: None,
            provider_status: None,
            output: None,
            requeue_after: None,
            description: None,
            status: None,
        }
    }
}

impl<K: ExtensionResource> fmt::Debug for Outcome<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outcome")
            .field("state", &self.state)
            .field("resources", &self.resources)
            .field("provider_status", &self.provider_status)
            .field("output", &self.output)
            .field("requeue_after", &self.requeue_after)
            .field("description", &self.description)
            .field("status", &self.status.as_ref().map(|_| "<fn>"))
            .finish()
    }
}

impl<K: ExtensionResource> Outcome<K> {
    /// Success with nothing to record.
    pub fn done() -> Self {
        Self::default()
    }

    /// Sets `status.state`.
    pub fn with_state(mut self, state: serde_json::Value) -> Self {
        self.state = Some(state);
        self
    }

    /// Sets `status.resources`.
    pub fn with_resources(mut self, resources: Vec<NamedResourceReference>) -> Self {
        self.resources = Some(resources);
        self
    }

    /// Sets `status.providerStatus`.
    /// Sets the success description (`lastOperation.description`), e.g. to say what an
    /// operation honestly did or did not do.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    pub fn with_provider_status(mut self, provider_status: serde_json::Value) -> Self {
        self.provider_status = Some(provider_status);
        self
    }

    /// Sets the kind-specific result.
    pub fn with_output(mut self, output: K::Output) -> Self {
        self.output = Some(output);
        self
    }

    /// Changes kind-specific status fields (for example Infrastructure's `nodeNetwork`).
    pub fn with_status(mut self, f: impl FnOnce(&mut K::Status) + Send + 'static) -> Self {
        self.status = Some(Box::new(f));
        self
    }

    /// Asks to be called again after `after` without marking the operation as done.
    pub fn requeue(mut self, after: Duration) -> Self {
        self.requeue_after = Some(after);
        self
    }

    pub(crate) fn take_status_fn(&mut self) -> Option<StatusFn<K>> {
        self.status.take()
    }
}

/// A failed actuator call: a message, the error codes that tell gardenlet whether retrying can
/// help, and the underlying error. [`ActuatorError::requeue_after`] is the one "error" that is
/// not a failure.
#[derive(Debug)]
pub struct ActuatorError {
    message: String,
    codes: Vec<ErrorCode>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
    requeue_after: Option<Duration>,
}

impl fmt::Display for ActuatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for ActuatorError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}

impl ActuatorError {
    /// An error with a message; codes are derived from the message (see [`codes_from_message`]).
    pub fn new(message: impl Into<String>) -> Self {
        let message = message.into();
        let codes = codes_from_message(&message);
        Self { message, codes, source: None, requeue_after: None }
    }

    /// Wraps an error with context ("creating network for shoot--p--s"); codes are derived from
    /// the whole chain.
    pub fn context(message: impl Into<String>, source: impl StdError + Send + Sync + 'static) -> Self {
        let mut err = Self::new(message);
        err.source = Some(Box::new(source));
        err.codes = codes_from_message(&err.chain());
        err
    }

    /// Wraps an error as it is; codes are derived from its chain.
    pub fn from_error(source: impl StdError + Send + Sync + 'static) -> Self {
        let message = source.to_string();
        let mut err = Self { message, codes: Vec::new(), source: None, requeue_after: None };
        // The source's own message is the message; keep only what lies below it in the chain.
        err.source = source.source().map(|s| Box::<dyn StdError + Send + Sync>::from(runtime::events::error_chain(s)));
        err.codes = codes_from_message(&err.chain());
        err
    }

    /// Replaces the derived codes with explicit ones.
    pub fn with_codes(mut self, codes: impl IntoIterator<Item = ErrorCode>) -> Self {
        let mut codes: Vec<ErrorCode> = codes.into_iter().collect();
        codes.sort();
        codes.dedup();
        self.codes = codes;
        self
    }

    /// Adds one code to the derived ones.
    pub fn with_code(mut self, code: ErrorCode) -> Self {
        if !self.codes.contains(&code) {
            self.codes.push(code);
            self.codes.sort();
        }
        self
    }

    /// Not a failure: "call me again after `after`" (the status stays Processing, no event, no
    /// error metric, no backoff).
    pub fn requeue_after(after: Duration) -> Self {
        Self {
            message: format!("requeue requested after {after:?}"),
            codes: Vec::new(),
            source: None,
            requeue_after: Some(after),
        }
    }

    /// The error codes.
    pub fn codes(&self) -> &[ErrorCode] {
        &self.codes
    }

    /// `Some` for [`ActuatorError::requeue_after`].
    pub fn requeue(&self) -> Option<Duration> {
        self.requeue_after
    }

    /// The message and every source below it, joined with ": ".
    pub fn chain(&self) -> String {
        runtime::events::error_chain(self)
    }
}

impl From<kube::Error> for ActuatorError {
    fn from(e: kube::Error) -> Self {
        let mut err = Self::from_error(e);
        if err.message.is_empty() {
            err.message = "Kubernetes API error".into();
        }
        err
    }
}

/// Maps common error shapes to error codes, case-insensitively. An HTTP status number counts
/// only as a whole number ("401", not "4011").
pub fn codes_from_message(message: &str) -> Vec<ErrorCode> {
    let m = message.to_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| m.contains(n));
    let mut codes = Vec::new();
    if has_number(&m, "401") || any(&["unauthenticated", "authentication failed", "invalid credentials"]) {
        codes.push(ErrorCode::InfraUnauthenticated);
    }
    if has_number(&m, "403")
        || any(&["unauthorized", "forbidden", "access denied", "accessdenied", "not authorized", "permission denied"])
    {
        codes.push(ErrorCode::InfraUnauthorized);
    }
    if any(&["quota exceeded", "quotaexceeded", "exceeded quota", "insufficient quota"]) {
        codes.push(ErrorCode::InfraQuotaExceeded);
    }
    if has_number(&m, "429") || any(&["rate limit", "ratelimit", "throttl", "too many requests"]) {
        codes.push(ErrorCode::InfraRateLimitsExceeded);
    }
    if any(&["retryable dependency", "retryable dependencies", "retryableerror"]) {
        codes.push(ErrorCode::RetryableInfraDependencies);
    } else if any(&["dependency", "dependencies"]) {
        codes.push(ErrorCode::InfraDependencies);
    }
    if any(&["resources depleted", "resource exhausted", "resource_pool_exhausted", "insufficient capacity"]) {
        codes.push(ErrorCode::InfraResourcesDepleted);
    }
    if any(&["retryable configuration"]) {
        codes.push(ErrorCode::RetryableConfigurationProblem);
    } else if any(&["configuration", "invalid parameter", "invalidparameter"]) {
        codes.push(ErrorCode::ConfigurationProblem);
    }
    if any(&["failed calling webhook", "failed to call webhook"]) {
        codes.push(ErrorCode::ProblematicWebhook);
    }
    codes.sort();
    codes.dedup();
    codes
}

fn has_number(haystack: &str, number: &str) -> bool {
    haystack.match_indices(number).any(|(i, _)| {
        let before = haystack[..i].chars().next_back();
        let after = haystack[i + number.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorCode as C;

    #[test]
    fn common_error_shapes_map_to_codes() {
        let cases: &[(&str, &[ErrorCode])] = &[
            ("HTTP 401 returned", &[C::InfraUnauthenticated]),
            ("request Unauthorized", &[C::InfraUnauthorized]),
            ("got 403 from the cloud", &[C::InfraUnauthorized]),
            ("AccessDenied: nope", &[C::InfraUnauthorized]),
            ("Quota exceeded for CPUs", &[C::InfraQuotaExceeded]),
            ("Rate limit reached", &[C::InfraRateLimitsExceeded]),
            ("request was throttled", &[C::InfraRateLimitsExceeded]),
            ("DependencyViolation: subnet in use", &[C::InfraDependencies]),
            ("RetryableError: dependency busy", &[C::RetryableInfraDependencies]),
            ("invalid configuration: region missing", &[C::ConfigurationProblem]),
            ("retryable configuration problem", &[C::RetryableConfigurationProblem]),
            ("failed calling webhook foo", &[C::ProblematicWebhook]),
            ("zone resource_pool_exhausted", &[C::InfraResourcesDepleted]),
            ("connection reset by peer", &[]),
            ("vpc-40123 not ready", &[]),
        ];
        for (msg, want) in cases {
            assert_eq!(codes_from_message(msg), want.to_vec(), "{msg}");
        }
    }

    #[test]
    fn several_shapes_give_several_codes_once_each() {
        let codes = codes_from_message("403 forbidden and quota exceeded, quota exceeded");
        assert_eq!(codes, vec![C::InfraUnauthorized, C::InfraQuotaExceeded]);
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner);
    #[derive(Debug, thiserror::Error)]
    #[error("the cloud said: rate limit")]
    struct Inner;

    #[test]
    fn context_derives_codes_from_the_whole_chain() {
        let e = ActuatorError::context("creating network", Outer(Inner));
        assert_eq!(e.chain(), "creating network: outer: the cloud said: rate limit");
        assert_eq!(e.codes(), &[C::InfraRateLimitsExceeded]);
        let e = ActuatorError::from_error(Outer(Inner));
        assert_eq!(e.chain(), "outer: the cloud said: rate limit");
        assert_eq!(e.codes(), &[C::InfraRateLimitsExceeded]);
    }

    #[test]
    fn explicit_codes_replace_or_extend() {
        let e = ActuatorError::new("quota exceeded").with_codes([C::ConfigurationProblem]);
        assert_eq!(e.codes(), &[C::ConfigurationProblem]);
        let e = ActuatorError::new("quota exceeded").with_code(C::InfraUnauthorized).with_code(C::InfraUnauthorized);
        assert_eq!(e.codes(), &[C::InfraUnauthorized, C::InfraQuotaExceeded]);
    }

    #[test]
    fn requeue_is_not_a_failure_and_has_no_codes() {
        let e = ActuatorError::requeue_after(Duration::from_secs(5));
        assert_eq!(e.requeue(), Some(Duration::from_secs(5)));
        assert!(e.codes().is_empty());
        assert_eq!(ActuatorError::new("x").requeue(), None);
    }
}
