#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use super::*;
use rcgen::{CertificateParams, DnType, KeyPair, SanType};

/// A PEM CSR with `cn`, the organizations and the DNS SANs.
fn pem(cn: &str, orgs: &[&str], sans: &[&str]) -> Vec<u8> {
    let mut params = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    // rcgen keeps one value per attribute type; further organizations go in as the same OID
    // (2.5.4.10) spelled as a custom type.
    for (i, o) in orgs.iter().enumerate() {
        let ty = if i == 0 { DnType::OrganizationName } else { DnType::CustomDnType(vec![2, 5, 4, 10]) };
        params.distinguished_name.push(ty, *o);
    }
    let key = KeyPair::generate().unwrap();
    params.serialize_request(&key).unwrap().pem().unwrap().into_bytes()
}

fn seed_request(cn: &str) -> Request {
    Request { common_name: cn.into(), organizations: vec![seed_identity::GROUP.into()], has_sans: false }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_request_is_read_from_its_pem() {
    let parsed = parse_request(&pem("gardener.cloud:system:seed:a", &[seed_identity::GROUP], &[])).unwrap();
    assert_eq!(parsed, seed_request("gardener.cloud:system:seed:a"));
    let parsed = parse_request(&pem("x", &["o1", "o2"], &["a.example"])).unwrap();
    assert_eq!(parsed.organizations, ["o1", "o2"]);
    assert!(parsed.has_sans);
    let mut ip = CertificateParams::default();
    ip.subject_alt_names = vec![SanType::IpAddress("10.0.0.1".parse().unwrap())];
    let text = ip.serialize_request(&KeyPair::generate().unwrap()).unwrap().pem().unwrap();
    assert!(parse_request(text.as_bytes()).unwrap().has_sans, "an IP SAN counts too");
    assert!(parse_request(b"nonsense").unwrap_err().contains("not PEM"));
    let cert = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    assert!(parse_request(cert.as_bytes()).unwrap_err().contains("not a CERTIFICATE REQUEST"));
}

fn facts<'a>(request: Request, usages: &'a [String], username: &'a str, groups: &'a [String]) -> Facts<'a> {
    Facts { signer: seed_identity::SIGNER, decided: false, request: Ok(request), usages, username, groups }
}

#[test]
fn other_signers_other_names_decided_or_unreadable_requests_are_left_alone() {
    let usages = strings(&["client auth"]);
    let groups = strings(&["system:authenticated"]);
    let mut f = facts(seed_request("gardener.cloud:system:seed:a"), &usages, "bob", &groups);
    f.signer = "kubernetes.io/kubelet-serving";
    assert_eq!(decide(&f), Decision::Ignore);
    let f = facts(seed_request("system:node:n1"), &usages, "bob", &groups);
    assert_eq!(decide(&f), Decision::Ignore);
    let mut f = facts(seed_request("gardener.cloud:system:seed:a"), &usages, "bob", &groups);
    f.decided = true;
    assert_eq!(decide(&f), Decision::Ignore);
    f.decided = false;
    f.request = Err("broken".into());
    assert_eq!(decide(&f), Decision::Ignore);
}

#[test]
fn each_failed_check_is_denied_with_its_reason() {
    let good = strings(&["digital signature", "key encipherment", "client auth"]);
    let groups = strings(&["system:serviceaccounts"]);
    let reason = |d: Decision| match d {
        Decision::Deny { reason, message } => (reason, message),
        other => panic!("expected a denial: {other:?}"),
    };
    let cases: Vec<(Request, Vec<String>, &str, &str)> = vec![
        (seed_request("gardener.cloud:system:seed:"), good.clone(), "SeedClientInvalidCommonName", "names no seed"),
        (
            Request {
                organizations: strings(&[seed_identity::GROUP, "system:masters"]),
                ..seed_request("gardener.cloud:system:seed:a")
            },
            good.clone(),
            "SeedClientInvalidOrganization",
            "system:masters",
        ),
        (
            Request { organizations: vec![], ..seed_request("gardener.cloud:system:seed:a") },
            good.clone(),
            "SeedClientInvalidOrganization",
            "[]",
        ),
        (
            Request { has_sans: true, ..seed_request("gardener.cloud:system:seed:a") },
            good.clone(),
            "SeedClientSubjectAlternativeNames",
            "subject alternative names",
        ),
        (
            seed_request("gardener.cloud:system:seed:a"),
            strings(&["digital signature"]),
            "SeedClientInvalidUsages",
            "must include \"client auth\"",
        ),
        (
            seed_request("gardener.cloud:system:seed:a"),
            strings(&["client auth", "server auth"]),
            "SeedClientInvalidUsages",
            "\"server auth\" is not allowed",
        ),
    ];
    for (request, usages, want, text) in cases {
        let (got, message) = reason(decide(&facts(request.clone(), &usages, "bootstrap", &groups)));
        assert_eq!(got, want, "{request:?} {usages:?}");
        assert!(message.contains(text), "{message}");
    }
}

#[test]
fn a_seed_renews_itself_and_anyone_else_needs_the_review() {
    let usages = strings(&["client auth"]);
    let seeds = strings(&[seed_identity::GROUP, "system:authenticated"]);
    let f = facts(seed_request("gardener.cloud:system:seed:a"), &usages, "gardener.cloud:system:seed:a", &seeds);
    assert!(matches!(decide(&f), Decision::Approve { seed, .. } if seed == "a"));
    // Another seed (or the name without the group) is not a renewal.
    let f = facts(seed_request("gardener.cloud:system:seed:a"), &usages, "gardener.cloud:system:seed:b", &seeds);
    assert_eq!(decide(&f), Decision::Authorize { seed: "a".into() });
    let plain = strings(&["system:authenticated"]);
    let f = facts(seed_request("gardener.cloud:system:seed:a"), &usages, "gardener.cloud:system:seed:a", &plain);
    assert_eq!(decide(&f), Decision::Authorize { seed: "a".into() });
    let f = facts(seed_request("gardener.cloud:system:seed:a"), &usages, "system:serviceaccount:garden:g", &plain);
    assert_eq!(decide(&f), Decision::Authorize { seed: "a".into() });
}

#[test]
fn the_review_approves_or_denies() {
    assert!(
        matches!(after_review("a", "sa", true), Decision::Approve { seed, message } if seed == "a" && message.contains("seedclient a"))
    );
    match after_review("b", "system:serviceaccount:garden:gardenlet-a", false) {
        Decision::Deny { reason, message } => {
            assert_eq!(reason, "SeedClientNotAuthorized");
            assert!(
                message.contains("gardenlet-a may not create certificatesigningrequests/seedclient b"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}
