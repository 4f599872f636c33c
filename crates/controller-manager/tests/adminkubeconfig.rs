//! The AdminKubeconfigRequest controller against a real kube-apiserver, as the chart's
//! ServiceAccount, on a manual clock: a request waits (Pending, with the reason) until its shoot
//! advertises an address and gardenlet has published its client CA (InternalSecret
//! `<shoot>.ca-client`, bundle in ConfigMap `<shoot>.ca-cluster`, written by gardenlet's own
//! code), is then issued a certificate for the recorded user's own key, signed by the shoot's
//! client CA, and is deleted when the certificate expires; requests that cannot be issued fail
//! with a message that carries no key material.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::authentication::{AdminKubeconfigRequest, AdminKubeconfigRequestPhase as Phase, AdminKubeconfigRequestSpec};
use api::common::LocalObjectReference;
use api::core::Shoot;
use base64::Engine;
use controller_manager::Clock;
use k8s_openapi::jiff::SignedDuration;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::SystemTime;
use support::*;
use x509_parser::prelude::{FromDer, X509Certificate};

const NS: &str = "garden-dev";

fn request(name: &str, shoot: &str, public_key: &str, creator: Option<&str>) -> AdminKubeconfigRequest {
    let mut r = AdminKubeconfigRequest::new(
        name,
        AdminKubeconfigRequestSpec {
            shoot_ref: LocalObjectReference { name: shoot.into() },
            public_key: public_key.into(),
            expiration_seconds: Some(1800),
        },
    );
    r.metadata.namespace = Some(NS.into());
    if let Some(user) = creator {
        r.metadata.annotations = Some([("gardener.cloud/created-by".to_string(), user.to_string())].into());
    }
    r
}

/// The shoot's secrets as gardenlet plans them.
fn shoot_secrets() -> pki::SecretSet {
    let inputs =
        pki::shoot_set::ShootInputs::new("shoot--dev--app", "api.app.dev.internal.local", "10.0.0.1".parse().unwrap());
    let configs = pki::shoot_set::shoot_set(&inputs);
    pki::manager::plan(&configs, &pki::SecretSet::new(), SystemTime::now()).unwrap().secrets
}

async fn phase(api: &Api<AdminKubeconfigRequest>, name: &str) -> Result<(Phase, String), String> {
    let r = api.get_opt(name).await.map_err(|e| e.to_string())?.ok_or("gone")?;
    let s = r.status.ok_or("no status")?;
    Ok((s.phase.ok_or("no phase")?, s.message))
}

fn pem_der(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD.decode(body).unwrap()
}

#[tokio::test]
async fn requests_wait_for_the_ca_are_issued_for_the_users_key_and_go_when_they_expire() {
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    create_shoot(&client, &shoot("app", NS)).await;
    let running = start(&env, controller_manager::Config::default()).await;
    let requests: Api<AdminKubeconfigRequest> = Api::namespaced(client.clone(), NS);
    let key = rcgen::KeyPair::generate().unwrap();

    // No address yet: Pending, saying why.
    requests
        .create(&PostParams::default(), &request("alice-1", "app", &key.public_key_pem(), Some("alice")))
        .await
        .unwrap();
    eventually("pending for the address", || async {
        match phase(&requests, "alice-1").await? {
            (Phase::Pending, m) if m.contains("address") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // The shoot advertises its address (the Shoot watch wakes the request): now the CA is missing.
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), NS);
    let status = json!({"status": {"technicalID": "shoot--dev--app", "advertisedAddresses": [
        {"name": "internal", "url": "https://api.app.dev.internal.local"},
        {"name": "external", "url": "https://api.app.dev.example.com"}]}});
    shoots.patch_status("app", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    eventually("pending for the CA", || async {
        match phase(&requests, "alice-1").await? {
            (Phase::Pending, m) if m.contains("client CA") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // gardenlet publishes the CAs (the InternalSecret watch wakes the request): issued.
    let secrets = shoot_secrets();
    let project = gardenlet::shoot::credentials::Project { garden: &client, namespace: NS, shoot: "app", owner: None };
    gardenlet::shoot::credentials::garden_ca::publish(&project, &secrets).await.unwrap();
    let issued = eventually("issued", || async {
        let r = requests.get("alice-1").await.map_err(|e| e.to_string())?;
        match r.status.clone() {
            Some(s) if s.phase == Some(Phase::Issued) => Ok(s),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let der = pem_der(&issued.certificate);
    let (_, cert) = X509Certificate::from_der(&der).unwrap();
    let subject = cert.subject();
    assert_eq!(subject.iter_common_name().next().unwrap().as_str().unwrap(), "alice");
    assert_eq!(subject.iter_organization().next().unwrap().as_str().unwrap(), "system:masters");
    assert_eq!(cert.public_key().subject_public_key.data.as_ref(), key.public_key_raw(), "the user's own key");
    let ca_der = pem_der(secrets.value("ca-client", "ca.crt").unwrap());
    let (_, ca) = X509Certificate::from_der(&ca_der).unwrap();
    cert.verify_signature(Some(ca.public_key())).expect("signed by the shoot's client CA");
    let validity = cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp();
    assert_eq!(validity, 1800 + 60, "the requested 30 min (plus the usual minute of backdating)");
    assert_eq!(issued.expiration_timestamp.as_ref().unwrap().0.as_second(), cert.validity().not_after.timestamp());
    let kubeconfig: serde_yaml::Value = serde_yaml::from_str(&issued.kubeconfig).unwrap();
    assert_eq!(kubeconfig["clusters"][0]["cluster"]["server"], "https://api.app.dev.example.com");
    assert_eq!(kubeconfig["current-context"], "shoot--dev--app");
    assert!(kubeconfig["users"][0]["user"].get("client-key-data").is_none());
    let trusted = base64::engine::general_purpose::STANDARD
        .decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"].as_str().unwrap())
        .unwrap();
    assert_eq!(String::from_utf8(trusted).unwrap().trim(), secrets.value("ca", "ca.crt").unwrap().trim());
    // The status is written before the event is published: wait for the event.
    eventually("the Issued event naming alice", || async {
        let notes = event_notes(&client, NS, "alice-1", "Issued").await;
        if notes.iter().any(|n| n.contains("\"alice\"")) { Ok(()) } else { Err(format!("{notes:?}")) }
    })
    .await;
    let everything = serde_json::to_string(&requests.get("alice-1").await.unwrap()).unwrap();
    assert!(!everything.contains("PRIVATE KEY"), "no key material in the object");

    // Requests that cannot be issued fail, with the reason and without the key.
    let secret_looking = "-----BEGIN PUBLIC KEY-----\nc2VjcmV0LXNlY3JldC1zZWNyZXQ=\n-----END PUBLIC KEY-----\n";
    requests.create(&PostParams::default(), &request("garbled", "app", secret_looking, Some("bob"))).await.unwrap();
    requests.create(&PostParams::default(), &request("nobody", "app", &key.public_key_pem(), None)).await.unwrap();
    requests
        .create(&PostParams::default(), &request("orphan", "gone", &key.public_key_pem(), Some("bob")))
        .await
        .unwrap();
    for (name, wanted) in
        [("garbled", "public key is not a DER"), ("nobody", "created-by"), ("orphan", "does not exist")]
    {
        let message = eventually(&format!("{name} failed"), || async {
            match phase(&requests, name).await? {
                (Phase::Failed, m) => Ok(m),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        assert!(message.contains(wanted), "{name}: {message}");
        assert!(!message.contains("c2VjcmV0"), "{name}: {message}");
    }
    let notes = event_notes(&client, NS, "garbled", "IssueFailed").await;
    assert!(!notes.is_empty() && notes.iter().all(|n| !n.contains("c2VjcmV0")), "{notes:?}");

    // Half an hour later the certificate has expired and the request is gone; so are the
    // requests that were never issued (their requested validity passed too).
    // The manual clock stood still since the start while the API server stamped the requests
    // with the real time, so it moves past the latest creation, not just past its own start
    // (on a loaded machine the two are minutes apart).
    let mut latest = running.clock.now();
    for r in requests.list(&Default::default()).await.unwrap() {
        latest = latest.max(r.metadata.creation_timestamp.unwrap().0);
    }
    running.clock.set(latest + SignedDuration::from_secs(1900));
    for name in ["alice-1", "garbled", "nobody", "orphan"] {
        eventually(&format!("{name} deleted"), || async {
            match requests.get_opt(name).await.map_err(|e| e.to_string())? {
                None => Ok(()),
                Some(r) => Err(format!("still there: {:?}", r.status.map(|s| s.phase))),
            }
        })
        .await;
    }
    let notes = event_notes(&client, NS, "alice-1", "Expired").await;
    assert!(!notes.is_empty(), "an Expired event");
    drop(running);
}
