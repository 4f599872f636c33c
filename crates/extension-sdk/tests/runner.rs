//! The process runner against a real kube-apiserver: HTTP endpoints, leader election between
//! two instances, losing the lease, the heartbeat Lease and graceful shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::api::common::{LastOperationState as S, LastOperationType as T};
use extension_sdk::api::extensions::Infrastructure;
use extension_sdk::k8s_openapi::api::coordination::v1::Lease;
use extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use extension_sdk::k8s_openapi::jiff::Timestamp;
use extension_sdk::kinds::ExtensionResource;
use extension_sdk::kube::api::{Patch, PatchParams, PostParams};
use extension_sdk::kube::{Api, Client};
use extension_sdk::runner::heartbeat::HEARTBEAT_LEASE;
use extension_sdk::{ExtensionController, LeaderElectionConfig, Runner, RunnerConfig, RunnerError};
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const LEASE_NS: &str = "default";

/// `GET path` over plain HTTP/1.0; returns (status code, body).
async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let code = response.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}

struct Instance {
    addr: SocketAddr,
    actuator: Scripted,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: tokio::task::JoinHandle<Result<(), RunnerError>>,
}

impl Instance {
    async fn shutdown(mut self) -> Result<(), RunnerError> {
        drop(self.stop.take());
        tokio::time::timeout(Duration::from_secs(30), self.handle).await.expect("runner did not stop").unwrap()
    }
}

fn election(identity: &str) -> LeaderElectionConfig {
    let mut le = LeaderElectionConfig::new("test-leader", LEASE_NS, identity);
    le.lease_duration = Duration::from_secs(4);
    le.renew_deadline = Duration::from_secs(3);
    le.retry_period = Duration::from_millis(300);
    le
}

async fn instance(client: &Client, identity: &str, leader: bool, heartbeat: Option<Duration>) -> Instance {
    let mut config = RunnerConfig::new("provider-test", LEASE_NS);
    config.http_addr = None;
    config.heartbeat_interval = heartbeat;
    config.shutdown_grace = Duration::from_secs(10);
    if leader {
        config = config.leader_election(election(identity));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut runner = Runner::new(client.clone(), config).unwrap().with_listener(listener);
    let actuator = Scripted::new(client.clone(), Script::Succeed);
    runner.add_controller(ExtensionController::<Infrastructure, _>::new(
        client.clone(),
        actuator.clone(),
        support::config(),
        runner.metrics(),
    ));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(runner.run(async move {
        let _ = rx.await;
    }));
    Instance { addr, actuator, stop: Some(tx), handle }
}

async fn holder(client: &Client) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NS);
    leases.get_opt("test-leader").await.ok().flatten().and_then(|l| l.spec).and_then(|s| s.holder_identity)
}

#[tokio::test]
async fn http_endpoints_report_health_readiness_and_metrics() {
    bounded(async {
        let tc = cluster().await;
        let a = instance(&tc.client, "a", false, None).await;
        let (code, body) = eventually("/healthz", || async {
            let r = tokio::time::timeout(Duration::from_secs(2), get(a.addr, "/healthz")).await.ok()?;
            (r.0 == 200).then_some(r)
        })
        .await;
        assert_eq!((code, body.as_str()), (200, "ok"));
        eventually("/readyz to turn ready", || async { (get(a.addr, "/readyz").await.0 == 200).then_some(()) }).await;

        let api = Infrastructure::api(tc.client.clone(), Some(NS));
        api.create(&PostParams::default(), &infra("a")).await.unwrap();
        wait_state(&api, "a", T::Create, S::Succeeded).await;
        let (code, metrics) = get(a.addr, "/metrics").await;
        assert_eq!(code, 200);
        assert!(metrics.contains("extension_reconciliations_total{kind=\"Infrastructure\"}"), "{metrics}");
        assert!(metrics.contains("extension_reconcile_duration_seconds_bucket"), "{metrics}");
        a.shutdown().await.unwrap();
    })
    .await
}

#[tokio::test]
async fn only_the_lease_holder_reconciles_and_the_other_takes_over_after_shutdown() {
    bounded(async {
        let tc = cluster().await;
        let a = instance(&tc.client, "a", true, None).await;
        let b = instance(&tc.client, "b", true, None).await;
        let leader = eventually("a leader", || holder(&tc.client)).await;
        let api = Infrastructure::api(tc.client.clone(), Some(NS));
        api.create(&PostParams::default(), &infra("one")).await.unwrap();
        wait_state(&api, "one", T::Create, S::Succeeded).await;

        let (winner, loser) = if leader == "a" { (a, b) } else { (b, a) };
        assert_eq!(Counts::get(&winner.actuator.counts.reconcile), 1, "the leader reconciles");
        assert_eq!(loser.actuator.counts.total(), 0, "the other instance does not");
        // The standby is ready (to take over), and says why it does nothing.
        assert_eq!(
            get(loser.addr, "/readyz").await,
            (200, "standby: another instance holds the leader Lease".to_string())
        );
        eventually("the leader to be ready", || async { (get(winner.addr, "/readyz").await.0 == 200).then_some(()) })
            .await;

        // A graceful shutdown releases the lease; the other instance takes over.
        winner.shutdown().await.unwrap();
        let next = eventually("a new leader", || async { holder(&tc.client).await.filter(|h| *h != leader) }).await;
        assert_ne!(next, leader);
        api.create(&PostParams::default(), &infra("two")).await.unwrap();
        wait_state(&api, "two", T::Create, S::Succeeded).await;
        assert_eq!(Counts::get(&loser.actuator.counts.reconcile), 1, "the new leader reconciles the new object");
        loser.shutdown().await.unwrap();
    })
    .await
}

#[tokio::test]
async fn losing_the_lease_stops_the_controllers() {
    bounded(async {
        let tc = cluster().await;
        let a = instance(&tc.client, "a", true, None).await;
        eventually("a to lead", || async { holder(&tc.client).await.filter(|h| h == "a") }).await;
        // Someone else takes the lease over.
        let leases: Api<Lease> = Api::namespaced(tc.client.clone(), LEASE_NS);
        let steal = json!({"spec": {"holderIdentity": "intruder", "leaseDurationSeconds": 3600, "renewTime": MicroTime(Timestamp::now())}});
        leases.patch("test-leader", &PatchParams::default(), &Patch::Merge(&steal)).await.unwrap();
        let result = tokio::time::timeout(Duration::from_secs(30), a.handle).await.expect("the runner must stop").unwrap();
        assert!(matches!(result, Err(RunnerError::LostLeadership(_))), "{result:?}");
        // With its controllers stopped, new objects stay untouched by this instance.
        let api = Infrastructure::api(tc.client.clone(), Some(NS));
        api.create(&PostParams::default(), &infra("after")).await.unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(a.actuator.counts.total(), 0);
        assert!(api.get("after").await.unwrap().status.is_none());
    })
    .await
}

#[tokio::test]
async fn the_heartbeat_lease_is_renewed() {
    bounded(async {
        let tc = cluster().await;
        let a = instance(&tc.client, "a", false, Some(Duration::from_secs(1))).await;
        let leases: Api<Lease> = Api::namespaced(tc.client.clone(), LEASE_NS);
        let first =
            eventually("the heartbeat lease", || async { leases.get_opt(HEARTBEAT_LEASE).await.ok().flatten()?.spec })
                .await;
        assert_eq!(first.holder_identity.as_deref(), Some("provider-test"));
        let renewed = first.renew_time.clone().unwrap();
        eventually("a renewal", || async {
            let spec = leases.get_opt(HEARTBEAT_LEASE).await.ok().flatten()?.spec?;
            (spec.renew_time.as_ref() != Some(&renewed)).then_some(())
        })
        .await;
        a.shutdown().await.unwrap();
    })
    .await
}

/// A server added with `add_server` runs on every replica, leader or not; a replica is ready
/// only once its servers serve, and a shutdown stops them.
#[tokio::test]
async fn servers_run_on_every_replica_and_gate_readiness() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    bounded(async {
        let tc = cluster().await;
        let (serve_tx, serve_rx) = tokio::sync::watch::channel(false);
        let (running, stopped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut instances = Vec::new();
        for identity in ["a", "b"] {
            let mut config = RunnerConfig::new("provider-test", LEASE_NS);
            config.http_addr = None;
            config.heartbeat_interval = None;
            config = config.leader_election(election(identity));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let mut runner = Runner::new(tc.client.clone(), config).unwrap().with_listener(listener);
            let (mut serve, running, stopped) = (serve_rx.clone(), running.clone(), stopped.clone());
            runner.add_server(move |stop, ready: Arc<AtomicBool>| async move {
                running.fetch_add(1, Ordering::SeqCst);
                let _ = serve.wait_for(|s| *s).await;
                ready.store(true, Ordering::Release);
                stop.await;
                stopped.fetch_add(1, Ordering::SeqCst);
            });
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let handle = tokio::spawn(runner.run(async move {
                let _ = rx.await;
            }));
            instances.push((identity, addr, tx, handle));
        }
        let leader = eventually("a leader", || holder(&tc.client)).await;
        eventually("both servers running", || async { (running.load(Ordering::SeqCst) == 2).then_some(()) }).await;
        let standby = instances.iter().find(|i| i.0 != leader).unwrap().1;
        assert_eq!(get(standby, "/readyz").await, (503, "servers not serving yet".to_string()));
        serve_tx.send(true).unwrap();
        eventually("the standby to be ready", || async { (get(standby, "/readyz").await.0 == 200).then_some(()) })
            .await;
        for (_, _, tx, handle) in instances {
            drop(tx);
            tokio::time::timeout(Duration::from_secs(30), handle).await.expect("runner did not stop").unwrap().unwrap();
        }
        assert_eq!(stopped.load(Ordering::SeqCst), 2, "shutdown stops the servers of leader and standby");
    })
    .await
}
