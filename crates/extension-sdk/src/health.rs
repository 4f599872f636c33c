//! Periodic health conditions on extension objects: each condition type is computed from a set
//! of checks (Deployments or StatefulSets rolled out, Nodes ready, custom checks) and written to
//! the object's `status.conditions`. A check that reports "progressing" yields the condition
//! status `Progressing`; when it stays so for longer than a threshold the condition turns
//! `False` (reason [`REASON_PROGRESSING_TOO_LONG`]) until the check changes.
//!
//! The checks' verdicts and the condition rules are pure functions; [`HealthChecker`] only
//! reads objects, runs the checks and writes conditions that changed.

use crate::kinds::ExtensionResource;
use api::common::{Condition, ConditionStatus, ErrorCode};
use api::helpers::conditions::{ConditionUpdate, get_condition, set_condition};
use api::helpers::extension_operation::is_migrated;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use std::future::Future;
use std::time::Duration;

pub const REASON_HEALTHY: &str = "HealthCheckSuccessful";
pub const REASON_PROGRESSING: &str = "HealthCheckProgressing";
pub const REASON_PROGRESSING_TOO_LONG: &str = "HealthCheckProgressingTooLong";
pub const REASON_CHECK_ERROR: &str = "HealthCheckError";

/// The verdict of one check.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckResult {
    Healthy,
    /// Changing towards healthy (a rollout in progress).
    Progressing(String),
    Unhealthy {
        reason: String,
        message: String,
        codes: Vec<ErrorCode>,
    },
}

impl CheckResult {
    pub fn unhealthy(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Unhealthy { reason: reason.into(), message: message.into(), codes: Vec::new() }
    }
}

/// Whether a Deployment has rolled out and is available.
pub fn deployment_health(d: &Deployment) -> CheckResult {
    let name = d.name_any();
    let desired = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(status) = d.status.as_ref() else {
        return CheckResult::Progressing(format!("Deployment {name} has no status yet"));
    };
    if status.observed_generation < d.metadata.generation {
        return CheckResult::Progressing(format!("Deployment {name}: generation not observed yet"));
    }
    let updated = status.updated_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    if updated < desired || total > updated {
        return CheckResult::Progressing(format!("Deployment {name}: {updated} of {desired} replicas updated"));
    }
    let available = status.available_replicas.unwrap_or(0);
    if available < desired {
        return CheckResult::unhealthy(
            "DeploymentUnavailable",
            format!("Deployment {name}: {available} of {desired} replicas available"),
        );
    }
    CheckResult::Healthy
}

/// Whether a StatefulSet has rolled out and all replicas are ready.
pub fn statefulset_health(s: &StatefulSet) -> CheckResult {
    let name = s.name_any();
    let desired = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(status) = s.status.as_ref() else {
        return CheckResult::Progressing(format!("StatefulSet {name} has no status yet"));
    };
    if status.observed_generation < s.metadata.generation {
        return CheckResult::Progressing(format!("StatefulSet {name}: generation not observed yet"));
    }
    let updated = status.updated_replicas.unwrap_or(0);
    let revisions_differ = status.update_revision.is_some() && status.current_revision != status.update_revision;
    if updated < desired || revisions_differ {
        return CheckResult::Progressing(format!("StatefulSet {name}: {updated} of {desired} replicas updated"));
    }
    let ready = status.ready_replicas.unwrap_or(0);
    if ready < desired {
        return CheckResult::unhealthy(
            "StatefulSetUnready",
            format!("StatefulSet {name}: {ready} of {desired} replicas ready"),
        );
    }
    CheckResult::Healthy
}

/// Whether every Node is Ready.
pub fn nodes_health(nodes: &[Node]) -> CheckResult {
    let not_ready: Vec<String> = nodes
        .iter()
        .filter(|n| {
            !n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .map(ResourceExt::name_any)
        .collect();
    if not_ready.is_empty() {
        CheckResult::Healthy
    } else {
        CheckResult::unhealthy("NodesNotReady", format!("nodes not ready: {}", not_ready.join(", ")))
    }
}

/// The worst of several verdicts: Unhealthy before Progressing before Healthy.
pub fn aggregate(results: impl IntoIterator<Item = CheckResult>) -> CheckResult {
    let mut progressing = None;
    for r in results {
        match r {
            CheckResult::Unhealthy { .. } => return r,
            CheckResult::Progressing(_) if progressing.is_none() => progressing = Some(r),
            _ => {}
        }
    }
    progressing.unwrap_or(CheckResult::Healthy)
}

/// The condition content for a verdict, given the previous condition and the threshold after
/// which Progressing turns False.
pub fn condition_content(
    previous: Option<&Condition>,
    result: &CheckResult,
    threshold: Option<Duration>,
    now: &Time,
) -> (ConditionStatus, String, String, Vec<ErrorCode>) {
    match result {
        CheckResult::Healthy => (ConditionStatus::True, REASON_HEALTHY.into(), "All checks passed".into(), Vec::new()),
        CheckResult::Unhealthy { reason, message, codes } => {
            (ConditionStatus::False, reason.clone(), message.clone(), codes.clone())
        }
        CheckResult::Progressing(message) => {
            let stuck = previous.is_some_and(|p| {
                (p.status == ConditionStatus::False && p.reason == REASON_PROGRESSING_TOO_LONG)
                    || (p.status == ConditionStatus::Progressing
                        && threshold.is_some_and(|t| {
                            let since = now.0.duration_since(p.last_transition_time.0);
                            since.as_secs_f64() >= t.as_secs_f64()
                        }))
            });
            if stuck {
                (ConditionStatus::False, REASON_PROGRESSING_TOO_LONG.into(), message.clone(), Vec::new())
            } else {
                (ConditionStatus::Progressing, REASON_PROGRESSING.into(), message.clone(), Vec::new())
            }
        }
    }
}

/// One check, run in the namespace of the extension object.
pub trait HealthCheck: Send + Sync {
    fn check<'a>(&'a self, client: &'a Client, namespace: &'a str) -> BoxFuture<'a, Result<CheckResult, kube::Error>>;
}

/// Each named object of kind `K` in `namespace`, judged by `health`, aggregated; a missing one
/// is unhealthy with reason `<Kind>Missing`.
async fn each_named<K>(
    client: &Client,
    namespace: &str,
    names: &[String],
    health: fn(&K) -> CheckResult,
) -> Result<CheckResult, kube::Error>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let kind = K::kind(&());
    let mut results = Vec::new();
    for name in names {
        results.push(match api.get_opt(name).await? {
            Some(object) => health(&object),
            None => CheckResult::unhealthy(format!("{kind}Missing"), format!("{kind} {name} does not exist")),
        });
    }
    Ok(aggregate(results))
}

/// The named Deployments (in the object's namespace) have rolled out.
#[derive(Clone, Debug)]
pub struct DeploymentsRolledOut(pub Vec<String>);

impl HealthCheck for DeploymentsRolledOut {
    fn check<'a>(&'a self, client: &'a Client, namespace: &'a str) -> BoxFuture<'a, Result<CheckResult, kube::Error>> {
        Box::pin(each_named(client, namespace, &self.0, deployment_health))
    }
}

/// The named StatefulSets (in the object's namespace) have rolled out.
#[derive(Clone, Debug)]
pub struct StatefulSetsRolledOut(pub Vec<String>);

impl HealthCheck for StatefulSetsRolledOut {
    fn check<'a>(&'a self, client: &'a Client, namespace: &'a str) -> BoxFuture<'a, Result<CheckResult, kube::Error>> {
        Box::pin(each_named(client, namespace, &self.0, statefulset_health))
    }
}

/// Every Node of a cluster is Ready. `shoot` is the client of the cluster whose nodes count;
/// the checker's own client is used when `None`.
#[derive(Clone)]
pub struct NodesReady {
    pub shoot: Option<Client>,
}

impl std::fmt::Debug for NodesReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodesReady").field("shoot", &self.shoot.is_some()).finish()
    }
}

impl HealthCheck for NodesReady {
    fn check<'a>(&'a self, client: &'a Client, _: &'a str) -> BoxFuture<'a, Result<CheckResult, kube::Error>> {
        Box::pin(async move {
            let api: Api<Node> = Api::all(self.shoot.clone().unwrap_or_else(|| client.clone()));
            Ok(nodes_health(&api.list(&ListParams::default()).await?.items))
        })
    }
}

/// A check from a function.
pub struct CustomCheck<F>(pub F);

impl<F> std::fmt::Debug for CustomCheck<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CustomCheck")
    }
}

impl<F> HealthCheck for CustomCheck<F>
where
    F: for<'a> Fn(&'a Client, &'a str) -> BoxFuture<'a, Result<CheckResult, kube::Error>> + Send + Sync,
{
    fn check<'a>(&'a self, client: &'a Client, namespace: &'a str) -> BoxFuture<'a, Result<CheckResult, kube::Error>> {
        (self.0)(client, namespace)
    }
}

struct ConditionChecks {
    type_: String,
    checks: Vec<Box<dyn HealthCheck>>,
}

/// Computes health conditions for every object of kind `K` with one of the given types.
pub struct HealthChecker<K> {
    client: Client,
    types: Vec<String>,
    conditions: Vec<ConditionChecks>,
    interval: Duration,
    threshold: Option<Duration>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for HealthChecker<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let types: Vec<&str> = self.conditions.iter().map(|c| c.type_.as_str()).collect();
        f.debug_struct("HealthChecker").field("types", &self.types).field("conditions", &types).finish()
    }
}

impl<K: ExtensionResource> HealthChecker<K> {
    /// Checks every 30 s; Progressing turns False after 5 min.
    pub fn new(client: Client, types: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            client,
            types: types.into_iter().map(Into::into).collect(),
            conditions: Vec::new(),
            interval: Duration::from_secs(30),
            threshold: Some(Duration::from_secs(300)),
            _kind: std::marker::PhantomData,
        }
    }

    /// Adds a condition type computed from `checks`.
    pub fn condition(mut self, type_: impl Into<String>, checks: Vec<Box<dyn HealthCheck>>) -> Self {
        self.conditions.push(ConditionChecks { type_: type_.into(), checks });
        self
    }

    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// After how long Progressing turns False (`None`: never).
    pub fn progressing_threshold(mut self, threshold: Option<Duration>) -> Self {
        self.threshold = threshold;
        self
    }

    /// One round over every object; returns how many objects' conditions changed.
    pub async fn check_all(&self) -> Result<usize, kube::Error> {
        let objects = K::api(self.client.clone(), None).list(&ListParams::default()).await?;
        let mut changed = 0;
        for obj in objects.items {
            let spec = obj.default_spec();
            let last = obj.default_status().and_then(|s| s.last_operation.as_ref());
            let skip = !self.types.contains(&spec.type_)
                || obj.meta().deletion_timestamp.is_some()
                || is_migrated(last)
                || last.is_none();
            if skip {
                continue;
            }
            if self.check_object(&obj).await? {
                changed += 1;
            }
        }
        Ok(changed)
    }

    async fn check_object(&self, obj: &K) -> Result<bool, kube::Error> {
        let namespace = obj.namespace().unwrap_or_default();
        let mut conditions = obj.default_status().map(|s| s.conditions.clone()).unwrap_or_default();
        let now = Time(Timestamp::now());
        let mut changed = false;
        for c in &self.conditions {
            let mut results = Vec::new();
            let mut error = None;
            for check in &c.checks {
                match check.check(&self.client, &namespace).await {
                    Ok(r) => results.push(r),
                    Err(e) => error = Some(e.to_string()),
                }
            }
            let (status, reason, message, codes) = match error {
                Some(e) => (
                    ConditionStatus::Unknown,
                    REASON_CHECK_ERROR.to_string(),
                    format!("running the check failed: {e}"),
                    Vec::new(),
                ),
                None => {
                    condition_content(get_condition(&conditions, &c.type_), &aggregate(results), self.threshold, &now)
                }
            };
            let message = if message.is_empty() { reason.clone() } else { message };
            let update = ConditionUpdate { type_: &c.type_, status, reason: &reason, message: &message, codes: &codes };
            changed |= set_condition(&mut conditions, update, &now);
        }
        if changed {
            let patch = serde_json::json!({ "status": { "conditions": conditions } });
            K::api(self.client.clone(), obj.namespace().as_deref())
                .patch_status(&obj.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        Ok(changed)
    }

    /// Runs [`HealthChecker::check_all`] every interval until `stop` resolves.
    pub async fn run(self, stop: impl Future<Output = ()>) {
        let mut stop = std::pin::pin!(stop);
        loop {
            if let Err(e) = self.check_all().await {
                tracing::warn!(error = %runtime::events::error_chain(&e), "health checks");
            }
            tokio::select! {
                _ = &mut stop => return,
                _ = tokio::time::sleep(self.interval) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStatus};

    fn deployment(replicas: i32, updated: i32, available: i32) -> Deployment {
        Deployment {
            metadata: kube::api::ObjectMeta { name: Some("d".into()), generation: Some(1), ..Default::default() },
            spec: Some(DeploymentSpec { replicas: Some(replicas), ..Default::default() }),
            status: Some(DeploymentStatus {
                observed_generation: Some(1),
                replicas: Some(updated),
                updated_replicas: Some(updated),
                available_replicas: Some(available),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn deployment_verdicts() {
        assert_eq!(deployment_health(&deployment(2, 2, 2)), CheckResult::Healthy);
        assert!(matches!(deployment_health(&deployment(2, 1, 1)), CheckResult::Progressing(_)));
        assert!(matches!(deployment_health(&deployment(2, 2, 1)), CheckResult::Unhealthy { .. }));
        let mut d = deployment(2, 2, 2);
        d.metadata.generation = Some(2);
        assert!(matches!(deployment_health(&d), CheckResult::Progressing(_)));
    }

    #[test]
    fn nodes_verdicts() {
        let node = |name: &str, ready: &str| -> Node {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "status": {"conditions": [{"type": "Ready", "status": ready}]}
            }))
            .unwrap()
        };
        assert_eq!(nodes_health(&[node("a", "True")]), CheckResult::Healthy);
        let CheckResult::Unhealthy { message, .. } = nodes_health(&[node("a", "True"), node("b", "False")]) else {
            panic!()
        };
        assert!(message.contains('b') && !message.contains("a,"));
    }

    #[test]
    fn aggregate_takes_the_worst() {
        let p = CheckResult::Progressing("p".into());
        let u = CheckResult::unhealthy("U", "u");
        assert_eq!(aggregate([CheckResult::Healthy, p.clone()]), p);
        assert_eq!(aggregate([p.clone(), u.clone(), CheckResult::Healthy]), u);
        assert_eq!(aggregate([]), CheckResult::Healthy);
    }

    fn at(s: i64) -> Time {
        Time(Timestamp::from_second(s).unwrap())
    }

    fn cond(status: ConditionStatus, reason: &str, since: i64) -> Condition {
        Condition {
            type_: "ControlPlaneHealthy".into(),
            status,
            last_transition_time: at(since),
            last_update_time: at(since),
            reason: reason.into(),
            message: String::new(),
            codes: vec![],
        }
    }

    #[test]
    fn progressing_turns_false_after_the_threshold_and_stays_false() {
        let p = CheckResult::Progressing("rolling".into());
        let t = Some(Duration::from_secs(60));
        assert_eq!(condition_content(None, &p, t, &at(0)).0, ConditionStatus::Progressing);
        let prev = cond(ConditionStatus::Progressing, REASON_PROGRESSING, 0);
        assert_eq!(condition_content(Some(&prev), &p, t, &at(30)).0, ConditionStatus::Progressing);
        let (status, reason, ..) = condition_content(Some(&prev), &p, t, &at(61));
        assert_eq!((status, reason.as_str()), (ConditionStatus::False, REASON_PROGRESSING_TOO_LONG));
        let stuck = cond(ConditionStatus::False, REASON_PROGRESSING_TOO_LONG, 61);
        assert_eq!(condition_content(Some(&stuck), &p, t, &at(62)).0, ConditionStatus::False);
        assert_eq!(condition_content(Some(&stuck), &CheckResult::Healthy, t, &at(63)).0, ConditionStatus::True);
        // Without a threshold it never turns False.
        assert_eq!(condition_content(Some(&prev), &p, None, &at(10_000)).0, ConditionStatus::Progressing);
        // A previous True does not count towards the threshold.
        let healthy = cond(ConditionStatus::True, REASON_HEALTHY, 0);
        assert_eq!(condition_content(Some(&healthy), &p, t, &at(1000)).0, ConditionStatus::Progressing);
    }
}
