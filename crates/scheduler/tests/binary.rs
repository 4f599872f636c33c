//! The scheduler binary against a real API server: ready once its caches synced, its
//! `/metrics` from the runner's registry, the leader Lease taken, and SIGTERM stopping it
//! cleanly and releasing the Lease.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use std::time::Duration;
use testenv::binary::{Binary, free_address, http_get};

#[tokio::test]
async fn main_becomes_ready_leads_and_releases_the_lease_on_sigterm() {
    let env = testenv::TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..Default::default() })
        .await
        .expect("a test API server");
    let client = env.client().await.unwrap();
    let addr = free_address().unwrap();
    let args: Vec<String> = vec![
        format!("--kubeconfig={}", env.kubeconfig_path().display()),
        format!("--metrics-bind-address={addr}"),
        "--leader-election-namespace=default".into(),
    ];
    let mut scheduler = Binary::spawn(env!("CARGO_BIN_EXE_gardener-scheduler"), &args).unwrap();
    scheduler.wait_ready(addr, Duration::from_secs(60)).await.unwrap();
    let metrics = http_get(addr, "/metrics").unwrap();
    assert!(metrics.contains("scheduler_decisions_total"), "{metrics}");

    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    testenv::binary::lease_holder(&client, "default", "gardener-scheduler-leader-election").await;

    let (status, stderr) = scheduler.stop(Duration::from_secs(30)).await.unwrap();
    assert!(status.success(), "{status}\n{stderr}");
    let lease = leases.get("gardener-scheduler-leader-election").await.unwrap();
    let holder = lease.spec.and_then(|s| s.holder_identity).unwrap_or_default();
    assert!(holder.is_empty(), "released on shutdown, holder {holder:?}");
}
