//! The wire side of the seed authorizer: a `SubjectAccessReview` (`authorization.k8s.io/v1`,
//! or `v1beta1`, whose spec names the groups `group`) in, the same kind in the request's
//! apiVersion out, with `status.allowed` or no opinion (`allowed: false`, `denied: false`, and
//! the reason). A body that is not a review is answered with no opinion too, so the API server
//! goes on to its next authorizer.

use super::authorizer::{self, Attributes, Decision};
use super::graph::SeedGraph;
use serde::{Deserialize, Serialize};

/// The API versions of SubjectAccessReview this endpoint answers.
pub const VERSIONS: [&str; 2] = ["authorization.k8s.io/v1", "authorization.k8s.io/v1beta1"];

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    spec: Spec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    resource_attributes: Option<ResourceAttributes>,
    #[serde(default)]
    user: String,
    /// v1
    #[serde(default)]
    groups: Vec<String>,
    /// v1beta1
    #[serde(default)]
    group: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ResourceAttributes {
    namespace: String,
    verb: String,
    group: String,
    resource: String,
    subresource: String,
    name: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    api_version: &'a str,
    kind: &'static str,
    status: Status,
}

#[derive(Debug, Serialize)]
struct Status {
    allowed: bool,
    denied: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    reason: String,
}

/// The attributes of a decoded review.
fn attributes(spec: Spec) -> Attributes {
    let groups = if spec.groups.is_empty() { spec.group } else { spec.groups };
    let mut attrs = Attributes { user: spec.user, groups, ..Default::default() };
    match spec.resource_attributes {
        Some(r) => {
            attrs.verb = r.verb;
            attrs.group = r.group;
            attrs.resource = r.resource;
            attrs.subresource = r.subresource;
            attrs.namespace = r.namespace;
            attrs.name = r.name;
        }
        None => attrs.non_resource = true,
    }
    attrs
}

/// What one review asked and how it was answered, for the caller's logs and metrics.
#[derive(Debug)]
pub struct Outcome {
    pub body: Vec<u8>,
    pub allowed: bool,
    /// The seed, when the user was a seed identity.
    pub seed: Option<String>,
    pub resource: String,
    pub reason: String,
}

/// Answers the SubjectAccessReview in `body`.
pub fn review_bytes(g: &dyn SeedGraph, body: &[u8]) -> Outcome {
    let (api_version, decision, attrs) = match serde_json::from_slice::<Review>(body) {
        Ok(review) => {
            let version = if VERSIONS.contains(&review.api_version.as_str()) {
                review.api_version
            } else {
                VERSIONS[0].to_string()
            };
            let attrs = attributes(review.spec);
            (version, authorizer::decide(g, &attrs), attrs)
        }
        Err(e) => (
            VERSIONS[0].to_string(),
            Decision::NoOpinion(format!("not a SubjectAccessReview: {e}")),
            Attributes::default(),
        ),
    };
    let (allowed, reason) = match decision {
        Decision::Allow => (true, String::new()),
        Decision::NoOpinion(reason) => (false, reason),
    };
    let answer = Answer {
        api_version: &api_version,
        kind: "SubjectAccessReview",
        status: Status { allowed, denied: false, reason: reason.clone() },
    };
    Outcome {
        body: serde_json::to_vec(&answer).unwrap_or_default(),
        allowed,
        seed: api::helpers::seed_identity::seed_of(&attrs.user, &attrs.groups).map(str::to_string),
        resource: attrs.resource,
        reason,
    }
}
