//! From AdmissionRequest to AdmissionResponse: decode the objects, look up what the rules need,
//! run defaulting (mutating endpoint, answered with a JSONPatch) or validation (validating
//! endpoint, answered with the field errors). Pure apart from reading the [`Lookup`].

pub mod decode;
pub mod kinds;
pub mod lookup;
mod pods;
pub mod profiles;
mod quotas;

pub use lookup::{Lookup, StaticLookup};

use crate::field::ErrorList;
use crate::identity::{Identities, UserInfo};
use k8s_openapi::jiff::Timestamp;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Which webhook a request came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Mutate,
    Validate,
}

/// Settings of the rules that are policy rather than fact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RulesConfig {
    /// Who may set or change a Shoot's `spec.seedName` (the scheduler; operators migrating).
    #[serde(default = "Identities::default_seed_assigners")]
    pub seed_assigners: Identities,
    /// The Pod Security Standards level of a namespace without the label
    /// `pod-security.kubernetes.io/enforce` ([`crate::podsecurity`]).
    #[serde(default = "default_pod_security_level")]
    pub default_pod_security_level: crate::podsecurity::Level,
}

fn default_pod_security_level() -> crate::podsecurity::Level {
    crate::podsecurity::DEFAULT_LEVEL
}

impl Default for RulesConfig {
    fn default() -> Self {
        Self {
            seed_assigners: Identities::default_seed_assigners(),
            default_pod_security_level: default_pod_security_level(),
        }
    }
}

/// The admission logic of the webhook server.
#[derive(Clone)]
pub struct Admission {
    lookup: Arc<dyn Lookup>,
    /// What relates objects to seeds (the seed authorizer and SeedRestriction).
    graph: Arc<dyn crate::seedauth::SeedGraph>,
    config: RulesConfig,
    clock: fn() -> Timestamp,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission").field("config", &self.config).finish_non_exhaustive()
    }
}

/// What the rules of one request concluded.
#[derive(Debug, Default)]
pub struct Outcome {
    pub errors: ErrorList,
    /// The object after mutation, when it changed (mutating endpoint only).
    pub mutated: Option<serde_json::Value>,
    /// What the refusal says before the field errors, when the errors alone do not name the
    /// object (a Pod's refusal names the pod, its namespace and the level enforced there); such
    /// a refusal is answered with 403 Forbidden.
    pub summary: Option<String>,
}

/// The request as the rules see it.
#[derive(Debug)]
pub struct Request<'a> {
    pub operation: Operation,
    pub namespace: Option<&'a str>,
    pub user: UserInfo,
    pub object: Option<serde_json::Value>,
    pub old_object: Option<serde_json::Value>,
}

impl Admission {
    pub fn new(lookup: Arc<dyn Lookup>, config: RulesConfig) -> Self {
        Self { lookup, graph: Arc::new(crate::seedauth::EmptyGraph), config, clock: Timestamp::now }
    }

    /// With the relations of objects to seeds (without: every object is unrelated to every
    /// seed, so seeds may create nothing SeedRestriction judges).
    pub fn with_graph(mut self, graph: Arc<dyn crate::seedauth::SeedGraph>) -> Self {
        self.graph = graph;
        self
    }

    /// The relations of objects to seeds.
    pub fn graph(&self) -> &dyn crate::seedauth::SeedGraph {
        self.graph.as_ref()
    }

    /// With a fixed clock (tests).
    pub fn with_clock(mut self, clock: fn() -> Timestamp) -> Self {
        self.clock = clock;
        self
    }

    pub(crate) fn lookup(&self) -> &dyn Lookup {
        self.lookup.as_ref()
    }

    pub(crate) fn config(&self) -> &RulesConfig {
        &self.config
    }

    pub(crate) fn now(&self) -> Timestamp {
        (self.clock)()
    }

    /// Handles a raw AdmissionReview body and returns the response body and whether it
    /// allowed the request. Never fails: a body that is not an AdmissionReview gets an
    /// "invalid" response.
    pub fn review_bytes(&self, endpoint: Endpoint, resource: &str, body: &[u8]) -> (Vec<u8>, bool) {
        let response = match serde_json::from_slice::<AdmissionReview<DynamicObject>>(body)
            .map_err(|e| e.to_string())
            .and_then(|r| -> Result<AdmissionRequest<DynamicObject>, String> {
                r.try_into().map_err(|e: kube::core::admission::ConvertAdmissionReviewError| e.to_string())
            }) {
            Ok(req) => self.review(endpoint, resource, &req),
            Err(e) => AdmissionResponse::invalid(format!("not an AdmissionReview: {e}")),
        };
        let allowed = response.allowed;
        // Answer as admission.k8s.io/v1 whatever the request's type fields said.
        let mut response = response;
        response.types = kube::core::TypeMeta {
            api_version: kube::core::admission::META_API_VERSION_V1.into(),
            kind: kube::core::admission::META_KIND.into(),
        };
        (serde_json::to_vec(&response.into_review()).unwrap_or_default(), allowed)
    }

    /// Answers one request.
    pub fn review(
        &self,
        endpoint: Endpoint,
        resource: &str,
        req: &AdmissionRequest<DynamicObject>,
    ) -> AdmissionResponse {
        let to_value = |o: &Option<DynamicObject>| o.as_ref().and_then(|o| serde_json::to_value(o).ok());
        let request = Request {
            operation: req.operation.clone(),
            namespace: req.namespace.as_deref(),
            user: UserInfo {
                username: req.user_info.username.clone().unwrap_or_default(),
                groups: req.user_info.groups.clone().unwrap_or_default(),
            },
            object: to_value(&req.object),
            old_object: to_value(&req.old_object),
        };
        let outcome = self.decide(endpoint, resource, &request);
        let response = AdmissionResponse::from(req);
        if !outcome.errors.is_empty() {
            tracing::info!(resource, name = %req.name, namespace = ?req.namespace, operation = ?req.operation, errors = %outcome.errors, "refused");
            let Some(summary) = &outcome.summary else { return response.deny(outcome.errors.to_string()) };
            // Answered as upstream PodSecurity admission answers: 403 Forbidden (the API
            // server would make a refusal without a code 400 Bad Request).
            let mut denied = response.deny(format!("{summary}: {}", outcome.errors));
            denied.result.code = 403;
            denied.result.reason = "Forbidden".into();
            return denied;
        }
        match (outcome.mutated, &request.object) {
            (Some(after), Some(before)) => {
                let patch = json_patch::diff(before, &after);
                if patch.0.is_empty() {
                    return response;
                }
                response.with_patch(patch).unwrap_or_else(|e| AdmissionResponse::from(req).deny(e.to_string()))
            }
            _ => response,
        }
    }

    /// The rules' verdict for a request to `resource` (plural, e.g. `shoots`).
    pub fn decide(&self, endpoint: Endpoint, resource: &str, req: &Request<'_>) -> Outcome {
        kinds::decide(self, endpoint, resource, req)
    }
}
