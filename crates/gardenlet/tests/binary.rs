//! The gardenlet binary against a real garden: it registers its Seed, serves `/readyz` and
//! `/metrics`, holds its seed's leader Lease, and on SIGTERM stops cleanly and releases it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use api::core::Seed;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use std::time::Duration;
use testenv::binary::{Binary, free_address, http_get};

#[tokio::test]
async fn main_registers_the_seed_leads_and_releases_the_lease_on_sigterm() {
    let env = testenv::TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..Default::default() })
        .await
        .expect("a test API server");
    let client = env.client().await.unwrap();
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "garden"}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gardenlet.yaml");
    std::fs::write(
        &config,
        format!(
            "gardenKubeconfig: {}\nseed:\n  name: local\n  spec:\n    provider: {{type: local, region: local}}\n    networks: {{pods: 10.1.0.0/16, services: 10.2.0.0/16}}\n",
            env.kubeconfig_path().display()
        ),
    )
    .unwrap();
    let addr = free_address().unwrap();
    let args = vec![format!("--config={}", config.display()), format!("--metrics-bind-address={addr}")];
    let mut gardenlet = Binary::spawn(env!("CARGO_BIN_EXE_gardenlet"), &args).unwrap();
    let started = std::time::Instant::now();
    gardenlet.wait_ready(addr, Duration::from_secs(60)).await.unwrap();
    println!("ready after {:?}", started.elapsed());
    let metrics = http_get(addr, "/metrics").unwrap();
    assert!(metrics.contains(" 200 "), "{metrics}");
    // The controller's series exist before the first reconcile.
    assert!(metrics.contains("gardenlet_reconciliations_total{kind=\"Shoot\"} 0"), "{metrics}");

    let seeds: Api<Seed> = Api::all(client.clone());
    let mut registered = false;
    for _ in 0..100 {
        if seeds.get_opt("local").await.unwrap().is_some() {
            registered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(registered, "the Seed is registered");
    let leases: Api<Lease> = Api::namespaced(client.clone(), "garden");
    testenv::binary::lease_holder(&client, "garden", "gardenlet-local-leader-election").await;

    let stopping = std::time::Instant::now();
    let (status, stderr) = gardenlet.stop(Duration::from_secs(30)).await.unwrap();
    println!("stopped after {:?}", stopping.elapsed());
    assert!(status.success(), "{status}\n{stderr}");
    let lease = leases.get("gardenlet-local-leader-election").await.unwrap();
    let holder = lease.spec.and_then(|s| s.holder_identity).unwrap_or_default();
    assert!(holder.is_empty(), "released on shutdown, holder {holder:?}");
}
