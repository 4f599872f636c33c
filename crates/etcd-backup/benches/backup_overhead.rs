//! What the backup costs, against a real etcd (the test environment's): the write latency of a
//! bounded load of 100 writes/s (1 KiB each) for `BENCH_SECONDS` (60) without and with the backup
//! sidecar's loop running (20 s deltas), and the time to restore a database of about 50 MiB from
//! a full snapshot and one delta. Prints medians and the 99th percentiles.
//!
//! `KUBEBUILDER_ASSETS=$(hack/setup-envtest.sh) cargo bench --profile dev -p etcd-backup --bench backup_overhead`
//!
//! Without `--bench` (`cargo test`, nextest) it is a smoke test: two seconds of load and a
//! restore of about 2 MiB, so the benchmark's code path stays working.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a panic is the report

use etcd_backup::chain::Policy;
use etcd_backup::delta::Event;
use etcd_backup::gateway::Etcd;
use etcd_backup::schedule::Schedule;
use etcd_backup::snapshotter::{Config, Health, Snapshotter};
use etcd_backup::store::Store;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// 100 writes per second for `seconds`: the latency of each.
async fn load(etcd: &Etcd, seconds: u64, prefix: &str) -> Vec<Duration> {
    let value = vec![b'x'; 1024];
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let mut out = Vec::new();
    for i in 0..seconds * 100 {
        tick.tick().await;
        let key = format!("/bench/{prefix}/{}", i % 500).into_bytes();
        let start = Instant::now();
        etcd.apply(&[Event::Put { key, value: value.clone() }]).await.unwrap();
        out.push(start.elapsed());
    }
    out.sort();
    out
}

fn report(what: &str, sorted: &[Duration]) {
    println!(
        "{what}: {} writes, p50 {:.2} ms, p99 {:.2} ms",
        sorted.len(),
        percentile(sorted, 0.5).as_secs_f64() * 1000.0,
        percentile(sorted, 0.99).as_secs_f64() * 1000.0
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    // cargo-nextest asks for the list of tests first: one smoke test, no ignored ones.
    if has("--list") {
        if !has("--ignored") {
            println!("smoke: test");
        }
        return;
    }
    let bench = has("--bench");
    let default_seconds = if bench { 60 } else { 2 };
    let seconds: u64 = std::env::var("BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(default_seconds);
    let big_keys = if bench { 400 } else { 16 };
    let env = testenv::TestEnv::start().await.unwrap();
    let etcd = Etcd::new(env.etcd_url(), "", None).await.unwrap();
    let without = load(&etcd, seconds, "without").await;
    report("without the backup", &without);

    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let config = Config {
        full_schedule: Schedule::parse("0 0 1 1 *").unwrap(),
        defrag_schedule: None,
        delta_period: Duration::from_secs(20),
        policy: Policy::LimitBased(7),
        gc_period: Duration::from_secs(60),
        failure_threshold: Duration::from_secs(600),
        // gardenlet's default; the minute of writes stays below it.
        compaction_revisions: 10_000,
    };
    let snapshotter = Snapshotter::new(
        etcd.clone(),
        Store::new(&store_dir),
        config.clone(),
        etcd_backup::metrics::Metrics::new().unwrap(),
        Health::new(Arc::new(AtomicBool::new(true)), config.failure_threshold),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(snapshotter.run(async move {
        let _ = stopped.await;
    }));
    let with = load(&etcd, seconds, "with").await;
    report("with the backup (20 s deltas)", &with);

    // About 50 MiB (the benchmark): 400 keys of 128 KiB, written while the sidecar runs, so they land in deltas;
    // then its last delta on stop.
    let big = vec![b'y'; 128 << 10];
    for i in 0..big_keys {
        etcd.apply(&[Event::Put { key: format!("/bench/big/{i}").into_bytes(), value: big.clone() }]).await.unwrap();
    }
    stop.send(()).unwrap();
    run.await.unwrap();
    let store_size = |dir: &std::path::Path| -> (f64, usize) {
        let files: Vec<u64> =
            std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()).map(|e| e.metadata().unwrap().len()).collect();
        (files.iter().sum::<u64>() as f64 / (1 << 20) as f64, files.len())
    };
    let assets = testenv::Assets::from_env().unwrap();
    let options = |data: &str| etcd_backup::restore::Options {
        store: store_dir.clone(),
        data_dir: dir.path().join(data),
        name: "etcd-main-0".into(),
        initial_cluster: "etcd-main-0=http://127.0.0.1:2380".into(),
        initial_advertise_peer_urls: "http://127.0.0.1:2380".into(),
        final_snapshot: None,
        etcdctl: assets.etcd.with_file_name("etcdctl"),
        etcd: assets.etcd.clone(),
    };
    let (mib, files) = store_size(&store_dir);
    let start = Instant::now();
    let outcome = etcd_backup::restore::run(&options("from-deltas")).await.unwrap();
    println!(
        "restore, the data in deltas: {:.1} s, store {mib:.1} MiB in {files} files ({outcome})",
        start.elapsed().as_secs_f64()
    );

    // The same data in one full snapshot (what the next scheduled full snapshot stores).
    let taken = etcd_backup::snapshot::take(&etcd, &store_dir, "taken.db").await.unwrap();
    let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64 + 1;
    let full = etcd_backup::names::Snapshot::full(taken.revision, unix);
    std::fs::rename(&taken.path, store_dir.join(full.file_name())).unwrap();
    drop(env);
    let start = Instant::now();
    let outcome = etcd_backup::restore::run(&options("from-full")).await.unwrap();
    println!(
        "restore, a full snapshot of {:.1} MiB: {:.1} s ({outcome})",
        taken.size as f64 / (1 << 20) as f64,
        start.elapsed().as_secs_f64()
    );
}
