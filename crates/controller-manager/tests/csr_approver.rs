//! The CSR approver on a real API server with kube-controller-manager's signer
//! (`csrsigning`, signing with the environment's CA): the controllers run as the
//! control-plane chart's ServiceAccount, so the test proves the chart's rules too. A bootstrap
//! identity (a ServiceAccount whose RBAC allows `certificatesigningrequests/seedclient` for
//! seed `a` only) gets, through gardenlet's own request code, a certificate that the API server
//! authenticates as `gardener.cloud:system:seed:a`; its CSR for seed `b` is denied with the
//! reason; CSRs with an extra organization or a SAN are denied; a CSR that is no seed identity
//! is left alone; and the seed renews itself with its certificate.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::helpers::seed_identity;
use gardenlet::bootstrap::csr::{self, State};
use gardenlet::bootstrap::secret::{self as kubeconfig, Endpoint};
use k8s_openapi::ByteString;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use std::time::Duration;
use support::*;

/// A ClusterRole and its binding to `subject`.
async fn grant(admin: &Client, name: &str, rules: serde_json::Value, subject: serde_json::Value) {
    let role: ClusterRole = serde_json::from_value(json!({"metadata": {"name": name}, "rules": rules})).unwrap();
    Api::<ClusterRole>::all(admin.clone()).create(&PostParams::default(), &role).await.unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [subject]}))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone()).create(&PostParams::default(), &binding).await.unwrap();
}

/// A PEM request for `cn` with the organizations and DNS SANs.
fn request_pem(cn: &str, orgs: &[&str], sans: &[&str]) -> String {
    let mut params = rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, cn);
    for (i, o) in orgs.iter().enumerate() {
        // rcgen keeps one value per type: a second organization as the same OID, spelled out.
        let ty = if i == 0 { rcgen::DnType::OrganizationName } else { rcgen::DnType::CustomDnType(vec![2, 5, 4, 10]) };
        params.distinguished_name.push(ty, *o);
    }
    params.serialize_request(&rcgen::KeyPair::generate().unwrap()).unwrap().pem().unwrap()
}

async fn create_csr(client: &Client, name: &str, pem: &str) {
    let csr = CertificateSigningRequest {
        metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.as_bytes().to_vec()),
            signer_name: seed_identity::SIGNER.into(),
            usages: Some(vec!["digital signature".into(), "key encipherment".into(), "client auth".into()]),
            ..Default::default()
        },
        status: None,
    };
    // A binding made just before reaches the API server's authorizer after its informer sees
    // it (moments, longer on a loaded machine): a 403 is asked again, for at most 30 s.
    let api = Api::<CertificateSigningRequest>::all(client.clone());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match api.create(&PostParams::default(), &csr).await {
            Ok(_) => return,
            Err(kube::Error::Api(s)) if s.code == 403 && std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Err(e) => panic!("creating CertificateSigningRequest {name}: {e}"),
        }
    }
}

/// Whether the API server's authorizers (RBAC here) allow it (a SubjectAccessReview).
async fn may(admin: &Client, user: &str, groups: &[&str], verb: &str, attrs: (&str, &str, &str, &str)) -> bool {
    testenv::access::may(admin, user, groups, verb, attrs).await.unwrap()
}

/// The CSR's state once it is no longer pending.
async fn decided(admin: &Client, name: &str) -> State {
    let api = Api::<CertificateSigningRequest>::all(admin.clone());
    eventually(&format!("CertificateSigningRequest {name} decided"), || async {
        let csr = api.get(name).await.map_err(|e| e.to_string())?;
        match csr::state(&csr) {
            State::Pending => Err(format!("{:?}", csr.status)),
            other => Ok(other),
        }
    })
    .await
}

#[tokio::test]
async fn seed_identities_are_approved_only_for_the_seed_the_requester_may_bootstrap() {
    let options = testenv::Options {
        controller_manager: true,
        controllers: Some(vec!["csrsigning".into()]),
        ..Default::default()
    };
    let (env, admin) = garden_with(options).await;
    let _running = start(&env, controller_manager::Config::default()).await;

    // The chart lets the controller-manager approve for the client-certificate signer only.
    let groups = ["system:serviceaccounts", "system:authenticated"];
    let approve = |signer| ("certificates.k8s.io", "signers", "", signer);
    assert!(may(&admin, SA_USER, &groups, "approve", approve("kubernetes.io/kube-apiserver-client")).await);
    for signer in ["kubernetes.io/kubelet-serving", "kubernetes.io/kube-apiserver-client-kubelet", "example.com/any"] {
        assert!(!may(&admin, SA_USER, &groups, "approve", approve(signer)).await, "approving for {signer} is refused");
    }

    // The bootstrap identity: may create CSRs, watch them, and bootstrap seed `a` only.
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "bootstrap-a"}})).unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), RELEASE_NS).create(&PostParams::default(), &sa).await.unwrap();
    grant(
        &admin,
        "seed-bootstrapper-a",
        json!([
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
             "verbs": ["create", "get", "list", "watch"]},
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/seedclient"],
             "resourceNames": ["a"], "verbs": ["create"]},
        ]),
        json!({"kind": "ServiceAccount", "name": "bootstrap-a", "namespace": RELEASE_NS}),
    )
    .await;
    let bootstrap = env.client_as_service_account(RELEASE_NS, "bootstrap-a").await.unwrap();

    // A CSR that is no seed identity, created first: it must stay undecided.
    create_csr(&bootstrap, "not-a-seed", &request_pem("someone", &["team"], &[])).await;

    // Seed `a`: approved, signed by kube-controller-manager, and the API server takes the
    // certificate as the seed's user.
    let issued = csr::request_certificate(&bootstrap, "a", Duration::from_secs(90)).await.unwrap();
    let approved = Api::<CertificateSigningRequest>::all(admin.clone()).get(&issued.csr_name).await.unwrap();
    let condition = approved.status.unwrap().conditions.unwrap().into_iter().find(|c| c.type_ == "Approved").unwrap();
    assert_eq!(condition.reason.as_deref(), Some("AutoApproved"));
    assert!(condition.message.unwrap().contains("bootstrap-a may create certificatesigningrequests/seedclient a"));
    let endpoint = Endpoint { server: env.server_url().into(), ca_pem: env.ca_pem().into() };
    let text = kubeconfig::render(&endpoint, &issued.certificate_pem, &issued.key).unwrap();
    let seed_a = testenv::client_from(&kube::config::Kubeconfig::from_yaml(&text).unwrap()).await.unwrap();
    let refused = Api::<Namespace>::all(seed_a.clone()).list(&ListParams::default()).await;
    match refused {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403);
            assert!(s.message.contains("User \"gardener.cloud:system:seed:a\""), "{}", s.message);
        }
        other => panic!("the seed identity has no RBAC here, so listing namespaces must be refused: {other:?}"),
    }

    // Seed `b` is not the bootstrap identity's to ask for.
    match csr::request_certificate(&bootstrap, "b", Duration::from_secs(90)).await {
        Err(gardenlet::bootstrap::Error::Denied { reason, message, .. }) => {
            assert_eq!(reason, "SeedClientNotAuthorized");
            assert!(message.contains("may not create certificatesigningrequests/seedclient b"), "{message}");
        }
        other => panic!("the CSR for seed b must be denied: {other:?}"),
    }

    // An extra organization, or a SAN, is denied even for the allowed seed.
    let user_a = seed_identity::user("a");
    create_csr(
        &bootstrap,
        "extra-org",
        &request_pem(&user_a, &[seed_identity::GROUP, "gardener.cloud:system:admins"], &[]),
    )
    .await;
    create_csr(&bootstrap, "with-san", &request_pem(&user_a, &[seed_identity::GROUP], &["evil.example"])).await;
    assert!(
        matches!(decided(&admin, "extra-org").await, State::Denied { ref reason, ref message }
            if reason == "SeedClientInvalidOrganization" && message.contains("gardener.cloud:system:admins")),
        "extra organization"
    );
    assert!(
        matches!(decided(&admin, "with-san").await, State::Denied { ref reason, .. } if reason == "SeedClientSubjectAlternativeNames"),
        "SAN"
    );

    // The seed renews itself with its certificate (what the seed authorizer will allow it;
    // RBAC stands in here), but cannot ask for another seed.
    grant(
        &admin,
        "seeds-create-csrs",
        json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
                "verbs": ["create", "get", "list", "watch"]}]),
        json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": seed_identity::GROUP}),
    )
    .await;
    // RBAC takes a moment to see a new binding.
    eventually("the seeds' CSR rights to take effect", || async {
        let review: SubjectAccessReview = serde_json::from_value(json!({"spec": {
            "user": user_a, "groups": [seed_identity::GROUP],
            "resourceAttributes": {"group": "certificates.k8s.io", "resource": "certificatesigningrequests", "verb": "create"}}}))
        .unwrap();
        let answer = Api::<SubjectAccessReview>::all(admin.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| e.to_string())?;
        if answer.status.is_some_and(|s| s.allowed) { Ok(()) } else { Err("not yet".to_string()) }
    })
    .await;
    let renewed = csr::request_certificate(&seed_a, "a", Duration::from_secs(90)).await.unwrap();
    let renewal = Api::<CertificateSigningRequest>::all(admin.clone()).get(&renewed.csr_name).await.unwrap();
    assert_eq!(renewal.spec.username.as_deref(), Some(user_a.as_str()));
    let message = renewal.status.unwrap().conditions.unwrap()[0].message.clone().unwrap();
    assert!(message.contains("seed a renews its own client certificate"), "{message}");
    assert!(matches!(
        csr::request_certificate(&seed_a, "b", Duration::from_secs(90)).await,
        Err(gardenlet::bootstrap::Error::Denied { ref reason, .. }) if reason == "SeedClientNotAuthorized"
    ));

    // All the while, the CSR that is no seed identity was left alone.
    let untouched = Api::<CertificateSigningRequest>::all(admin.clone()).get("not-a-seed").await.unwrap();
    assert_eq!(csr::state(&untouched), State::Pending, "{:?}", untouched.status);
    assert!(untouched.status.and_then(|s| s.conditions).unwrap_or_default().is_empty());
}
