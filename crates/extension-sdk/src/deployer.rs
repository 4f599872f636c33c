//! The deployer side of the contract (what gardenlet calls): create or update an extension
//! object and request an operation, then wait for it by the contract's readiness rules.
//!
//! Waiting watches the one object (no polling) and is bounded by a timeout. A `lastError`
//! that belongs to the current request ends the wait at once, as an error naming the object
//! and carrying the codes; a `lastError` left from an earlier attempt (the request is still
//! pending, or the error predates the request's timestamp) is waited out.

use crate::kinds::ExtensionResource;
use api::Opaque;
use api::common::{ErrorCode, LastError, LastOperationState, LastOperationType, NamedResourceReference};
use api::extensions::DefaultStatus;
use api::helpers::constants::{ANNOTATION_OPERATION, ANNOTATION_TIMESTAMP, operation};
use api::helpers::extension_operation::{NotReady, check_ready};
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::watch_object;
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use std::time::Duration;

/// Default bound of every wait.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// A failed deploy, wait or operation. Every variant names the object.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error("{action} {object}")]
    Api {
        action: &'static str,
        object: String,
        #[source]
        source: kube::Error,
    },
    #[error("{object} reported an error: {}", .last_error.description)]
    Failed { object: String, last_error: LastError },
    #[error("{object} is not ready after {timeout:?}: {reason}")]
    Timeout { object: String, timeout: Duration, reason: String, last_error: Option<LastError> },
    #[error("{object} has an unusable timestamp annotation {value:?}")]
    BadTimestamp { object: String, value: String },
    #[error("encoding {object}")]
    Encode {
        object: String,
        #[source]
        source: serde_json::Error,
    },
}

impl DeployError {
    /// The error codes the extension reported, if any.
    pub fn codes(&self) -> &[ErrorCode] {
        match self {
            Self::Failed { last_error, .. } => &last_error.codes,
            Self::Timeout { last_error: Some(e), .. } => &e.codes,
            _ => &[],
        }
    }
}

/// Where a wait stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Judgement {
    Done,
    Pending(String),
    Failed(LastError),
    BadTimestamp(String),
}

/// Judges an object against the readiness rules (plus, for migrate/restore, the expected
/// operation type). Pure.
pub fn judge(meta: &ObjectMeta, status: Option<&DefaultStatus>, expected: Option<LastOperationType>) -> Judgement {
    match check_ready(meta, status) {
        Ok(()) => {
            let last = status.and_then(|s| s.last_operation.as_ref()).map(|l| l.type_);
            match (expected, last) {
                (Some(want), Some(have)) if want != have => {
                    Judgement::Pending(format!("last operation is {have}, waiting for {want}"))
                }
                _ => Judgement::Done,
            }
        }
        Err(NotReady::LastError(e)) if error_is_current(meta, status) => Judgement::Failed(e),
        Err(NotReady::LastError(e)) => Judgement::Pending(format!("an earlier attempt failed ({})", e.description)),
        Err(NotReady::BadTimestamp(v)) => Judgement::BadTimestamp(v),
        Err(other) => Judgement::Pending(other.to_string()),
    }
}

/// A `lastError` answers the current request when the request was picked up (no operation
/// annotation left, generation observed), the operation ended in Error, and it ended no earlier
/// than the request's timestamp (to the second).
fn error_is_current(meta: &ObjectMeta, status: Option<&DefaultStatus>) -> bool {
    let Some(status) = status else { return false };
    let Some(last) = &status.last_operation else { return false };
    let annotations = meta.annotations.as_ref();
    if annotations.is_some_and(|a| a.contains_key(ANNOTATION_OPERATION))
        || status.observed_generation != meta.generation
    {
        return false;
    }
    if !matches!(last.state, LastOperationState::Error | LastOperationState::Failed) {
        return false;
    }
    match annotations.and_then(|a| a.get(ANNOTATION_TIMESTAMP)).map(|t| t.parse::<Timestamp>()) {
        Some(Ok(requested)) => last.last_update_time.0.as_second() >= requested.as_second(),
        _ => true,
    }
}

/// Drives extension objects from the deployer's side.
#[derive(Clone)]
pub struct Deployer {
    client: Client,
    field_manager: String,
    timeout: Duration,
}

impl std::fmt::Debug for Deployer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deployer").field("field_manager", &self.field_manager).field("timeout", &self.timeout).finish()
    }
}

fn describe<K: Resource<DynamicType = ()>>(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{} {ns}/{name}", K::kind(&())),
        None => format!("{} {name}", K::kind(&())),
    }
}

fn timestamp() -> String {
    Timestamp::now().to_string()
}

impl Deployer {
    /// A deployer writing as field manager `gardenlet`, waiting up to [`DEFAULT_TIMEOUT`].
    pub fn new(client: Client) -> Self {
        Self { client, field_manager: "gardenlet".into(), timeout: DEFAULT_TIMEOUT }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn with_field_manager(mut self, field_manager: impl Into<String>) -> Self {
        self.field_manager = field_manager.into();
        self
    }

    /// Creates or updates the object (server-side apply of its metadata labels, annotations,
    /// owner references and spec) with `operation=reconcile` and a fresh timestamp.
    pub async fn deploy<K: ExtensionResource>(&self, obj: &K) -> Result<K, DeployError> {
        self.apply(obj, operation::RECONCILE).await
    }

    /// [`Deployer::deploy`], then [`Deployer::wait_ready`].
    pub async fn deploy_and_wait<K: ExtensionResource>(&self, obj: &K) -> Result<K, DeployError> {
        let applied = self.deploy(obj).await?;
        self.wait_ready(&applied).await
    }

    async fn apply<K: ExtensionResource>(&self, obj: &K, op: &str) -> Result<K, DeployError> {
        let namespace = obj.namespace();
        let name = obj.name_any();
        let object = describe::<K>(namespace.as_deref(), &name);
        let mut body =
            serde_json::to_value(obj).map_err(|source| DeployError::Encode { object: object.clone(), source })?;
        let mut annotations = obj.annotations().clone();
        annotations.insert(ANNOTATION_OPERATION.into(), op.into());
        annotations.insert(ANNOTATION_TIMESTAMP.into(), timestamp());
        if let Some(map) = body.as_object_mut() {
            map.remove("status");
            map.insert(
                "metadata".into(),
                json!({
                    "name": name,
                    "namespace": namespace,
                    "labels": obj.labels(),
                    "annotations": annotations,
                    "ownerReferences": obj.owner_references(),
                }),
            );
            map.insert("apiVersion".into(), json!(K::api_version(&())));
            map.insert("kind".into(), json!(K::kind(&())));
        }
        let params = PatchParams::apply(&self.field_manager).force();
        K::api(self.client.clone(), namespace.as_deref())
            .patch(&name, &params, &Patch::Apply(&body))
            .await
            .map_err(|source| DeployError::Api { action: "applying", object, source })
    }

    /// Waits until the object is ready by the contract's five rules.
    pub async fn wait_ready<K: ExtensionResource>(&self, obj: &K) -> Result<K, DeployError> {
        self.wait(obj.namespace().as_deref(), &obj.name_any(), None).await
    }

    /// Waits until `namespace/name` is ready after the operation `expected` (any when `None`).
    pub async fn wait<K: ExtensionResource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        expected: Option<LastOperationType>,
    ) -> Result<K, DeployError> {
        let object = describe::<K>(namespace, name);
        let api = K::api(self.client.clone(), namespace);
        let mut reason = String::from("not observed yet");
        let mut last_error = None;
        let watch = async {
            let mut stream = std::pin::pin!(watch_object(api, name).default_backoff());
            while let Some(event) = stream.next().await {
                let Ok(current) = event else { continue };
                let Some(current) = current else {
                    reason = "does not exist".into();
                    continue;
                };
                let status = current.default_status();
                last_error = status.and_then(|s| s.last_error.clone());
                match judge(current.meta(), status, expected) {
                    Judgement::Done => return Ok(current),
                    Judgement::Pending(r) => reason = r,
                    Judgement::Failed(e) => return Err(DeployError::Failed { object: object.clone(), last_error: e }),
                    Judgement::BadTimestamp(value) => {
                        return Err(DeployError::BadTimestamp { object: object.clone(), value });
                    }
                }
            }
            Err(DeployError::Timeout {
                object: object.clone(),
                timeout: self.timeout,
                reason: "the watch ended".into(),
                last_error: None,
            })
        };
        match tokio::time::timeout(self.timeout, watch).await {
            Ok(result) => result,
            Err(_) => Err(DeployError::Timeout { object, timeout: self.timeout, reason, last_error }),
        }
    }

    /// Deletes the object and waits until it is gone. A final (non-retryable) error of the
    /// deletion ends the wait at once; other errors are reported if the wait times out.
    pub async fn delete_and_wait<K: ExtensionResource>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), DeployError> {
        let object = describe::<K>(namespace, name);
        let api = K::api(self.client.clone(), namespace);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(source) => return Err(DeployError::Api { action: "deleting", object, source }),
        }
        let mut last_error = None;
        let watch = async {
            let mut stream = std::pin::pin!(watch_object(api, name).default_backoff());
            while let Some(event) = stream.next().await {
                let Ok(current) = event else { continue };
                let Some(current) = current else { return Ok(()) };
                let status = current.default_status();
                let deleting = status
                    .and_then(|s| s.last_operation.as_ref())
                    .is_some_and(|l| l.type_ == LastOperationType::Delete && l.state == LastOperationState::Error);
                last_error = status.and_then(|s| s.last_error.clone());
                if let Some(e) = &last_error
                    && deleting
                    && api::common::has_non_retryable_code(&e.codes)
                {
                    return Err(DeployError::Failed { object: object.clone(), last_error: e.clone() });
                }
            }
            Ok(())
        };
        match tokio::time::timeout(self.timeout, watch).await {
            Ok(result) => result,
            Err(_) => {
                let reason =
                    last_error.as_ref().map_or("still exists".into(), |e| format!("still exists: {}", e.description));
                Err(DeployError::Timeout { object, timeout: self.timeout, reason, last_error })
            }
        }
    }

    /// Asks the extension to migrate the object away from this seed and waits until it did.
    /// `Ok(None)` when the object does not exist.
    pub async fn migrate_and_wait<K: ExtensionResource>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<K>, DeployError> {
        if !self.annotate::<K>(namespace, name, operation::MIGRATE).await? {
            return Ok(None);
        }
        self.wait(namespace, name, Some(LastOperationType::Migrate)).await.map(Some)
    }

    /// The restore protocol: create or update the object with `wait-for-state`, write
    /// `status.state` and `status.resources`, then request `restore` and wait until done.
    pub async fn restore_and_wait<K: ExtensionResource>(
        &self,
        obj: &K,
        state: Option<Opaque>,
        resources: Vec<NamedResourceReference>,
    ) -> Result<K, DeployError> {
        let namespace = obj.namespace();
        let name = obj.name_any();
        let object = describe::<K>(namespace.as_deref(), &name);
        self.apply(obj, operation::WAIT_FOR_STATE).await?;
        let status = json!({ "status": { "state": state, "resources": resources } });
        K::api(self.client.clone(), namespace.as_deref())
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .map_err(|source| DeployError::Api { action: "writing the state of", object, source })?;
        self.annotate::<K>(namespace.as_deref(), &name, operation::RESTORE).await?;
        self.wait(namespace.as_deref(), &name, Some(LastOperationType::Restore)).await
    }

    /// Requests `reconcile` on an existing object (no spec change).
    pub async fn request_reconcile<K: ExtensionResource>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool, DeployError> {
        self.annotate::<K>(namespace, name, operation::RECONCILE).await
    }

    /// Sets the operation annotation and a fresh timestamp. `Ok(false)` when the object does
    /// not exist.
    pub async fn annotate<K: ExtensionResource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        op: &str,
    ) -> Result<bool, DeployError> {
        let patch =
            json!({ "metadata": { "annotations": { ANNOTATION_OPERATION: op, ANNOTATION_TIMESTAMP: timestamp() } } });
        let params = PatchParams { field_manager: Some(self.field_manager.clone()), ..Default::default() };
        match K::api(self.client.clone(), namespace).patch(name, &params, &Patch::Merge(&patch)).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
            Err(source) => {
                Err(DeployError::Api { action: "annotating", object: describe::<K>(namespace, name), source })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::common::LastOperation;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn meta(annotations: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            generation: Some(1),
            annotations: Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            ..Default::default()
        }
    }

    fn status(type_: LastOperationType, state: LastOperationState, secs: i64, error: bool) -> DefaultStatus {
        let t = Time(Timestamp::from_second(secs).unwrap());
        DefaultStatus {
            observed_generation: Some(1),
            last_operation: Some(LastOperation {
                description: String::new(),
                last_update_time: t.clone(),
                progress: 50,
                state,
                type_,
            }),
            last_error: error.then(|| LastError {
                description: "quota exceeded".into(),
                task_id: None,
                codes: vec![ErrorCode::InfraQuotaExceeded],
                last_update_time: Some(t),
            }),
            ..Default::default()
        }
    }

    const T100: &str = "1970-01-01T00:01:40Z";

    #[test]
    fn ready_and_expected_operation() {
        let s = status(LastOperationType::Migrate, LastOperationState::Succeeded, 100, false);
        assert_eq!(judge(&meta(&[(ANNOTATION_TIMESTAMP, T100)]), Some(&s), None), Judgement::Done);
        assert_eq!(judge(&meta(&[]), Some(&s), Some(LastOperationType::Migrate)), Judgement::Done);
        assert!(matches!(judge(&meta(&[]), Some(&s), Some(LastOperationType::Restore)), Judgement::Pending(_)));
    }

    #[test]
    fn stale_operation_is_not_ready() {
        let s = status(LastOperationType::Reconcile, LastOperationState::Succeeded, 99, false);
        let Judgement::Pending(reason) = judge(&meta(&[(ANNOTATION_TIMESTAMP, T100)]), Some(&s), None) else {
            panic!("stale must not be ready")
        };
        assert!(reason.contains("older than the request"), "{reason}");
    }

    #[test]
    fn current_errors_fail_at_once_and_old_ones_are_waited_out() {
        let failed = status(LastOperationType::Reconcile, LastOperationState::Error, 100, true);
        assert!(matches!(judge(&meta(&[(ANNOTATION_TIMESTAMP, T100)]), Some(&failed), None), Judgement::Failed(_)));
        // The request is still pending.
        let pending = meta(&[(ANNOTATION_TIMESTAMP, T100), (ANNOTATION_OPERATION, "reconcile")]);
        assert!(matches!(judge(&pending, Some(&failed), None), Judgement::Pending(_)));
        // The error predates the request.
        let old = status(LastOperationType::Reconcile, LastOperationState::Error, 50, true);
        assert!(matches!(judge(&meta(&[(ANNOTATION_TIMESTAMP, T100)]), Some(&old), None), Judgement::Pending(_)));
        // A new attempt is running.
        let running = status(LastOperationType::Reconcile, LastOperationState::Processing, 100, true);
        assert!(matches!(judge(&meta(&[(ANNOTATION_TIMESTAMP, T100)]), Some(&running), None), Judgement::Pending(_)));
    }

    #[test]
    fn bad_timestamps_are_reported() {
        let s = status(LastOperationType::Reconcile, LastOperationState::Succeeded, 100, false);
        assert_eq!(
            judge(&meta(&[(ANNOTATION_TIMESTAMP, "soon")]), Some(&s), None),
            Judgement::BadTimestamp("soon".into())
        );
    }

    #[test]
    fn errors_carry_codes() {
        let e = DeployError::Failed {
            object: "Infrastructure ns/a".into(),
            last_error: LastError {
                description: "x".into(),
                task_id: None,
                codes: vec![ErrorCode::InfraUnauthorized],
                last_update_time: None,
            },
        };
        assert_eq!(e.codes(), &[ErrorCode::InfraUnauthorized]);
        assert!(e.to_string().contains("Infrastructure ns/a"));
    }
}
