//! The seed lifecycle controller against a real kube-apiserver, with the real gardenlet seed
//! controller and the real scheduler: while gardenlet renews its Lease the seed stays ready;
//! when it stops, the seed becomes `GardenletReady=Unknown` after the grace period, the
//! scheduler places no new shoot on it, and after the shoot grace period the conditions of the
//! shoots on it become `Unknown`. When gardenlet comes back, the waiting shoot is placed.
//! Time moves on the controller-manager's manual clock; nothing sleeps out a grace period.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::{ConditionStatus, Gardener};
use api::core::{CloudProfile, Seed, Shoot};
use controller_manager::seed_lifecycle::SEED_LEASE_NAMESPACE;
use controller_manager::seed_lifecycle::decide::{REASON_SEED_UNKNOWN, REASON_SHOOT_UNKNOWN};
use gardenlet::config::GardenletConfig;
use gardenlet::seed::SeedController;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::SignedDuration;
use kube::Api;
use kube::api::PostParams;
use std::time::Duration;
use support::*;

const SEED: &str = "seed:\n  name: local\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      nodes: 10.0.0.0/16\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n";

/// gardenlet's seed controller for the seed `local`, heartbeating every 300 ms until the
/// returned sender is dropped.
fn gardenlet(client: &kube::Client) -> tokio::sync::oneshot::Sender<()> {
    let config: GardenletConfig = serde_yaml::from_str(SEED).unwrap();
    let gardener = Gardener { id: "test".into(), name: "gardenlet".into(), version: "0".into() };
    let controller = SeedController::new(client.clone(), config.seed, Duration::from_millis(300), gardener);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(controller.run(async move {
        let _ = rx.await;
    }));
    tx
}

async fn gardenlet_ready(seeds: &Api<Seed>) -> Result<(ConditionStatus, String), String> {
    let seed = seeds.get_opt("local").await.map_err(|e| e.to_string())?.ok_or("no seed yet")?;
    let c = seed.status.as_ref().and_then(|s| s.condition("GardenletReady")).ok_or("no GardenletReady yet")?;
    Ok((c.status, c.reason.clone()))
}

fn scheduler(client: &kube::Client) -> (scheduler::metrics::Metrics, tokio::task::JoinHandle<()>) {
    let mut config = ::runtime::RunnerConfig::new("gardener-scheduler", "default");
    config.heartbeat_interval = None;
    config.http_addr = None;
    let mut runner = ::runtime::Runner::new(client.clone(), config).unwrap();
    let mut scheduler_config = scheduler::Config::default();
    scheduler_config.backoff.initial_seconds = 0.2;
    scheduler_config.backoff.max_seconds = 1.0;
    let (metrics, _) = scheduler::app::add_to(&mut runner, client.clone(), scheduler_config).unwrap();
    (metrics, tokio::spawn(async move { runner.run(std::future::pending()).await.unwrap() }))
}

#[tokio::test]
async fn a_silent_gardenlet_makes_its_seed_and_shoots_unknown_and_the_scheduler_skips_the_seed() {
    assert_eq!(SEED_LEASE_NAMESPACE, gardenlet::seed::LEASE_NAMESPACE, "where gardenlet writes its Lease");
    let (env, client) = garden().await;
    namespace(&client, "garden-dev").await;
    let mut profile = CloudProfile::new("local", Default::default());
    profile.spec.type_ = "local".into();
    Api::<CloudProfile>::all(client.clone()).create(&PostParams::default(), &profile).await.unwrap();
    let seeds: Api<Seed> = Api::all(client.clone());
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), "garden-dev");

    let stop_gardenlet = gardenlet(&client);
    eventually("gardenlet to report its seed ready", || async {
        match gardenlet_ready(&seeds).await? {
            (ConditionStatus::True, _) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let mut placed = shoot("placed", "garden-dev");
    placed.spec.seed_name = Some("local".into());
    create_shoot(&client, &placed).await;

    let running = start(&env, controller_manager::Config::default()).await;
    // Within the grace period (90 s by default) of a renewal, the seed stays ready.
    running.clock.advance(SignedDuration::from_secs(60));
    let reconciled = running.metrics.reconciliations("seed-lifecycle");
    eventually("the seed to be looked at after the clock moved", || async {
        let now = running.metrics.reconciliations("seed-lifecycle");
        if now > reconciled { Ok(()) } else { Err(format!("{now} reconciliations")) }
    })
    .await;
    assert_eq!(gardenlet_ready(&seeds).await.unwrap().0, ConditionStatus::True);

    // gardenlet stops; its last renewal is now more than the grace period ago.
    drop(stop_gardenlet);
    let leases: Api<Lease> = Api::namespaced(client.clone(), SEED_LEASE_NAMESPACE);
    let renewed = leases.get("local").await.unwrap().spec.unwrap().renew_time.unwrap().0;
    tokio::time::sleep(Duration::from_millis(700)).await; // a renewal in flight lands first
    running.clock.set(renewed.checked_add(SignedDuration::from_secs(120)).unwrap());
    eventually("GardenletReady to become Unknown", || async {
        match gardenlet_ready(&seeds).await? {
            (ConditionStatus::Unknown, reason) if reason == REASON_SEED_UNKNOWN => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let message =
        seeds.get("local").await.unwrap().status.unwrap().condition("GardenletReady").unwrap().message.clone();
    assert!(message.contains("gardener-system-seed-lease/local"), "{message}");
    let old = shoots.get("placed").await.unwrap();
    assert!(old.status.map(|s| s.conditions).unwrap_or_default().is_empty(), "shoots are left alone at first");

    // The scheduler skips the seed.
    let (scheduler_metrics, scheduler_task) = scheduler(&client);
    create_shoot(&client, &shoot("waiting", "garden-dev")).await;
    let refusal = eventually("the scheduler to refuse the new shoot", || async {
        let s = shoots.get("waiting").await.map_err(|e| e.to_string())?;
        let op = s.status.and_then(|s| s.last_operation).map(|o| o.description).unwrap_or_default();
        if scheduler_metrics.decisions_with(scheduler::metrics::RESULT_UNSCHEDULABLE) > 0 && !op.is_empty() {
            Ok(op)
        } else {
            Err(format!("last operation {op:?}"))
        }
    })
    .await;
    assert!(refusal.contains("not ready"), "refused because the seed is not ready: {refusal}");
    assert_eq!(shoots.get("waiting").await.unwrap().spec.seed_name, None);
    assert_eq!(scheduler_metrics.decisions_with(scheduler::metrics::RESULT_SCHEDULED), 0);

    // After the shoot grace period (300 s) the shoots' conditions become Unknown.
    running.clock.advance(SignedDuration::from_secs(301));
    let conditions = eventually("the placed shoot's conditions to become Unknown", || async {
        let s = shoots.get("placed").await.map_err(|e| e.to_string())?;
        let conditions = s.status.map(|s| s.conditions).unwrap_or_default();
        let unknown = !conditions.is_empty()
            && conditions.iter().all(|c| c.status == ConditionStatus::Unknown && c.reason == REASON_SHOOT_UNKNOWN);
        if unknown { Ok(conditions) } else { Err(format!("{conditions:?}")) }
    })
    .await;
    assert!(conditions.iter().any(|c| c.type_ == "APIServerAvailable"), "{conditions:?}");
    assert!(shoots.get("waiting").await.unwrap().status.map(|s| s.conditions).unwrap_or_default().is_empty());

    // gardenlet returns: the seed is ready again and the waiting shoot lands on it.
    let _gardenlet = gardenlet(&client);
    running.clock.set(k8s_openapi::jiff::Timestamp::now());
    eventually("the waiting shoot to be placed once gardenlet is back", || async {
        let s = shoots.get("waiting").await.map_err(|e| e.to_string())?;
        match s.spec.seed_name.as_deref() {
            Some("local") => Ok(()),
            other => Err(format!(
                "seed {other:?}, GardenletReady {:?}, last operation {:?}",
                gardenlet_ready(&seeds).await,
                s.status.and_then(|s| s.last_operation).map(|o| o.description)
            )),
        }
    })
    .await;
    assert_eq!(running.metrics.all_errors("seed-lifecycle"), 0, "{}", running.metrics.render());
    scheduler_task.abort();
}
