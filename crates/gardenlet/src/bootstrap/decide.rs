//! The pure decisions of the garden identity: is a certificate good enough to keep using, and
//! when is it renewed. A certificate is used at start while more than [`MIN_REMAINING`] of its
//! lifetime remains and it is this seed's identity; it is renewed once [`RENEW_AT`] of its
//! lifetime has passed, which leaves the same margin for a renewal to succeed.

use api::helpers::seed_identity;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use x509_parser::prelude::{FromDer, X509Certificate};

/// The share of the lifetime (percent) that must remain for a certificate to be used at start.
pub const MIN_REMAINING: i64 = 20;
/// The share of the lifetime (percent) after which a certificate is renewed.
pub const RENEW_AT: i64 = 80;

/// What the decisions read of a client certificate (no key material).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    pub common_name: String,
    pub organizations: Vec<String>,
    pub not_before: Timestamp,
    pub not_after: Timestamp,
}

/// Reads the first certificate of a PEM text.
pub fn parse_certificate(pem: &[u8]) -> Result<Certificate, String> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem).map_err(|e| format!("is not PEM ({e})"))?;
    let (_, cert) =
        X509Certificate::from_der(&block.contents).map_err(|e| format!("is not an X.509 certificate ({e})"))?;
    let text = |v: &x509_parser::x509::AttributeTypeAndValue<'_>| v.as_str().map(str::to_string).ok();
    let time = |t: x509_parser::time::ASN1Time| {
        Timestamp::from_second(t.timestamp()).map_err(|e| format!("has an impossible validity ({e})"))
    };
    Ok(Certificate {
        common_name: cert.subject().iter_common_name().find_map(text).unwrap_or_default(),
        organizations: cert.subject().iter_organization().filter_map(text).collect(),
        not_before: time(cert.validity().not_before)?,
        not_after: time(cert.validity().not_after)?,
    })
}

/// Whether `cert` can be used by seed `seed` at `now`: it is the seed's identity and more than
/// [`MIN_REMAINING`] of its lifetime is left. The error says why not.
pub fn usable(cert: &Certificate, seed: &str, now: Timestamp) -> Result<(), String> {
    let user = seed_identity::user(seed);
    if cert.common_name != user || !cert.organizations.iter().any(|o| o == seed_identity::GROUP) {
        return Err(format!(
            "it is for {:?} in {:?}, not {user:?} in {:?}",
            cert.common_name,
            cert.organizations,
            seed_identity::GROUP
        ));
    }
    if now < cert.not_before {
        return Err(format!("it is valid only from {}", cert.not_before));
    }
    let lifetime = cert.not_after.duration_since(cert.not_before);
    let remaining = cert.not_after.duration_since(now);
    if lifetime <= SignedDuration::ZERO
        || i128::from(remaining.as_secs()) * 100 <= i128::from(lifetime.as_secs()) * i128::from(MIN_REMAINING)
    {
        return Err(format!(
            "{} of its lifetime remain (until {}), more than {MIN_REMAINING}% needed",
            percent(remaining, lifetime),
            cert.not_after,
        ));
    }
    Ok(())
}

/// When `cert` is renewed: after [`RENEW_AT`] of its lifetime.
pub fn renew_at(cert: &Certificate) -> Timestamp {
    let lifetime = cert.not_after.duration_since(cert.not_before);
    let secs = (lifetime.as_secs() / 100) * RENEW_AT + (lifetime.as_secs() % 100) * RENEW_AT / 100;
    cert.not_before.checked_add(SignedDuration::from_secs(secs.max(0))).unwrap_or(cert.not_after)
}

/// How long from `now` until `at` (zero when it has passed).
pub fn until(now: Timestamp, at: Timestamp) -> std::time::Duration {
    std::time::Duration::try_from(at.duration_since(now)).unwrap_or_default()
}

fn percent(part: SignedDuration, whole: SignedDuration) -> String {
    if whole <= SignedDuration::ZERO {
        return "none".into();
    }
    format!("{:.0}%", (part.as_secs_f64() / whole.as_secs_f64() * 100.0).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn cert(seed: &str, from: &str, to: &str) -> Certificate {
        Certificate {
            common_name: seed_identity::user(seed),
            organizations: vec![seed_identity::GROUP.into()],
            not_before: at(from),
            not_after: at(to),
        }
    }

    #[test]
    fn a_certificate_is_used_while_more_than_a_fifth_of_its_lifetime_remains() {
        // 100 days of lifetime: usable up to day 80 (exclusive).
        let c = cert("a", "2026-01-01T00:00:00Z", "2026-04-11T00:00:00Z");
        assert_eq!(usable(&c, "a", at("2026-01-01T00:00:00Z")), Ok(()));
        assert_eq!(usable(&c, "a", at("2026-03-21T23:59:00Z")), Ok(()), "day 79.99");
        let why = usable(&c, "a", at("2026-03-22T00:00:00Z")).unwrap_err();
        assert!(why.contains("20% of its lifetime remain") && why.contains("more than 20% needed"), "{why}");
        assert!(usable(&c, "a", at("2026-05-01T00:00:00Z")).unwrap_err().contains("0% of its lifetime"));
        assert!(usable(&c, "a", at("2025-12-31T00:00:00Z")).unwrap_err().contains("valid only from"));
    }

    #[test]
    fn only_this_seeds_identity_is_used() {
        let now = at("2026-01-02T00:00:00Z");
        let c = cert("b", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z");
        assert!(usable(&c, "a", now).unwrap_err().contains("gardener.cloud:system:seed:b"));
        let mut c = cert("a", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z");
        c.organizations = vec!["system:masters".into()];
        assert!(usable(&c, "a", now).is_err());
        let empty = cert("a", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z");
        assert!(usable(&empty, "a", at("2026-01-01T00:00:00Z")).unwrap_err().contains("none"));
    }

    #[test]
    fn renewal_is_due_after_four_fifths_of_the_lifetime() {
        let c = cert("a", "2026-01-01T00:00:00Z", "2026-04-11T00:00:00Z");
        assert_eq!(renew_at(&c), at("2026-03-22T00:00:00Z"));
        let short = cert("a", "2026-01-01T00:00:00Z", "2026-01-01T00:01:40Z");
        assert_eq!(renew_at(&short), at("2026-01-01T00:01:20Z"));
        assert_eq!(until(at("2026-01-01T00:00:00Z"), renew_at(&short)), std::time::Duration::from_secs(80));
        assert_eq!(until(at("2026-02-01T00:00:00Z"), renew_at(&short)), std::time::Duration::ZERO, "overdue: now");
    }

    #[test]
    fn a_pem_certificate_is_read() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name.push(rcgen::DnType::CommonName, seed_identity::user("a"));
        params.distinguished_name.push(rcgen::DnType::OrganizationName, seed_identity::GROUP);
        params.not_before = rcgen::date_time_ymd(2026, 1, 1);
        params.not_after = rcgen::date_time_ymd(2027, 1, 1);
        let pem = params.self_signed(&key).unwrap().pem();
        let parsed = parse_certificate(pem.as_bytes()).unwrap();
        assert_eq!(parsed, cert("a", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"));
        assert!(parse_certificate(b"garbage").unwrap_err().contains("not PEM"));
    }
}
