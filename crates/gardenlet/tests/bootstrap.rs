//! gardenlet's garden identity by CSR against a real API server with kube-controller-manager's
//! signer (`csrsigning`, the environment's CA). Garden and seed are one cluster. The bootstrap
//! identity is the gardenlet chart's ServiceAccount (a TokenRequest token in a kubeconfig file),
//! with the chart's rules, so the test proves them. The controller-manager's approver is
//! tested in its own crate (`tests/csr_approver.rs`); here a stand-in approves every CSR
//! (`support::approver`) and records who asked.
//!
//! Shown: the bootstrap writes the kubeconfig Secret and the certificate authenticates as the
//! seed; the next start reuses it without a CSR; a certificate past 80% of its lifetime is
//! renewed in the background with the seed's own identity; one with less than 20% left is
//! replaced at start with the bootstrap identity; `renew-kubeconfig` on the Seed renews at once
//! and is removed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::Seed;
use api::helpers::seed_identity;
use gardenlet::bootstrap::renew::{self, Restart};
use gardenlet::bootstrap::secret::{self, Endpoint};
use gardenlet::bootstrap::{Bootstrap, csr::PrivateKeyPem, decide};
use gardenlet::config::{GardenClientConnection, SecretRef};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use std::time::Duration;

const CONFIG: &str = "seed:\n  name: local\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\ngardenClientConnection:\n  bootstrapKubeconfig: /unused/in/this/test\n  kubeconfigSecret: {namespace: garden, name: gardenlet-kubeconfig}\n";

/// A kubeconfig file with a token of the chart's ServiceAccount `garden/gardenlet`.
async fn bootstrap_kubeconfig(env: &testenv::TestEnv, admin: &Client, dir: &std::path::Path) -> std::path::PathBuf {
    let request = TokenRequest {
        spec: TokenRequestSpec { expiration_seconds: Some(3600), ..Default::default() },
        ..Default::default()
    };
    let token = Api::<ServiceAccount>::namespaced(admin.clone(), "garden")
        .create_token_request("gardenlet", &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let text =
        pki::kubeconfig::render("garden", env.server_url(), env.ca_pem(), pki::kubeconfig::Credentials::Token(&token))
            .unwrap();
    let path = dir.join("bootstrap-kubeconfig");
    std::fs::write(&path, text).unwrap();
    path
}

/// Whether the API server's authorizers (RBAC here) allow it (a SubjectAccessReview).
async fn may(admin: &Client, user: &str, groups: &[&str], verb: &str, attrs: (&str, &str, &str, &str)) -> bool {
    testenv::access::may(admin, user, groups, verb, attrs).await.unwrap()
}

/// The seed authorizer lets every seed create and watch CSRs and watch Seeds, and patch its own
/// (docs/security.md); this test's garden runs without it, so RBAC stands in for those rules
/// (the seed's user has no RBAC from the chart).
async fn seed_may_request_certificates(admin: &Client) {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let name = "stand-in-for-the-seed-authorizer";
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
                   "verbs": ["create", "get", "list", "watch"]},
                  {"apiGroups": ["core.gardener.cloud"], "resources": ["seeds"], "verbs": ["get", "list", "watch"]},
                  {"apiGroups": ["core.gardener.cloud"], "resources": ["seeds"], "resourceNames": ["local"],
                   "verbs": ["patch"]}],
    }))
    .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": seed_identity::user("local")}],
    }))
    .unwrap();
    Api::<ClusterRole>::all(admin.clone()).create(&PostParams::default(), &role).await.unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone()).create(&PostParams::default(), &binding).await.unwrap();
}

/// A certificate of seed `local` signed by the environment's CA, valid for `lifetime` seconds
/// of which `elapsed` have passed, with its key.
fn aged_certificate(env: &testenv::TestEnv, lifetime: i64, elapsed: i64) -> (String, PrivateKeyPem) {
    let ca_key = rcgen::KeyPair::from_pem(&std::fs::read_to_string(env.dir().join("ca.key")).unwrap()).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(env.ca_pem(), ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name.push(rcgen::DnType::CommonName, seed_identity::user("local"));
    params.distinguished_name.push(rcgen::DnType::OrganizationName, seed_identity::GROUP);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::seconds(elapsed);
    params.not_after = params.not_before + time::Duration::seconds(lifetime);
    (params.signed_by(&key, &issuer).unwrap().pem(), PrivateKeyPem(key.serialize_pem()))
}

#[tokio::test]
async fn bootstraps_reuses_and_renews_the_garden_certificate() {
    let env = testenv::TestEnv::start_with(testenv::Options {
        controller_manager: true,
        controllers: Some(vec!["csrsigning".into()]),
        crds: api::crds::all(),
        ..Default::default()
    })
    .await
    .unwrap();
    let admin = env.client().await.unwrap();
    support::chart::gardenlet_client(&env, CONFIG).await;
    // The chart's ServiceAccount may ask for its own seed's certificate only, and the seed's
    // user gets nothing from the chart (the seed authorizer judges it).
    let sa = ("system:serviceaccount:garden:gardenlet", ["system:serviceaccounts", "system:authenticated"]);
    let seedclient = |seed| ("certificates.k8s.io", "certificatesigningrequests", "seedclient", seed);
    assert!(may(&admin, sa.0, &sa.1, "create", seedclient("local")).await);
    assert!(!may(&admin, sa.0, &sa.1, "create", seedclient("other")).await, "another seed's certificate");
    let seed_user = seed_identity::user("local");
    let seed_groups = [seed_identity::GROUP, "system:authenticated"];
    for (verb, attrs) in [
        ("get", ("core.gardener.cloud", "shootstates", "", "any")),
        ("patch", ("core.gardener.cloud", "shoots", "", "any")),
        ("get", ("", "secrets", "", "any")),
    ] {
        assert!(
            !may(&admin, &seed_user, &seed_groups, verb, attrs).await,
            "the seed's user may not {verb} {attrs:?} by RBAC"
        );
    }
    seed_may_request_certificates(&admin).await;
    let dir = tempfile::tempdir().unwrap();
    let bootstrap = Bootstrap {
        seed_name: "local".into(),
        connection: GardenClientConnection {
            bootstrap_kubeconfig: bootstrap_kubeconfig(&env, &admin, dir.path()).await,
            kubeconfig_secret: SecretRef { namespace: "garden".into(), name: "gardenlet-kubeconfig".into() },
        },
        seed: admin.clone(),
        timeout: Duration::from_secs(60),
    };
    let (seen, approver) = support::approver::start(admin.clone());
    let sa_user = "system:serviceaccount:garden:gardenlet";

    // First start: a CSR by the bootstrap identity, the Secret, a client that is the seed.
    let identity = bootstrap.identity().await.unwrap();
    assert_eq!(seen.all(), [sa_user]);
    assert_eq!(identity.certificate.common_name, "gardener.cloud:system:seed:local");
    let stored = secret::read(&admin, &bootstrap.connection.kubeconfig_secret).await.unwrap().unwrap();
    let secret_object = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(admin.clone(), "garden")
        .get("gardenlet-kubeconfig")
        .await
        .unwrap();
    assert_eq!(secret_object.type_.as_deref(), Some("Opaque"));
    assert!(stored.contains(env.server_url()), "the server of the bootstrap kubeconfig");
    let garden = Client::try_from(identity.config.clone()).unwrap();
    match Api::<Node>::all(garden.clone()).list(&Default::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403);
            assert!(s.message.contains("User \"gardener.cloud:system:seed:local\""), "{}", s.message);
        }
        other => panic!("the seed may not list nodes: {other:?}"),
    }

    // Next start: the Secret's certificate is reused, no CSR.
    let again = bootstrap.identity().await.unwrap();
    assert_eq!(again.certificate, identity.certificate);
    assert_eq!(seen.all().len(), 1, "no new CSR at the second start");

    // A certificate 75% through a 100 s lifetime is used at start, and renewed at 80% (in
    // about 5 s) with the seed's own identity; the process is then to restart.
    let endpoint = Endpoint { server: env.server_url().into(), ca_pem: env.ca_pem().into() };
    let (cert, key) = aged_certificate(&env, 100, 75);
    secret::write(&admin, &bootstrap.connection.kubeconfig_secret, &secret::render(&endpoint, &cert, &key).unwrap())
        .await
        .unwrap();
    let aged = bootstrap.identity().await.unwrap();
    assert_eq!(seen.all().len(), 1, "a certificate with 25% left is used");
    let aged_client = Client::try_from(aged.config.clone()).unwrap();
    let restart = tokio::time::timeout(
        Duration::from_secs(60),
        renew::run(bootstrap.clone(), aged.certificate.clone(), aged_client),
    )
    .await
    .expect("the renewal at 80% within a minute");
    assert!(matches!(restart, Restart::Renewed { .. }), "{restart:?}");
    assert_eq!(seen.all()[1], "gardener.cloud:system:seed:local", "renewed with the seed's own identity");
    let renewed = bootstrap.identity().await.unwrap();
    assert_ne!(renewed.certificate, aged.certificate);
    assert!(decide::usable(&renewed.certificate, "local", k8s_openapi::jiff::Timestamp::now()).is_ok());
    assert_eq!(seen.all().len(), 2, "the renewed certificate is reused");

    // A certificate past 80% is not used at start: the bootstrap identity asks again.
    let (cert, key) = aged_certificate(&env, 100, 90);
    secret::write(&admin, &bootstrap.connection.kubeconfig_secret, &secret::render(&endpoint, &cert, &key).unwrap())
        .await
        .unwrap();
    let replaced = bootstrap.identity().await.unwrap();
    assert_eq!(seen.all()[2..], [sa_user]);
    assert!(decide::usable(&replaced.certificate, "local", k8s_openapi::jiff::Timestamp::now()).is_ok());

    // renew-kubeconfig on the Seed: a renewal at once, and the annotation goes.
    let seeds = Api::<Seed>::all(admin.clone());
    let seed: Seed = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed", "metadata": {"name": "local"},
        "spec": {"provider": {"type": "local", "region": "local"},
                 "networks": {"pods": "10.1.0.0/16", "services": "10.2.0.0/16"}}}))
    .unwrap();
    seeds.create(&PostParams::default(), &seed).await.unwrap();
    let garden = Client::try_from(replaced.config.clone()).unwrap();
    let renewal = tokio::spawn(renew::run(bootstrap.clone(), replaced.certificate.clone(), garden));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!renewal.is_finished(), "nothing is due yet");
    let annotate = json!({"metadata": {"annotations": {"gardener.cloud/operation": "renew-kubeconfig"}}});
    seeds.patch("local", &PatchParams::default(), &Patch::Merge(annotate)).await.unwrap();
    let restart = tokio::time::timeout(Duration::from_secs(60), renewal).await.expect("renewed at once").unwrap();
    assert!(matches!(restart, Restart::Renewed { .. }), "{restart:?}");
    assert_eq!(seen.all().len(), 4);
    assert!(seeds.get("local").await.unwrap().annotations().get("gardener.cloud/operation").is_none());

    approver.abort();
}
