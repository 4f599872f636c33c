//! gardenlet at scale: many shoots on one real garden API server, counted by the API server.
//!
//! `cargo bench -p gardenlet --bench scale`, configured by environment variables ([`Settings`]):
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `SHOOTS` | 100 | shoots per seed |
//! | `SEEDS` | 1 | seeds (`local`, `local-2`, ...), each with its own gardenlet process |
//! | `STEADY_SECONDS` | 180 | length of each steady-state window |
//! | `SETTLE_SECONDS` | 30 | pause between all `Succeeded` and the first window |
//! | `RESYNC_SECONDS` | 60 | `shootSyncPeriodSeconds` of the second window (the first runs the default) |
//! | `RESTART_SECONDS` | 90 | the restart phase's length at most |
//! | `CARE_SECONDS` | 60 | `shootCarePeriodSeconds` (the default) |
//! | `SYNCS` | 50 | `shootConcurrentSyncs` |
//! | `RESTART_SYNCS` | `SYNCS` | `shootConcurrentSyncs` after the restart (5 is gardenlet's default) |
//! | `CARE_SYNCS` | 5 | `shootCareConcurrentSyncs` (the default) |
//! | `CREATE_CONCURRENCY` | 20 | Shoot creations in flight |
//! | `TIMEOUT_MINUTES` | 40 | creation must finish within this |
//!
//! One testenv control plane (etcd, kube-apiserver, a namespace/GC kube-controller-manager) is
//! garden and seed at once. Its kube-apiserver writes an audit log (level `Metadata`, JSON);
//! every gardenlet authenticates with its own client certificate (user `gardenlet-<seed>`,
//! group `system:masters`), so the audit log tells its requests apart from everything the
//! bench process does (user `testenv-admin`: the test actuators, the workload simulator,
//! the bench's polling, and the kube-controller-manager).
//!
//! The simulator here is a light one: it marks the control-plane Deployments and StatefulSets
//! rolled out and gives LoadBalancer Services a loopback address, but starts no etcd and no
//! kube-apiserver per shoot. Instead one shared stand-in shoot API (a second testenv
//! kube-apiserver) serves every shoot: for each shoot a TLS relay in this process listens on
//! the shoot's load-balancer address, port 443, with the serving certificate gardenlet
//! generated for the shoot's kube-apiserver, and forwards the bytes to the shared API server
//! (authenticated there as admin). So gardenlet's steps against the shoot's API run for real,
//! all against one API server.
//!
//! Phases (requests are attributed by the audit event's `requestReceivedTimestamp`):
//! 1. creation: all shoots created (bounded concurrency), until every one is `Succeeded`;
//! 2. settle (`SETTLE_SECONDS`);
//! 3. window A (`STEADY_SECONDS`): default resync (1 h, so no shoot is due: only care runs);
//! 4. restart: every gardenlet restarted with `shootSyncPeriodSeconds=RESYNC_SECONDS`; every
//!    shoot is due at once; until each shoot's last operation is newer than the restart, or
//!    `RESTART_SECONDS` (default 90; a resync of an unchanged shoot need not write it);
//! 5. window B (`STEADY_SECONDS`): care and resync.
//!
//! Per care cycle = A / (shoots × windows of the care period in A); per resync cycle =
//! (B − A) / (shoots × resync periods in B). Per shoot per hour at the default settings
//! (resync 3600 s, care 60 s) = 60 × care cycle + 1 × resync cycle.
//!
//! Under `cargo test`/nextest (no `--bench` argument) it does nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // measurement harness: a panic is the report

#[path = "../common/garden.rs"]
mod garden;
#[path = "../common/proc.rs"]
mod proc;
#[path = "../../tests/support/mod.rs"]
mod support;

mod audit;
mod gardenlet;
mod phases;
mod relay;
mod report;
mod setup;
mod simulator;

use report::Report;
use setup::Bench;
use std::path::Path;
use std::time::Duration;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(20)..];
    tail.iter().map(|l| l.chars().take(300).collect::<String>()).collect::<Vec<_>>().join("\n")
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The bench's settings, from the environment (the table above; `SYNCS`, `RESTART_SYNCS` and
/// `CARE_SYNCS` are read where gardenlet is started).
struct Settings {
    per_seed: usize,
    seeds: usize,
    steady: u64,
    settle: u64,
    resync: u64,
    care: u64,
    concurrency: usize,
    timeout: Duration,
    restart_limit: Duration,
}

impl Settings {
    fn from_env() -> Self {
        Self {
            per_seed: env_or("SHOOTS", 100),
            seeds: env_or("SEEDS", 1),
            steady: env_or("STEADY_SECONDS", 180),
            settle: env_or("SETTLE_SECONDS", 30),
            resync: env_or("RESYNC_SECONDS", 60),
            care: env_or("CARE_SECONDS", 60),
            concurrency: env_or("CREATE_CONCURRENCY", 20),
            timeout: Duration::from_secs(60 * env_or("TIMEOUT_MINUTES", 40)),
            restart_limit: Duration::from_secs(env_or("RESTART_SECONDS", 90)),
        }
    }

    fn total(&self) -> usize {
        self.per_seed * self.seeds
    }
}

#[tokio::main]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return; // listed or run as a test: nothing to do
    }
    let s = Settings::from_env();
    println!(
        "gardenlet at scale: {} seed(s) x {} shoots = {}; steady windows {} s; care {} s; resync in window B {} s",
        s.seeds,
        s.per_seed,
        s.total(),
        s.steady,
        s.care,
        s.resync
    );
    let mut bench = Bench::start(&s).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let rss_after_start = bench.rss();
    bench.sampler.take();

    let creation = phases::creation(&bench, &s).await;
    let mut all = vec![creation.phase];
    all.push(phases::window("settle", s.settle, &bench).await);
    eprintln!("  window A ({} s, default resync, care {} s)", s.steady, s.care);
    all.push(phases::window("window A", s.steady, &bench).await);
    let care_changes = phases::condition_changes(&bench.shoots, all[all.len() - 1].start).await;
    let (restart, restart_resynced) = phases::restart(&mut bench, &s).await;
    all.push(restart);
    all.push(phases::window("window B", s.steady, &bench).await);
    let rss_end = bench.rss();
    let cache_metrics = bench.stop().await;

    let (counts, _outside) = audit::read_audit(&bench.audit_log, &all);
    Report {
        seeds: s.seeds,
        per_seed: s.per_seed,
        total: s.total(),
        care: s.care,
        resync: s.resync,
        created_after: creation.created_after,
        creation: creation.creation,
        finish: creation.finish,
        restart_resynced,
        rss_after_start,
        rss_end,
        phases: all,
        counts,
        cache_metrics,
        care_changes,
    }
    .print();
}
