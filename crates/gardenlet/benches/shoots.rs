//! Time from Shoot creation to `Succeeded` for one shoot and for many at once, and the
//! gardenlet process's resident memory meanwhile.
//!
//! `cargo bench -p gardenlet --bench shoots` (`SHOOTS=<n>` sets the burst size, default 50).
//! The gardenlet binary runs as its own process against a testenv control plane; the
//! workload-readiness simulator, the stand-in shoot kube-apiservers and the SDK test actuators
//! run in this bench process (see `tests/support`). Under `cargo test`/nextest it does nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // measurement harness: a panic is the report

#[path = "common/garden.rs"]
mod garden;
#[path = "common/proc.rs"]
mod proc;
#[path = "../tests/support/mod.rs"]
mod support;

use api::core::Shoot;
use garden::succeeded;
use kube::Api;
use kube::api::PostParams;
use proc::{cpu_seconds, rss_kib};
use std::time::{Duration, Instant};
use support::simulator::Simulator;

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
    garden::prepare_garden(&client).await;
    let mut _tasks = garden::spawn_actuators(&client);
    _tasks.push(Simulator::new().spawn(client.clone()));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gardenlet.yaml");
    let controllers = [("shootConcurrentSyncs", 50)];
    std::fs::write(&config, garden::gardenlet_config(env.kubeconfig_path(), "local", 0, 100, &controllers)).unwrap();
    let port = testenv::free_port(std::net::Ipv4Addr::LOCALHOST.into()).unwrap();
    let mut gardenlet = garden::spawn_gardenlet(&config, port, &dir.path().join("gardenlet.log"));
    let pid = gardenlet.id();
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), "garden-dev");
    let create = |name: String| {
        let shoots = shoots.clone();
        async move {
            shoots.create(&PostParams::default(), &garden::shoot(&name, "local")).await.unwrap();
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
