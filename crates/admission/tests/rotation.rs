//! Certificate rotation against a real kube-apiserver: with a short-lived certificate the
//! server issues a new CA and serving certificate before expiry, publishes a CA bundle with the
//! new and the previous CA in its webhook configurations, then serves the new certificate; the
//! API server keeps calling the webhook successfully throughout, without a restart.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use admission::fixtures;
use api::core::Shoot;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
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
