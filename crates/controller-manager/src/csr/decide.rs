//! What to do with one CertificateSigningRequest. Pure: the CSR's signer, its parsed request,
//! usages and requester in; a decision out. The one check that needs the API (may the
//! requester bootstrap this seed?) is asked for ([`Decision::Authorize`]) and answered by
//! [`after_review`].
//!
//! A CSR is a *seed identity* CSR when its signer is `kubernetes.io/kube-apiserver-client` and
//! its request's common name starts with `gardener.cloud:system:seed:`. Only those are judged;
//! everything else is left alone (other approvers, or people, decide them). A seed identity CSR
//! is approved when:
//! * the name after the prefix is not empty;
//! * its organizations are exactly `gardener.cloud:system:seeds`;
//! * it asks for no subject alternative names;
//! * its usages include `client auth` and are all of `digital signature`, `key encipherment`,
//!   `client auth`;
//! * the requester is that seed already (a renewal), or a SubjectAccessReview allows the
//!   requester `create` on `certificates.k8s.io` `certificatesigningrequests/seedclient` named
//!   after the seed (stricter than Gardener, which does not check the name).
//!
//! Otherwise it is denied with a reason that names the failed check.

use api::helpers::seed_identity;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::ParsedExtension;
use x509_parser::prelude::FromDer;

/// The usages a seed client certificate may have; `client auth` is required.
pub const ALLOWED_USAGES: &[&str] = &["digital signature", "key encipherment", "client auth"];
/// The condition reason of an approval.
pub const APPROVED_REASON: &str = "AutoApproved";

/// The parts of a PEM certificate request the approver looks at.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    pub common_name: String,
    pub organizations: Vec<String>,
    /// Whether a subjectAltName extension is requested (of any kind).
    pub has_sans: bool,
}

/// Parses `spec.request` (a PEM `CERTIFICATE REQUEST`); an error says what is wrong.
pub fn parse_request(pem: &[u8]) -> Result<Request, String> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem).map_err(|e| format!("spec.request is not PEM ({e})"))?;
    if block.label != "CERTIFICATE REQUEST" {
        return Err(format!("spec.request holds a {:?} block, not a CERTIFICATE REQUEST", block.label));
    }
    let (_, csr) = X509CertificationRequest::from_der(&block.contents)
        .map_err(|e| format!("spec.request is not a PKCS#10 certificate request ({e})"))?;
    let subject = &csr.certification_request_info.subject;
    let text = |v: &x509_parser::x509::AttributeTypeAndValue<'_>| v.as_str().map(str::to_string).ok();
    let has_sans = csr
        .requested_extensions()
        .is_some_and(|mut exts| exts.any(|e| matches!(e, ParsedExtension::SubjectAlternativeName(_))));
    Ok(Request {
        common_name: subject.iter_common_name().find_map(text).unwrap_or_default(),
        organizations: subject.iter_organization().filter_map(text).collect(),
        has_sans,
    })
}

/// What is known of one CSR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts<'a> {
    pub signer: &'a str,
    /// `status.conditions` holds `Approved` or `Denied`.
    pub decided: bool,
    /// The parsed `spec.request`; `Err` when it does not parse.
    pub request: Result<Request, String>,
    pub usages: &'a [String],
    /// `spec.username` and `spec.groups`: who created the CSR.
    pub username: &'a str,
    pub groups: &'a [String],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Not a seed identity CSR, or already decided.
    Ignore,
    Approve {
        seed: String,
        message: String,
    },
    Deny {
        reason: &'static str,
        message: String,
    },
    /// Ask a SubjectAccessReview whether the requester may bootstrap `seed`, then
    /// [`after_review`].
    Authorize {
        seed: String,
    },
}

/// The decision for a CSR before any API call.
pub fn decide(facts: &Facts<'_>) -> Decision {
    if facts.decided || facts.signer != seed_identity::SIGNER {
        return Decision::Ignore;
    }
    // A request that does not parse names no seed: not ours to judge.
    let Ok(request) = &facts.request else { return Decision::Ignore };
    let Some(seed) = request.common_name.strip_prefix(seed_identity::USER_PREFIX) else { return Decision::Ignore };
    let deny = |reason, message: String| Decision::Deny { reason, message };
    if seed.is_empty() {
        return deny("SeedClientInvalidCommonName", format!("common name {:?} names no seed", request.common_name));
    }
    if request.organizations != [seed_identity::GROUP] {
        return deny(
            "SeedClientInvalidOrganization",
            format!("organizations must be exactly [{:?}], are {:?}", seed_identity::GROUP, request.organizations),
        );
    }
    if request.has_sans {
        return deny(
            "SeedClientSubjectAlternativeNames",
            "a seed client certificate must not have subject alternative names".into(),
        );
    }
    if let Err(why) = check_usages(facts.usages) {
        return deny("SeedClientInvalidUsages", why);
    }
    if seed_identity::seed_of(facts.username, facts.groups) == Some(seed) {
        return Decision::Approve {
            seed: seed.to_string(),
            message: format!("seed {seed} renews its own client certificate"),
        };
    }
    Decision::Authorize { seed: seed.to_string() }
}

fn check_usages(usages: &[String]) -> Result<(), String> {
    if let Some(other) = usages.iter().find(|u| !ALLOWED_USAGES.contains(&u.as_str())) {
        return Err(format!("usage {other:?} is not allowed (allowed: {})", ALLOWED_USAGES.join(", ")));
    }
    if !usages.iter().any(|u| u == "client auth") {
        return Err(format!("usages must include \"client auth\", are {usages:?}"));
    }
    Ok(())
}

/// The decision once the SubjectAccessReview for `requester` and `seed` answered `allowed`.
pub fn after_review(seed: &str, requester: &str, allowed: bool) -> Decision {
    if allowed {
        Decision::Approve {
            seed: seed.to_string(),
            message: format!("{requester} may create certificatesigningrequests/seedclient {seed}"),
        }
    } else {
        Decision::Deny {
            reason: "SeedClientNotAuthorized",
            message: format!(
                "{requester} may not create certificatesigningrequests/seedclient {seed} (certificates.k8s.io), \
                 and is not seed {seed} itself"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
