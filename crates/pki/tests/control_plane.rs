//! The shoot PKI proven on a real control plane: etcd and kube-apiserver (testenv binaries)
//! run on nothing but the generated certificates, keys and bundles, and the API server's
//! answers show that each credential is accepted or refused as it should be. One control plane
//! per test; TLS verification is always on.

// Helpers of an integration-test crate panic on failure by design, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use base64::Engine;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret as K8sSecret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, ListParams, PostParams};
use pki::admin_kubeconfig::{self, AdminKubeconfigRequest, AdminKubeconfigSettings};
use pki::bootstrap::{self, BootstrapToken, TokenOptions};
use pki::kubeconfig::{self, Credentials};
use pki::shoot_set::{names, shoot_set};
use pki::{SecretSet, data_keys, manager, rotation};
use std::time::{Duration, Instant, SystemTime};
use support::{
    ControlPlane, assert_tls_rejected, assert_unauthorized, bounded, client, client_with_headers, forbidden_user,
    inputs, probe,
};

fn fresh_set(server: &str) -> SecretSet {
    manager::plan(&shoot_set(&inputs(server)), &SecretSet::new(), SystemTime::now()).unwrap().secrets
}

fn kubeconfig_of(set: &SecretSet, name: &str) -> String {
    set.value(name, data_keys::KUBECONFIG).unwrap().to_string()
}

/// A kubeconfig for `server` trusting `trust_bundle` and presenting the certificate in `cert_secret`.
fn kubeconfig_with(server: &str, trust_bundle: &str, set: &SecretSet, cert_secret: &str) -> String {
    kubeconfig::render(
        "test",
        server,
        trust_bundle,
        Credentials::ClientCertificate {
            cert_pem: set.value(cert_secret, data_keys::TLS_CERT).unwrap(),
            key_pem: set.value(cert_secret, data_keys::TLS_KEY).unwrap(),
        },
    )
    .unwrap()
}

/// `set` plus a client certificate `cn` (secret of the same name) signed by its existing CA `ca`.
fn with_extra_client_cert(set: &SecretSet, ca: &str, ca_cn: &str, cn: &str) -> SecretSet {
    let configs =
        [pki::CaConfig::new(ca, ca_cn).into(), pki::CertificateConfig::new(cn, ca, cn, pki::Usage::Client).into()];
    let plan = manager::plan(&configs, set, SystemTime::now()).unwrap();
    assert_eq!(plan.actions[ca], pki::Action::Keep, "the CA must be reused");
    let mut out = set.clone();
    out.insert(plan.secrets.get(cn).unwrap().clone());
    out
}

fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn generated_pki_authenticates_exactly_whom_it_should() {
    let (plane, set) = ControlPlane::start(fresh_set).await;
    let server = plane.server().to_string();
    let ca_bundle = set.value("ca-bundle", data_keys::BUNDLE).unwrap();

    // The admin kubeconfig works as generated, verifying the serving certificate via the
    // 127.0.0.1 SAN, and is system:masters.
    let admin = client(&kubeconfig_of(&set, names::KUBECONFIG_ADMIN)).await;
    bounded("admin probe", probe(&admin)).await.unwrap();
    let namespaces =
        bounded("listing namespaces", Api::<Namespace>::all(admin.clone()).list(&ListParams::default())).await.unwrap();
    assert!(namespaces.items.iter().any(|n| n.metadata.name.as_deref() == Some("kube-system")));

    // TLS verification is really on: the same credentials against a name outside the SANs fail.
    let not_in_sans = server.replace("127.0.0.1", "localhost");
    let wrong_name = client(&kubeconfig_with(&not_in_sans, ca_bundle, &set, names::KUBECONFIG_ADMIN)).await;
    assert_tls_rejected(&bounded("wrong name", probe(&wrong_name)).await, "NotValidForName", "localhost is not a SAN");

    // A client certificate from a foreign CA (another shoot's) is not authenticated.
    let foreign = fresh_set(&server);
    let foreign_client = client(&kubeconfig_with(&server, ca_bundle, &foreign, names::KUBECONFIG_ADMIN)).await;
    assert_unauthorized(&bounded("foreign probe", probe(&foreign_client)).await, "certificate from a foreign CA");

    // A certificate for a non-admin user from the client CA is authenticated, not authorized.
    let jane = with_extra_client_cert(&set, names::CA_CLIENT, "kubernetes-client", "jane");
    let jane_client = client(&kubeconfig_with(&server, ca_bundle, &jane, "jane")).await;
    assert_eq!(forbidden_user(&bounded("jane probe", probe(&jane_client)).await), "jane");

    // The component kubeconfigs authenticate as their components.
    for (secret, user) in [
        (names::KUBECONFIG_KUBE_CONTROLLER_MANAGER, "system:kube-controller-manager"),
        (names::KUBECONFIG_KUBE_SCHEDULER, "system:kube-scheduler"),
    ] {
        let c = client(&kubeconfig_of(&set, secret)).await;
        assert_eq!(forbidden_user(&bounded(secret, probe(&c)).await), user, "{secret}");
    }

    // The front-proxy client certificate may assert users through the request headers ...
    let front_proxy = kubeconfig_with(&server, ca_bundle, &set, names::FRONT_PROXY_CLIENT);
    let proxied = client_with_headers(&front_proxy, &[("x-remote-user", "alice"), ("x-remote-group", "devs")]).await;
    assert_eq!(forbidden_user(&bounded("front proxy", probe(&proxied)).await), "alice");
    // ... and a client certificate for any other name from the front-proxy CA may not.
    let impostor = with_extra_client_cert(&set, names::CA_FRONT_PROXY, "front-proxy", "impostor");
    let impostor = kubeconfig_with(&server, ca_bundle, &impostor, "impostor");
    let impostor = client_with_headers(&impostor, &[("x-remote-user", "alice")]).await;
    assert_unauthorized(&bounded("impostor", probe(&impostor)).await, "front-proxy CA, wrong name");

    // Service-account tokens are signed and verified with the generated key pair.
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    let account: ServiceAccount = object(serde_json::json!({"metadata": {"name": "probe"}}));
    bounded("creating a ServiceAccount", accounts.create(&PostParams::default(), &account)).await.unwrap();
    let request: TokenRequest = object(serde_json::json!({"spec": {"audiences": [], "expirationSeconds": 600}}));
    let issued = bounded("TokenRequest", accounts.create_token_request("probe", &PostParams::default(), &request))
        .await
        .unwrap();
    let token = issued.status.unwrap().token;
    let sa_client = client(&kubeconfig::render("test", &server, ca_bundle, Credentials::Token(&token)).unwrap()).await;
    assert_eq!(forbidden_user(&bounded("SA probe", probe(&sa_client)).await), "system:serviceaccount:default:probe");
}

#[tokio::test]
async fn bootstrap_token_authenticates_as_bootstrapper() {
    let (plane, set) = ControlPlane::start(fresh_set).await;
    let server = plane.server().to_string();
    let ca_bundle = set.value("ca-bundle", data_keys::BUNDLE).unwrap();
    let admin = client(&kubeconfig_of(&set, names::KUBECONFIG_ADMIN)).await;

    let token = BootstrapToken::generate().unwrap();
    let secret = bootstrap::secret(&token, &TokenOptions::default(), SystemTime::now()).unwrap();
    let k8s_secret: K8sSecret = object(serde_json::json!({
        "metadata": {"name": secret.name, "namespace": bootstrap::NAMESPACE},
        "type": secret.type_,
        "stringData": secret.data,
    }));
    bounded(
        "creating the token Secret",
        Api::<K8sSecret>::namespaced(admin.clone(), bootstrap::NAMESPACE).create(&PostParams::default(), &k8s_secret),
    )
    .await
    .unwrap();

    // Discovery as `kubeadm join` does it: the cluster-info kubeconfig's CA matches the pin,
    // and a client trusting it (plus the token) reaches the API server with TLS verified.
    let cluster_info = bootstrap::cluster_info_kubeconfig(&server, ca_bundle).unwrap();
    let parsed: serde_yaml::Value = serde_yaml::from_str(&cluster_info).unwrap();
    let ca_data = parsed["clusters"][0]["cluster"]["certificate-authority-data"].as_str().unwrap();
    let discovered_ca = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(ca_data).unwrap()).unwrap();
    let pins = bootstrap::ca_cert_hashes(&discovered_ca).unwrap();
    assert_eq!(pins, bootstrap::ca_cert_hashes(set.value(names::CA, data_keys::CA_CERT).unwrap()).unwrap());
    let bootstrap_kubeconfig =
        kubeconfig::render("bootstrap", &server, &discovered_ca, Credentials::Token(&token.expose())).unwrap();
    let bootstrapper = client(&bootstrap_kubeconfig).await;

    // Authenticated as system:bootstrap:<id> ...
    assert_eq!(forbidden_user(&bounded("token probe", probe(&bootstrapper)).await), token.user_name());

    // ... in system:bootstrappers and the extra group: each grant below works only through it.
    let configmaps = Api::<ConfigMap>::namespaced(bootstrapper.clone(), "kube-system");
    let namespaces = Api::<Namespace>::all(bootstrapper.clone());
    assert_eq!(
        support::status(&bounded("before grants", configmaps.list(&ListParams::default())).await.map(|_| ())),
        Some(403)
    );
    for (name, resource, verb, group) in [
        ("pki-test-bootstrappers", "namespaces", "get", bootstrap::GROUP),
        ("pki-test-node-token", "configmaps", "list", bootstrap::DEFAULT_NODE_TOKEN_GROUP),
    ] {
        let role: ClusterRole = object(serde_json::json!({
            "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": [resource], "verbs": [verb]}],
        }));
        let binding: ClusterRoleBinding = object(serde_json::json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
        }));
        bounded("role", Api::<ClusterRole>::all(admin.clone()).create(&PostParams::default(), &role)).await.unwrap();
        bounded("binding", Api::<ClusterRoleBinding>::all(admin.clone()).create(&PostParams::default(), &binding))
            .await
            .unwrap();
    }
    // RBAC picks up new bindings asynchronously; allow it a moment.
    let started = Instant::now();
    loop {
        let got = bounded("get namespace", namespaces.get("kube-system")).await;
        let listed = bounded("list configmaps", configmaps.list(&ListParams::default())).await;
        if got.is_ok() && listed.is_ok() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "grants never applied: {got:?} {listed:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A token whose Secret does not exist is refused.
    let unknown = BootstrapToken::generate().unwrap();
    let unknown_client =
        client(&kubeconfig::render("bootstrap", &server, ca_bundle, Credentials::Token(&unknown.expose())).unwrap())
            .await;
    assert_unauthorized(&bounded("unknown token", probe(&unknown_client)).await, "token without Secret");
}

#[tokio::test]
async fn ca_rotation_phase_one_trusts_both_phase_two_only_new() {
    let (mut plane, before) = ControlPlane::start(fresh_set).await;
    let server = plane.server().to_string();
    let configs = shoot_set(&inputs(&server));
    let old_admin = kubeconfig_of(&before, names::KUBECONFIG_ADMIN);
    let old_scheduler = kubeconfig_of(&before, names::KUBECONFIG_KUBE_SCHEDULER);
    bounded("before rotation", probe(&client(&old_admin).await)).await.unwrap();

    // Phase one: new CAs, bundles old+new, clients re-issued; etcd and kube-apiserver restarted
    // with the new bundles and the new etcd client certificate.
    let one = rotation::start(&configs, &before, SystemTime::now()).unwrap();
    assert!(matches!(one.actions[names::ETCD_CLIENT], pki::Action::Reissue { .. }));
    assert_eq!(one.actions[names::ETCD_SERVER], pki::Action::Keep);
    plane.restart(&one.secrets).await;
    let mid_admin = kubeconfig_of(&one.secrets, names::KUBECONFIG_ADMIN);
    bounded("old admin in phase one", probe(&client(&old_admin).await)).await.unwrap();
    bounded("new admin in phase one", probe(&client(&mid_admin).await)).await.unwrap();
    let old_scheduler_result = bounded("old scheduler in phase one", probe(&client(&old_scheduler).await)).await;
    assert_eq!(forbidden_user(&old_scheduler_result), "system:kube-scheduler");

    // Phase two: serving certificates from the new CAs, old CAs gone from every bundle.
    let two = rotation::complete(&configs, &one.secrets, SystemTime::now()).unwrap();
    assert!(two.obsolete.iter().any(|n| n == "ca-old"));
    plane.restart(&two.secrets).await;
    let new_admin = kubeconfig_of(&two.secrets, names::KUBECONFIG_ADMIN);
    bounded("new admin in phase two", probe(&client(&new_admin).await)).await.unwrap();
    // The phase-one kubeconfig (new client certificate, old+new bundle) keeps working.
    bounded("phase-one admin in phase two", probe(&client(&mid_admin).await)).await.unwrap();
    // The old kubeconfig does not trust the new serving certificate (old and new CA share
    // their name, so the client finds the old CA and the signature check fails) ...
    assert_tls_rejected(&bounded("old admin", probe(&client(&old_admin).await)).await, "BadSignature", "old CA bundle");
    // ... and its client certificate is no longer accepted even when the server is trusted.
    let new_bundle = two.secrets.value("ca-bundle", data_keys::BUNDLE).unwrap();
    let old_cert_new_trust = kubeconfig_with(&server, new_bundle, &before, names::KUBECONFIG_ADMIN);
    assert_unauthorized(&bounded("old cert", probe(&client(&old_cert_new_trust).await)).await, "old client CA");
}

#[tokio::test]
async fn short_lived_admin_kubeconfig_is_refused_after_it_expires() {
    let (plane, set) = ControlPlane::start(fresh_set).await;
    let mut settings = AdminKubeconfigSettings::new("test", plane.server());
    settings.max_expiration = Duration::from_secs(6);
    // Jane keeps her private key; she submits only the public one. Asking for an hour gets the
    // configured maximum of six seconds.
    let key = rcgen::KeyPair::generate().unwrap();
    let request = AdminKubeconfigRequest {
        user: "jane@example.com".into(),
        expiration: Duration::from_secs(3600),
        public_key_pem: key.public_key_pem(),
    };
    let issued = admin_kubeconfig::issue(&set, &settings, &request, SystemTime::now()).unwrap();
    let remaining = issued.expiration.duration_since(SystemTime::now()).unwrap_or_default();
    assert!(remaining <= Duration::from_secs(6), "{remaining:?}");

    // Without her key the kubeconfig authenticates nobody; with it, she is an admin.
    let mut kubeconfig: serde_yaml::Value = serde_yaml::from_str(&issued.kubeconfig).unwrap();
    assert!(kubeconfig["users"][0]["user"].get("client-key-data").is_none());
    kubeconfig["users"][0]["user"]["client-key-data"] =
        base64::engine::general_purpose::STANDARD.encode(key.serialize_pem()).into();
    let jane = client(&serde_yaml::to_string(&kubeconfig).unwrap()).await;
    bounded("before expiry", probe(&jane)).await.unwrap();

    // Go checks "now > NotAfter" with second precision; wait a little past it.
    let wait = issued.expiration.duration_since(SystemTime::now()).unwrap_or_default() + Duration::from_millis(1500);
    tokio::time::sleep(wait).await;
    assert_unauthorized(&bounded("after expiry", probe(&jane)).await, "expired admin certificate");
}
