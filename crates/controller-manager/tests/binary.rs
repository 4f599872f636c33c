//! The controller-manager binary against a real API server: ready once every controller's
//! caches synced, its `/metrics` from the runner's registry, the leader Lease taken, a Project
//! reconciled by the process, and SIGTERM stopping it cleanly and releasing the Lease.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::Project;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use std::time::Duration;
use support::eventually;
use testenv::binary::{Binary, free_address, http_get};

const LEASE: &str = "gardener-controller-manager-leader-election";

#[tokio::test]
async fn main_becomes_ready_leads_reconciles_and_releases_the_lease_on_sigterm() {
    let (env, client) = support::garden().await;
    let addr = free_address().unwrap();
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), "controllers:\n  bastion:\n    heartbeatTimeoutSeconds: 600\n").unwrap();
    let args: Vec<String> = vec![
        format!("--config={}", config.path().display()),
        format!("--kubeconfig={}", env.kubeconfig_path().display()),
        format!("--metrics-bind-address={addr}"),
        "--leader-election-namespace=default".into(),
    ];
    let mut binary = Binary::spawn(env!("CARGO_BIN_EXE_gardener-controller-manager"), &args).unwrap();
    binary.wait_ready(addr, Duration::from_secs(60)).await.unwrap();

    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    testenv::binary::lease_holder(&client, "default", LEASE).await;

    Api::<Project>::all(client.clone())
        .create(&PostParams::default(), &Project::new("p", Default::default()))
        .await
        .unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    eventually("the process to create the project namespace", || async {
        namespaces.get_opt("garden-p").await.map_err(|e| e.to_string())?.map(drop).ok_or("not yet".to_string())
    })
    .await;
    let metrics = tokio::task::spawn_blocking(move || http_get(addr, "/metrics")).await.unwrap().unwrap();
    for controller in [
        "project",
        "seed-lifecycle",
        "bastion",
        "shoot-hibernation",
        "cloudprofile-protection",
        "secret-protection",
        "shoot-maintenance",
    ] {
        let series = format!("controller_manager_reconciliations_total{{controller=\"{controller}\"}}");
        assert!(metrics.contains(&series), "{series} missing:\n{metrics}");
    }
    assert!(!metrics.contains("controller_manager_reconciliations_total{controller=\"project\"} 0"), "{metrics}");

    let (status, stderr) = binary.stop(Duration::from_secs(30)).await.unwrap();
    assert!(status.success(), "{status}\n{stderr}");
    let lease = leases.get(LEASE).await.unwrap();
    let holder = lease.spec.and_then(|s| s.holder_identity).unwrap_or_default();
    assert!(holder.is_empty(), "released on shutdown, holder {holder:?}");
}
