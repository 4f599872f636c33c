//! The seed controller against a real kube-apiserver: registration, status, heartbeat Lease,
//! and no status writes while nothing changes; gardenlet acts as its chart's ServiceAccount.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::{ConditionStatus, Gardener};
use api::core::Seed;
use api::extensions::BackupBucket;
use gardenlet::config::GardenletConfig;
use gardenlet::seed::{LEASE_NAMESPACE, SeedController};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{Patch, PatchParams};
use std::time::Duration;

const CONFIG: &str = "seed:\n  name: local\n  labels:\n    seed.gardener.cloud/provider: local\n  capacityShoots: 40\n  reservedShoots: 5\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n";

#[tokio::test]
async fn registers_the_seed_and_keeps_it_alive_without_needless_writes() {
    let env =
        testenv::TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..Default::default() }).await.unwrap();
    let client = env.client().await.unwrap();
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
    let lease = leases.get("local").await.unwrap();
    let later = lease.spec.unwrap().renew_time.unwrap();
    assert!(later.0 > first.0, "the heartbeat Lease is renewed");
    // Owned by the Seed: the garden's garbage collector removes it with the Seed.
    let owners = lease.metadata.owner_references.unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!((owners[0].kind.as_str(), owners[0].name.as_str()), ("Seed", "local"));
    assert_eq!(Some(&owners[0].uid), seed.metadata.uid.as_ref(), "the registered Seed's UID");
    assert_eq!(owners[0].controller, Some(true));

    // Several heartbeats later the Seed itself has not been written again.
    let now = seeds.get("local").await.unwrap();
    assert_eq!(now.metadata.resource_version, seed.metadata.resource_version, "no write without a change");
    assert!(!controller.sync_status().await.unwrap(), "nothing to write");

    stop_tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
}

/// A seed with a backup configuration: the seed controller writes the seed's BackupBucket (named
/// after the Seed's UID) into the seed cluster, reports `BackupBucketsReady=False` until its
/// extension reports it ready, then `True`, and writes neither again while nothing changes; the
/// bucket is deleted with the Seed.
#[tokio::test]
async fn a_seed_with_backup_gets_its_bucket_and_reports_it() {
    let env =
        testenv::TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..Default::default() }).await.unwrap();
    let client = env.client().await.unwrap();
    let with_backup = format!(
        "{CONFIG}    backup:\n      provider: local\n      region: local\n      secretRef:\n        name: backup\n        namespace: garden\n"
    );
    let config: GardenletConfig = serde_yaml::from_str(&with_backup).unwrap();
    let gardenlet = support::chart::gardenlet_client(&env, &with_backup).await;
    let controller =
        SeedController::new(gardenlet.clone(), config.seed.clone(), Duration::from_millis(300), Gardener::default())
            .with_seed_cluster(gardenlet);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(controller.clone().run(async move {
        let _ = stop_rx.await;
    }));

    let seeds: Api<Seed> = Api::all(client.clone());
    let condition = |seed: &Seed| seed.status.as_ref().and_then(|s| s.condition("BackupBucketsReady")).cloned();
    let pending = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Some(seed) = seeds.get_opt("local").await.unwrap()
                && let Some(c) = condition(&seed)
            {
                return (seed, c);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("BackupBucketsReady is reported");
    let (seed, c) = pending;
    assert_eq!(c.status, ConditionStatus::False, "{c:?}");
    assert!(c.message.contains("has no status yet"), "{}", c.message);
    let uid = seed.metadata.uid.clone().unwrap();
    let buckets: Api<BackupBucket> = Api::all(client.clone());
    let bucket = buckets.get(&uid).await.expect("the bucket is named after the Seed's UID");
    assert_eq!(bucket.spec.default.type_, "local");
    assert_eq!(bucket.spec.region, "local");

    // The extension reports the bucket ready (as provider-local would).
    let status = serde_json::json!({"status": {"observedGeneration": bucket.metadata.generation,
        "lastOperation": {"type": "Create", "state": "Succeeded", "progress": 100, "description": "ok",
                          "lastUpdateTime": k8s_openapi::jiff::Timestamp::now().to_string()}}});
    buckets.patch_status(&uid, &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let seed = seeds.get("local").await.unwrap();
            if condition(&seed).is_some_and(|c| c.status == ConditionStatus::True) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("BackupBucketsReady turns True");

    // The garden's BackupBucket of the same name reports it, naming the seed.
    let garden_buckets: Api<api::core::BackupBucket> = Api::all(client.clone());
    let garden_bucket = garden_buckets.get(&uid).await.expect("the garden bucket is named after the Seed's UID");
    assert_eq!(garden_bucket.spec.seed_name(), Some("local"));
    assert_eq!(garden_bucket.spec.provider.type_, "local");
    assert_eq!(
        garden_bucket.status.and_then(|s| s.last_operation).map(|o| o.state),
        Some(api::common::LastOperationState::Succeeded),
        "the garden bucket mirrors the extension bucket's status"
    );

    let (seed_rv, bucket_rv, garden_bucket_rv) = (
        seeds.get("local").await.unwrap().metadata.resource_version,
        buckets.get(&uid).await.unwrap().metadata.resource_version,
        garden_buckets.get(&uid).await.unwrap().metadata.resource_version,
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(seeds.get("local").await.unwrap().metadata.resource_version, seed_rv, "no Seed write without a change");
    assert_eq!(
        buckets.get(&uid).await.unwrap().metadata.resource_version,
        bucket_rv,
        "no bucket write without a change"
    );
    assert_eq!(
        garden_buckets.get(&uid).await.unwrap().metadata.resource_version,
        garden_bucket_rv,
        "no garden bucket write without a change"
    );

    // The Seed is deleted (held by a finalizer, as a ManagedSeed holds it): its bucket goes, so
    // its extension is no longer required and can be uninstalled.
    let hold = serde_json::json!({"metadata": {"finalizers": ["test/hold"]}});
    seeds.patch("local", &PatchParams::default(), &Patch::Merge(&hold)).await.unwrap();
    seeds.delete("local", &Default::default()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        while buckets.get_opt(&uid).await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the bucket is deleted with the Seed");
    tokio::time::timeout(Duration::from_secs(20), async {
        while garden_buckets.get_opt(&uid).await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the garden bucket is deleted with the Seed");
    let release = serde_json::json!({"metadata": {"finalizers": null}});
    seeds.patch("local", &PatchParams::default(), &Patch::Merge(&release)).await.unwrap();

    stop_tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
}
