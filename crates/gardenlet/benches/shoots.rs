//! Time from Shoot creation to `Succeeded` for one shoot and for many at once, and the
//! gardenlet process's resident memory meanwhile.
//!
//! `cargo bench -p gardenlet --bench shoots` (`SHOOTS=<n>` sets the burst size, default 50).
//! The gardenlet binary runs as its own process against a testenv control plane; the
//! workload-readiness simulator, the stand-in shoot kube-apiservers and the SDK test actuators
//! run in this bench process (see `tests/support`). Under `cargo test`/nextest it does nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // measurement harness: a panic is the report

#[path = "common/proc.rs"]
mod proc;
#[path = "../tests/support/mod.rs"]
mod support;

use api::core::Shoot;
use api::extensions as ext;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use proc::{cpu_seconds, rss_kib};
use std::time::{Duration, Instant};
use support::actuators::{TestActuator, spawn_controller};
use support::simulator::Simulator;

const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: NAME\n  namespace: garden-dev\n  labels:\n    name.seed.gardener.cloud/local: \"true\"\nspec:\n  seedName: local\n  region: local\n  provider:\n    type: local\n    workers:\n    - name: pool\n      minimum: 1\n      maximum: 2\n      machine:\n        type: local\n        image:\n          name: local\n          version: 1.0.0\n  kubernetes:\n    version: 1.20.2\n  networking:\n    type: local-net\n    pods: 10.96.0.0/11\n    services: 10.112.0.0/13\n";

fn succeeded(s: &Shoot) -> bool {
    s.status
        .as_ref()
        .and_then(|st| st.last_operation.as_ref())
        .is_some_and(|l| l.state == api::common::LastOperationState::Succeeded && l.progress == 100)
}

async fn wait_all(shoots: &Api<Shoot>, names: &[String], pid: u32, peak: &mut u64) -> Duration {
    let started = Instant::now();
    loop {
        *peak = (*peak).max(rss_kib(pid));
        let list = shoots.list(&Default::default()).await.unwrap();
        let done = names
            .iter()
            .filter(|n| list.items.iter().any(|s| s.metadata.name.as_ref() == Some(n) && succeeded(s)))
            .count();
        if done == names.len() {
            return started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(1200), "{done}/{} shoots Succeeded after 20 min", names.len());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // listed or run as a test: nothing to do
    }
    let burst: usize = std::env::var("SHOOTS").ok().and_then(|s| s.parse().ok()).unwrap_or(50);
    let env = testenv::TestEnv::start_with(support::simulator::seed_options()).await.unwrap();
    let client = env.client().await.unwrap();
    testenv::install_crds(&client, &api::crds::all()).await.unwrap();
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "garden-dev"}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
    let _tasks = [
        spawn_controller::<ext::Infrastructure>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::DNSRecord>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::ControlPlane>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::OperatingSystemConfig>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::Network>(client.clone(), &["local-net"], TestActuator::new()),
        spawn_controller::<ext::Worker>(client.clone(), &["local"], TestActuator::new()),
        Simulator::new().spawn(client.clone()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gardenlet.yaml");
    std::fs::write(
        &config,
        format!(
            "gardenKubeconfig: {}\nseed:\n  name: local\n  capacityShoots: 100\n  spec:\n    provider: {{type: local, region: local}}\n    networks: {{pods: 10.1.0.0/16, services: 10.2.0.0/16}}\nkubeApiserverServiceType: LoadBalancer\ncontrollers:\n  shootConcurrentSyncs: 50\n",
            env.kubeconfig_path().display()
        ),
    )
    .unwrap();
    let port = testenv::free_port(std::net::Ipv4Addr::LOCALHOST.into()).unwrap();
    let log = std::fs::File::create(dir.path().join("gardenlet.log")).unwrap();
    let mut gardenlet = std::process::Command::new(env!("CARGO_BIN_EXE_gardenlet"))
        .args([
            "--config",
            &config.display().to_string(),
            "--metrics-bind-address",
            &format!("127.0.0.1:{port}"),
            "--leader-election=false",
        ])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let pid = gardenlet.id();
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), "garden-dev");
    let create = |name: String| {
        let shoots = shoots.clone();
        async move {
            let shoot: Shoot = serde_yaml::from_str(&SHOOT.replace("NAME", &name)).unwrap();
            shoots.create(&PostParams::default(), &shoot).await.unwrap();
            name
        }
    };
    let mut peak = 0;
    let one = vec![create("single".into()).await];
    let single = wait_all(&shoots, &one, pid, &mut peak).await;
    let idle_rss = rss_kib(pid);
    let cpu_single = cpu_seconds(pid);
    let names: Vec<String> = futures::future::join_all((0..burst).map(|i| create(format!("burst-{i:02}")))).await;
    let many = wait_all(&shoots, &names, pid, &mut peak).await;
    let final_rss = rss_kib(pid);
    let cpu_burst = cpu_seconds(pid) - cpu_single;
    println!("one shoot, creation to Succeeded: {:.1} s", single.as_secs_f64());
    println!("{burst} shoots at once, creation to all Succeeded: {:.1} s", many.as_secs_f64());
    println!(
        "gardenlet RSS: {:.1} MiB with 1 shoot, {:.1} MiB with {} shoots, peak {:.1} MiB",
        idle_rss as f64 / 1024.0,
        final_rss as f64 / 1024.0,
        burst + 1,
        peak as f64 / 1024.0
    );
    println!(
        "gardenlet CPU time: {cpu_single:.1} s until the first shoot succeeded, {cpu_burst:.1} s for the burst of {burst}"
    );
    let _ = gardenlet.kill();
    let _ = gardenlet.wait();
}
