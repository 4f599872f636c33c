//! One CertificateSigningRequest: read what [`super::decide`] needs from the object, ask a
//! SubjectAccessReview when it says so, and write the decision as an `Approved` or `Denied`
//! condition through the `/approval` subresource (with the CSR's resourceVersion, so a
//! concurrent decision wins and this one is retried on the fresh object). Each decision is
//! published as an event on the CSR and logged; nothing of the request's key reaches either.

use super::Context;
use super::decide::{self, APPROVED_REASON, Decision, Facts};
use crate::runtime::{self, KubeError, kube_err};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::PostParams;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use std::sync::Arc;

pub const NAME: &str = "csr";

pub use crate::runtime::KubeError as Error;

pub async fn reconcile(csr: Arc<CertificateSigningRequest>, ctx: Arc<Context>) -> Result<Action, Error> {
    runtime::instrumented(&ctx.common, csr.as_ref(), reconcile_csr(&csr, &ctx)).await
}

pub fn error_policy(csr: Arc<CertificateSigningRequest>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common.retry_after_failure(csr.as_ref())
}

/// Whether the CSR carries an `Approved` or `Denied` condition.
pub fn decided(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Approved" || c.type_ == "Denied"))
}

#[tracing::instrument(skip_all, fields(csr = %csr.name_any()))]
async fn reconcile_csr(csr: &CertificateSigningRequest, ctx: &Context) -> Result<Action, Error> {
    let spec = &csr.spec;
    let (usages, groups) = (spec.usages.clone().unwrap_or_default(), spec.groups.clone().unwrap_or_default());
    let username = spec.username.clone().unwrap_or_default();
    let facts = Facts {
        signer: &spec.signer_name,
        decided: decided(csr),
        request: decide::parse_request(&spec.request.0),
        usages: &usages,
        username: &username,
        groups: &groups,
    };
    let decision = match decide::decide(&facts) {
        Decision::Authorize { seed } => {
            let allowed = may_bootstrap(ctx, csr, &seed).await?;
            decide::after_review(&seed, &username, allowed)
        }
        other => other,
    };
    let (type_, reason, message) = match decision {
        Decision::Ignore | Decision::Authorize { .. } => return Ok(Action::await_change()),
        Decision::Approve { seed, message } => {
            tracing::info!(%seed, requester = %username, "approving a seed client certificate");
            ("Approved", APPROVED_REASON, format!("Approved by gardener-controller-manager: {message}"))
        }
        Decision::Deny { reason, message } => {
            tracing::info!(%reason, %message, requester = %username, "denying a seed client certificate");
            ("Denied", reason, format!("Denied by gardener-controller-manager: {message}"))
        }
    };
    write_condition(ctx, csr, type_, reason, &message).await?;
    let event_type = if type_ == "Approved" { EventType::Normal } else { EventType::Warning };
    ctx.common.event(csr, event_type, reason, type_, message).await;
    Ok(Action::await_change())
}

/// Whether the CSR's requester (its user, groups, uid and extra as the API server recorded
/// them) may `create` `certificatesigningrequests/seedclient` named `seed`.
async fn may_bootstrap(ctx: &Context, csr: &CertificateSigningRequest, seed: &str) -> Result<bool, Error> {
    let spec = &csr.spec;
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: spec.username.clone(),
            groups: spec.groups.clone(),
            uid: spec.uid.clone(),
            extra: spec.extra.clone(),
            resource_attributes: Some(ResourceAttributes {
                group: Some("certificates.k8s.io".into()),
                resource: Some("certificatesigningrequests".into()),
                subresource: Some(api::helpers::seed_identity::CSR_SUBRESOURCE.into()),
                verb: Some("create".into()),
                name: Some(seed.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SubjectAccessReview>::all(ctx.common.client.clone())
        .create(&PostParams::default(), &review)
        .await
        .map_err(kube_err(
            "SubjectAccessReviewFailed",
            format!(
                "asking whether the requester of CertificateSigningRequest {} may bootstrap seed {seed}",
                csr.name_any()
            ),
        ))?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// Adds the condition through `/approval` (an update with the CSR's resourceVersion).
async fn write_condition(
    ctx: &Context,
    csr: &CertificateSigningRequest,
    type_: &str,
    reason: &str,
    message: &str,
) -> Result<(), KubeError> {
    let now = Time(ctx.common.clock.now());
    let mut updated = csr.clone();
    updated.metadata.managed_fields = None;
    let status = updated.status.get_or_insert_with(Default::default);
    status.conditions.get_or_insert_with(Vec::new).push(CertificateSigningRequestCondition {
        type_: type_.into(),
        status: "True".into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now),
    });
    let name = csr.name_any();
    Api::<CertificateSigningRequest>::all(ctx.common.client.clone())
        .replace_subresource("approval", &name, &PostParams::default(), &updated)
        .await
        .map_err(kube_err("WriteApprovalFailed", format!("writing {type_} to CertificateSigningRequest {name}")))?;
    Ok(())
}
