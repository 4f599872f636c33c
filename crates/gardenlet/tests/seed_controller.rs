//! The seed controller against a real kube-apiserver: registration, status, heartbeat Lease,
//! and no status writes while nothing changes; gardenlet acts as its chart's ServiceAccount.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::{ConditionStatus, Gardener};
use api::core::Seed;
use gardenlet::config::GardenletConfig;
use gardenlet::seed::{LEASE_NAMESPACE, SeedController};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use std::time::Duration;

const CONFIG: &str = "seed:\n  name: local\n  labels:\n    seed.gardener.cloud/provider: local\n  capacityShoots: 40\n  reservedShoots: 5\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n";

#[tokio::test]
async fn registers_the_seed_and_keeps_it_alive_without_needless_writes() {
    let env = testenv::TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    testenv::install_crds(&client, &api::crds::all()).await.unwrap();
    let config: GardenletConfig = serde_yaml::from_str(CONFIG).unwrap();
    let gardener = Gardener { id: "test".into(), name: "gardenlet-test".into(), version: "0.1.0".into() };
    let gardenlet = support::chart::gardenlet_client(&env, CONFIG).await;
    let controller = SeedController::new(gardenlet, config.seed.clone(), Duration::from_millis(300), gardener);

    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(controller.clone().run(async move {
        let _ = stop_rx.await;
    }));

    let seeds: Api<Seed> = Api::all(client.clone());
    let seed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Some(seed) = seeds.get_opt("local").await.unwrap()
                && seed.status.as_ref().is_some_and(|s| s.condition("GardenletReady").is_some())
            {
                return seed;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the Seed is registered with a status");
    assert_eq!(seed.spec.provider.type_, "local");
    assert_eq!(seed.metadata.labels.as_ref().unwrap()["seed.gardener.cloud/provider"], "local");
    let status = seed.status.clone().unwrap();
    assert_eq!(status.capacity["shoots"].0, "40");
    assert_eq!(status.allocatable["shoots"].0, "35");
    assert_eq!(status.condition("GardenletReady").unwrap().status, ConditionStatus::True);
    assert_eq!(status.observed_generation, seed.metadata.generation);

    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    let first = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(lease) = leases.get_opt("local").await.unwrap() {
                return lease.spec.unwrap().renew_time.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the heartbeat Lease exists");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let later = leases.get("local").await.unwrap().spec.unwrap().renew_time.unwrap();
    assert!(later.0 > first.0, "the heartbeat Lease is renewed");

    // Several heartbeats later the Seed itself has not been written again.
    let now = seeds.get("local").await.unwrap();
    assert_eq!(now.metadata.resource_version, seed.metadata.resource_version, "no write without a change");
    assert!(!controller.sync_status().await.unwrap(), "nothing to write");

    stop_tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
}
