//! Certificate rotation against a real kube-apiserver: with a short-lived certificate the
//! server issues a new CA and serving certificate before expiry, publishes a CA bundle with the
//! new and the previous CA in its webhook configurations, then serves the new certificate; the
//! API server keeps calling the webhook successfully throughout, without a restart.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use admission::fixtures;
use admission::server::shared;
use api::core::Shoot;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;
use rustls::pki_types::{CertificateDer, ServerName};
use std::sync::Arc;
use std::time::Duration;
use support::*;

fn bundle(config: &ValidatingWebhookConfiguration) -> String {
    let hooks = config.webhooks.as_ref().unwrap();
    String::from_utf8(hooks[0].client_config.ca_bundle.clone().unwrap().0).unwrap()
}

fn first_cert_der(pem: &str) -> Vec<u8> {
    x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap().1.contents
}

/// Whether a TLS handshake with the server succeeds when trusting only `ca_der`.
async fn handshake_trusting(addr: std::net::SocketAddr, ca_der: Vec<u8>) -> bool {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(ca_der)).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    connector.connect(ServerName::try_from("127.0.0.1").unwrap(), tcp).await.is_ok()
}

async fn refused_by_webhook(shoots: &Api<Shoot>) -> Result<String, String> {
    let mut bad = fixtures::shoot();
    bad.metadata.name = Some("bad".into());
    bad.spec.region = "mars".into();
    match shoots.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(s)) if s.message.contains("denied the request") => Ok(s.message),
        other => Err(format!("{other:?}")),
    }
}

#[tokio::test]
async fn the_certificate_rotates_without_a_restart() {
    let (env, client) = garden().await;
    let webhook = start_webhook(&env, &client, |c| {
        c.certificate_validity = Duration::from_secs(8);
        c.rotation_check_interval = Duration::from_millis(200);
    })
    .await;
    let configs = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    let shoots = Api::<Shoot>::namespaced(client.clone(), NS);
    let first = bundle(&configs.get("gardener-admission").await.unwrap());
    let first_ca = first_cert_der(&first);
    eventually("the webhook to be called", || refused_by_webhook(&shoots)).await;

    let rotated = eventually("the CA bundle to be rotated", || async {
        let now = bundle(&configs.get("gardener-admission").await.map_err(|e| e.to_string())?);
        if now != first { Ok(now) } else { Err("unchanged".to_string()) }
    })
    .await;
    assert_eq!(rotated.matches("BEGIN CERTIFICATE").count(), 2, "new and previous CA: {rotated}");
    assert!(rotated.ends_with(&first), "the previous CA stays trusted during the swap");
    let new_ca = first_cert_der(&rotated);
    assert_ne!(new_ca, first_ca);

    // The server presents a certificate of the new CA (the old CA no longer verifies it),
    // and the API server, using the published bundle, still gets answers.
    eventually("the new certificate to be served", || async {
        if handshake_trusting(webhook.addr, new_ca.clone()).await { Ok(()) } else { Err("old certificate".to_string()) }
    })
    .await;
    assert!(
        !handshake_trusting(webhook.addr, first_ca.clone()).await,
        "the first CA must not verify the served certificate"
    );
    let message = eventually("the API server to reach the rotated webhook", || refused_by_webhook(&shoots)).await;
    assert!(message.contains("spec.region: Unsupported value: \"mars\""), "{message}");
}

/// The certificate `addr` presents, when its chain verifies against every CA in `bundle`.
async fn served_cert(addr: std::net::SocketAddr, bundle: &str) -> Option<Vec<u8>> {
    let mut roots = rustls::RootCertStore::empty();
    for block in x509_parser::pem::Pem::iter_from_buffer(bundle.as_bytes()) {
        roots.add(CertificateDer::from(block.unwrap().contents)).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tls = connector.connect(ServerName::try_from("127.0.0.1").unwrap(), tcp).await.ok()?;
    Some(tls.get_ref().1.peer_certificates()?[0].to_vec())
}

fn stored_cert(secret: &Secret) -> Vec<u8> {
    first_cert_der(std::str::from_utf8(&secret.data.as_ref().unwrap()["tls.crt"].0).unwrap())
}

/// Two replicas (as behind one Service) present the same certificate, trusted by the published
/// bundle, and both follow a rotation one of them makes.
#[tokio::test]
async fn replicas_share_one_certificate_through_the_secret_and_follow_its_rotation() {
    let (env, client) = garden().await;
    let as_server = server_client(&env, &client).await;
    let short = |c: &mut admission::server::ServerConfig| {
        c.certificate_validity = Duration::from_secs(8);
        c.rotation_check_interval = Duration::from_millis(200);
    };
    let (a, b) = (start_as(&as_server, short).await, start_as(&as_server, short).await);
    let configs = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    let secrets = Api::<Secret>::namespaced(client.clone(), SERVER_NS);
    let first = secrets.get("gardener-admission-tls").await.unwrap();
    for round in ["first", "rotated"] {
        eventually(
            &format!("both replicas to serve the {round} stored certificate, trusted by the bundle"),
            || async {
                let live = secrets.get("gardener-admission-tls").await.map_err(|e| e.to_string())?;
                if round == "rotated" && stored_cert(&live) == stored_cert(&first) {
                    return Err("not rotated yet".into());
                }
                let bundle = bundle(&configs.get("gardener-admission").await.map_err(|e| e.to_string())?);
                let served = (served_cert(a.addr, &bundle).await, served_cert(b.addr, &bundle).await);
                match served {
                    (Some(x), Some(y)) if x == y && x == stored_cert(&live) => Ok(()),
                    other => Err(format!("served {:?}", (other.0.map(|c| c.len()), other.1.map(|c| c.len())))),
                }
            },
        )
        .await;
    }
}

/// Replicas starting together race to create the Secret: one writes it, the other adopts it.
/// A rotation keeps the replaced CA as the previous one; a later check keeps the new pair.
#[tokio::test]
async fn racing_replicas_adopt_one_secret_and_rotation_keeps_the_previous_ca() {
    let (env, client) = garden().await;
    let as_server = server_client(&env, &client).await;
    let config = config_for("127.0.0.1:9443".parse().unwrap());
    let validity = Duration::from_secs(3000);
    let t0 = time::OffsetDateTime::now_utc();
    let ensure = |now| shared::ensure(&as_server, &config.certificate_secret, None, &config.hosts, validity, None, now);
    let (x, y) = tokio::join!(ensure(t0), ensure(t0));
    let (x, y) = (x.unwrap(), y.unwrap());
    assert_eq!(x.current.cert_der, y.current.cert_der, "both replicas use one certificate");
    assert_eq!(x.previous_ca, None);

    let due = t0 + time::Duration::seconds(2100);
    let rotated = ensure(due).await.unwrap();
    assert_ne!(rotated.current.cert_der, x.current.cert_der);
    assert_eq!(rotated.previous_ca.as_deref(), Some(x.current.ca_pem.as_str()));
    assert_eq!(rotated.bundle(), format!("{}{}", rotated.current.ca_pem, x.current.ca_pem));
    let later = ensure(due + time::Duration::seconds(60)).await.unwrap();
    assert_eq!(later.current.cert_der, rotated.current.cert_der, "a fresh certificate is kept");

    // A damaged Secret (here: its key garbage) is replaced at the next check.
    let secrets = Api::<Secret>::namespaced(client.clone(), SERVER_NS);
    let mut damaged = secrets.get("gardener-admission-tls").await.unwrap();
    damaged.data.as_mut().unwrap().insert("tls.key".into(), k8s_openapi::ByteString(b"not a key".to_vec()));
    secrets.replace("gardener-admission-tls", &PostParams::default(), &damaged).await.unwrap();
    let replaced = ensure(due + time::Duration::seconds(120)).await.unwrap();
    assert_ne!(replaced.current.cert_der, rotated.current.cert_der);
    assert_eq!(replaced.previous_ca, None, "an unreadable Secret has no CA left to trust");
}

/// With a CA of the operator's (the local garden's webhook CA), a Secret holding a certificate
/// of the server's own CA is replaced at once by one that CA signed, and rotations keep that CA
/// as the only trust anchor: what a kube-apiserver that read the CA once from a file needs.
#[tokio::test]
async fn a_given_ca_replaces_the_servers_own_and_stays_the_anchor_across_rotations() {
    let (env, client) = garden().await;
    let as_server = server_client(&env, &client).await;
    let config = config_for("127.0.0.1:9443".parse().unwrap());
    let validity = Duration::from_secs(3000);
    let t0 = time::OffsetDateTime::now_utc();
    let own =
        shared::ensure(&as_server, &config.certificate_secret, None, &config.hosts, validity, None, t0).await.unwrap();

    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
    let ca_pem = params.self_signed(&key).unwrap().pem();
    let given = admission::server::certs::SigningCa::from_pem(&ca_pem, &key.serialize_pem()).unwrap();
    let ensure =
        |now| shared::ensure(&as_server, &config.certificate_secret, None, &config.hosts, validity, Some(&given), now);

    let signed = ensure(t0).await.unwrap();
    assert_ne!(signed.current.cert_der, own.current.cert_der, "the server's own CA is given up at once");
    assert_eq!(signed.current.ca_pem, ca_pem);
    assert_eq!(signed.bundle(), format!("{ca_pem}{}", own.current.ca_pem), "the old CA is trusted during the swap");
    let rotated = ensure(t0 + time::Duration::seconds(2100)).await.unwrap();
    assert_ne!(rotated.current.cert_der, signed.current.cert_der);
    assert_eq!(rotated.bundle(), ca_pem, "after a rotation the given CA is the only anchor");
}
