use super::*;
use crate::seedauth::StaticGraph;
use crate::seedauth::fixtures::{managed_seed, shoot};
use serde_json::json;
use std::sync::Arc;

fn garden() -> StaticGraph {
    StaticGraph {
        shoots: vec![
            Arc::new(shoot("garden-p", "sa", Some("a"), Some("a"))),
            Arc::new(shoot("garden-p", "mig", Some("b"), Some("a"))),
            Arc::new(shoot("garden", "host", Some("a"), None)),
        ],
        managed_seeds: vec![Arc::new(managed_seed("ms1", "host"))],
        ..Default::default()
    }
}

fn object(ns: &str, name: &str) -> Value {
    json!({"metadata": {"namespace": ns, "name": name}})
}

fn csr_request(common_name: &str) -> String {
    use base64::Engine;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, common_name);
    params.distinguished_name.push(rcgen::DnType::OrganizationName, seed_identity::GROUP);
    let key = rcgen::KeyPair::generate().unwrap();
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    base64::engine::general_purpose::STANDARD.encode(pem)
}

#[test]
fn a_seed_creates_what_belongs_to_it_and_nothing_of_another_seed() {
    let g = garden();
    // (resource, object, allowed for a, allowed for b)
    let cases = [
        ("shootstates", object("garden-p", "sa"), true, false),
        ("shootstates", object("garden-p", "mig"), true, true),
        ("shootstates", object("garden-p", "missing"), false, false),
        ("internalsecrets", object("garden-p", "sa.ca-client"), true, false),
        ("internalsecrets", object("garden-p", "sa"), false, false),
        ("configmaps", object("garden-p", "sa.ca-cluster"), true, false),
        ("configmaps", object("garden-p", "anything"), false, false),
        ("secrets", object("garden-p", "sa.ssh-keypair"), true, false),
        ("secrets", object("garden-p", "sa.ssh-keypair.old"), true, false),
        ("secrets", object("garden-p", "sa.kubeconfig"), false, false),
        ("leases", object("gardener-system-seed-lease", "a"), true, false),
        ("leases", object("garden", "gardenlet-b-leader-election"), false, true),
        ("leases", object("kube-system", "kube-controller-manager"), false, false),
        ("seeds", object("", "a"), true, false),
        ("namespaces", object("", "gardener-system-seed-lease"), true, true),
        ("namespaces", object("", "garden-evil"), false, false),
        (
            "bastions",
            json!({"metadata": {"namespace": "garden-p", "name": "x"}, "spec": {"shootRef": {"name": "sa"}}}),
            true,
            false,
        ),
        ("backupbuckets", json!({"metadata": {"name": "x"}, "spec": {"seedName": "b"}}), false, true),
        (
            "backupentries",
            json!({"metadata": {"namespace": "garden-p", "name": "x"}, "spec": {"seed": "a"}}),
            true,
            false,
        ),
        ("serviceaccounts", object("garden", "gardenlet-ms1"), true, false),
        ("serviceaccounts", object("garden", "gardenlet-other"), false, false),
        ("clusterroles", object("", "gardener.cloud:system:gardenlet:ms1"), true, false),
        ("clusterrolebindings", object("", "gardener.cloud:system:gardenlet:ms1:bootstrap"), true, false),
        ("clusterroles", object("", "gardener.cloud:system:gardenlet:ms1:admin"), false, false),
        ("rolebindings", object("garden", "gardener.cloud:system:gardenlet:ms1:leader-election"), true, false),
        ("clusterrolebindings", object("", "cluster-admin-for-me"), false, false),
        (
            "certificatesigningrequests",
            json!({"spec": {"request": csr_request(&seed_identity::user("a"))}}),
            true,
            false,
        ),
        ("certificatesigningrequests", json!({"spec": {"request": "bm90IGEgcmVxdWVzdA=="}}), false, false),
    ];
    let mut wrong = Vec::new();
    for (resource, obj, a, b) in &cases {
        let (got_a, got_b) = (admit(&g, "a", resource, obj).is_empty(), admit(&g, "b", resource, obj).is_empty());
        if (got_a, got_b) != (*a, *b) {
            wrong.push(format!("{resource} {obj}: expected a={a} b={b}, got a={got_a} b={got_b}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn refusals_name_the_field_the_object_and_the_seed() {
    let g = garden();
    let errs = admit(&g, "b", "shootstates", &object("garden-p", "sa"));
    assert_eq!(
        errs.to_string(),
        "metadata.name: Forbidden: the ShootState of shoot garden-p/sa, which is not on seed b"
    );
    assert_eq!(summary("b", "shootstates", &object("garden-p", "sa")), "seed b may not create shootstates garden-p/sa");
    let errs = admit(&g, "a", "certificatesigningrequests", &json!({"spec": {"request": csr_request("admin")}}));
    assert!(
        errs.to_string()
            .starts_with("spec.request: Forbidden: the requested common name must be \"gardener.cloud:system:seed:a\""),
        "{errs}"
    );
}
