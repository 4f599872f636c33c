//! What to do with one AdminKubeconfigRequest. Pure: the request's times and phase, its
//! recorded creator, what is known of its Shoot and of the shoot's client CA, and the time in;
//! an issuance, a status to record, a deletion, or when to look again out.
//!
//! The rules:
//! * an issued request is deleted when its certificate expires (the certificate is useless
//!   then, and a user who needs access asks again);
//! * a request not issued within its requested validity (counted from its creation) is
//!   deleted, so a request for a shoot that never got a CA does not stay forever;
//! * a request without a recorded creator did not pass admission and fails: the certificate's
//!   user would be unknown;
//! * a request whose shoot is gone or being deleted fails;
//! * it waits (Pending) until the shoot advertises an address and gardenlet has published the
//!   client CA;
//! * otherwise a certificate is issued for at most the configured maximum.

use api::authentication::AdminKubeconfigRequestPhase as Phase;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::time::Duration;

/// What is known of the request's Shoot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShootFacts {
    Missing,
    Deleting,
    Present {
        /// The URL the kubeconfig points at (from `status.advertisedAddresses`).
        server: Option<String>,
        /// The kubeconfig's cluster name.
        cluster_name: String,
        /// Whether gardenlet has published the client CA (and the cluster CA bundle to trust).
        ca_available: bool,
    },
}

#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub created: Timestamp,
    pub phase: Option<Phase>,
    pub expiration: Option<Timestamp>,
    /// `spec.expirationSeconds` with the default applied.
    pub requested_seconds: i64,
    /// `gardener.cloud/created-by`.
    pub creator: Option<&'a str>,
    pub shoot: ShootFacts,
    pub now: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Delete the request; `reason` is the event's PascalCase reason.
    Delete { reason: &'static str, message: String },
    /// Sign a certificate for `user` valid for `validity` and record it.
    Issue { user: String, validity: Duration, server: String, cluster_name: String },
    /// Record this phase and message (when they differ from the status), then look again
    /// after `requeue_after` (changes of the Shoot or its published client CA wake it earlier).
    Record { phase: Phase, message: String, requeue_after: Duration },
    /// Nothing to write; look again after `requeue_after`.
    Wait { requeue_after: Duration },
}

/// The address a kubeconfig should use: the shoot's `external` advertised address, else its
/// `internal` one, else the first.
pub fn server_of(addresses: &[api::core::shoot::ShootAdvertisedAddress]) -> Option<String> {
    ["external", "internal"]
        .iter()
        .find_map(|name| addresses.iter().find(|a| a.name == *name))
        .or_else(|| addresses.first())
        .map(|a| a.url.clone())
}

/// The CA that signs the certificates (`ca-client`) and the CA whose bundle the kubeconfig
/// trusts (`ca`, published as a bundle that holds its predecessor during a rotation).
pub const CLIENT_CA: &str = "ca-client";
pub const CLUSTER_CA: &str = "ca";

fn plus(t: Timestamp, seconds: i64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs(seconds)).unwrap_or(Timestamp::MAX)
}

fn until(from: Timestamp, to: Timestamp) -> Duration {
    Duration::try_from(to.duration_since(from)).unwrap_or_default()
}

pub fn decide(f: &Facts<'_>, max_validity: Duration) -> Decision {
    if f.phase == Some(Phase::Issued) {
        let expires = f.expiration.unwrap_or(f.now);
        if f.now >= expires {
            return Decision::Delete { reason: "Expired", message: "its certificate expired".into() };
        }
        return Decision::Wait { requeue_after: until(f.now, expires) };
    }
    let deadline = plus(f.created, f.requested_seconds);
    if f.now >= deadline {
        return Decision::Delete {
            reason: "NotIssued",
            message: format!("it was not issued within its requested validity of {} s", f.requested_seconds),
        };
    }
    let left = until(f.now, deadline);
    let record = |phase, message: String| Decision::Record { phase, message, requeue_after: left };
    if f.phase == Some(Phase::Failed) {
        return Decision::Wait { requeue_after: left };
    }
    let Some(user) = f.creator.filter(|u| !u.trim().is_empty()) else {
        return record(
            Phase::Failed,
            "metadata.annotations[gardener.cloud/created-by] is missing: the request did not pass admission".into(),
        );
    };
    match &f.shoot {
        ShootFacts::Missing => record(Phase::Failed, "the shoot does not exist".into()),
        ShootFacts::Deleting => record(Phase::Failed, "the shoot is being deleted".into()),
        ShootFacts::Present { server: None, .. } => {
            record(Phase::Pending, "the shoot does not advertise an API server address yet".into())
        }
        ShootFacts::Present { ca_available: false, .. } => record(
            Phase::Pending,
            "the shoot's client CA is not published yet (InternalSecret <shoot>.ca-client)".into(),
        ),
        ShootFacts::Present { server: Some(server), cluster_name, ca_available: true } => Decision::Issue {
            user: user.to_string(),
            validity: Duration::from_secs(u64::try_from(f.requested_seconds).unwrap_or(0)).min(max_validity),
            server: server.clone(),
            cluster_name: cluster_name.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    fn t0() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    fn ready() -> ShootFacts {
        ShootFacts::Present { server: Some("https://api.example".into()), cluster_name: "c".into(), ca_available: true }
    }

    fn facts(shoot: ShootFacts) -> Facts<'static> {
        Facts {
            created: t0(),
            phase: None,
            expiration: None,
            requested_seconds: 3600,
            creator: Some("alice"),
            shoot,
            now: plus(t0(), 5),
        }
    }

    #[test]
    fn issues_for_the_creator_capped_by_the_maximum() {
        assert_eq!(
            decide(&facts(ready()), DAY),
            Decision::Issue {
                user: "alice".into(),
                validity: Duration::from_secs(3600),
                server: "https://api.example".into(),
                cluster_name: "c".into()
            }
        );
        let long = Facts { requested_seconds: 7 * 86_400, ..facts(ready()) };
        assert!(matches!(decide(&long, DAY), Decision::Issue { validity, .. } if validity == DAY));
    }

    #[test]
    fn waits_for_an_address_and_the_ca_then_gives_up_at_its_deadline() {
        let no_address = ShootFacts::Present { server: None, cluster_name: "c".into(), ca_available: true };
        let d = decide(&facts(no_address), DAY);
        assert!(
            matches!(&d, Decision::Record { phase: Phase::Pending, message, requeue_after }
                if message.contains("address") && *requeue_after == Duration::from_secs(3595)),
            "{d:?}"
        );
        let no_ca =
            ShootFacts::Present { server: Some("https://a".into()), cluster_name: "c".into(), ca_available: false };
        assert!(
            matches!(decide(&facts(no_ca.clone()), DAY), Decision::Record { phase: Phase::Pending, message, .. } if message.contains("CA"))
        );
        let late = Facts { now: plus(t0(), 3600), phase: Some(Phase::Pending), ..facts(no_ca) };
        assert!(matches!(decide(&late, DAY), Decision::Delete { reason: "NotIssued", .. }));
    }

    #[test]
    fn fails_without_creator_or_shoot_and_stays_failed() {
        let anonymous = Facts { creator: None, ..facts(ready()) };
        assert!(
            matches!(decide(&anonymous, DAY), Decision::Record { phase: Phase::Failed, message, .. } if message.contains("created-by"))
        );
        assert!(matches!(decide(&facts(ShootFacts::Missing), DAY), Decision::Record { phase: Phase::Failed, .. }));
        assert!(matches!(decide(&facts(ShootFacts::Deleting), DAY), Decision::Record { phase: Phase::Failed, .. }));
        // A failed request is never issued later, even when everything is ready now.
        let failed = Facts { phase: Some(Phase::Failed), ..facts(ready()) };
        assert_eq!(decide(&failed, DAY), Decision::Wait { requeue_after: Duration::from_secs(3595) });
    }

    #[test]
    fn the_external_address_wins() {
        use api::core::shoot::ShootAdvertisedAddress as A;
        let a = |name: &str| A { name: name.into(), url: format!("https://{name}") };
        assert_eq!(server_of(&[a("internal"), a("external")]).as_deref(), Some("https://external"));
        assert_eq!(server_of(&[a("service-account-issuer"), a("internal")]).as_deref(), Some("https://internal"));
        assert_eq!(server_of(&[a("other")]).as_deref(), Some("https://other"));
        assert_eq!(server_of(&[]), None);
    }

    #[test]
    fn an_issued_request_goes_when_its_certificate_expires() {
        let issued = Facts { phase: Some(Phase::Issued), expiration: Some(plus(t0(), 600)), ..facts(ready()) };
        assert_eq!(decide(&issued, DAY), Decision::Wait { requeue_after: Duration::from_secs(595) });
        let expired = Facts { now: plus(t0(), 600), ..issued };
        assert!(matches!(decide(&expired, DAY), Decision::Delete { reason: "Expired", .. }));
    }
}
