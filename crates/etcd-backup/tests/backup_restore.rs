//! The backup chain against real etcd and kube-apiserver processes: the sidecar's loop stores a
//! full snapshot and deltas while the API server writes, its last delta on shutdown, and a restore
//! into an empty data directory gives back every key with its value and revision.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use etcd_backup::chain::Policy;
use etcd_backup::gateway::Etcd;
use etcd_backup::names::Kind;
use etcd_backup::restore::{self, Outcome};
use etcd_backup::schedule::Schedule;
use etcd_backup::snapshotter::{Config, Health, Snapshotter};
use etcd_backup::store::Store;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use testenv::TestEnv;

fn config(delta: Duration) -> Config {
    Config {
        // Never during the test: the one full snapshot is the one at start.
        full_schedule: Schedule::parse("0 0 1 1 *").unwrap(),
        defrag_schedule: None,
        delta_period: delta,
        policy: Policy::LimitBased(2),
        gc_period: Duration::from_secs(3600),
        failure_threshold: Duration::from_secs(60),
        compaction_revisions: 0,
    }
}

/// Runs the sidecar's loop until the returned sender is used (or dropped).
fn spawn(snapshotter: Snapshotter) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(snapshotter.run(async move {
        let _ = stopped.await;
    }));
    (stop, run)
}

fn binaries() -> (PathBuf, PathBuf) {
    let assets = testenv::Assets::from_env().unwrap();
    let etcdctl = assets.etcd.with_file_name("etcdctl");
    assert!(etcdctl.is_file(), "etcdctl is missing next to etcd; run {}", testenv::SETUP_COMMAND);
    (assets.etcd, etcdctl)
}

fn options(store: &Path, data_dir: &Path) -> restore::Options {
    let (etcd, etcdctl) = binaries();
    restore::Options {
        store: store.to_path_buf(),
        data_dir: data_dir.to_path_buf(),
        name: "etcd-main-0".into(),
        // As gardenlet passes them: the member's https peer URL, which the restore never listens on.
        initial_cluster: "etcd-main-0=https://etcd-main-0.etcd-main-peer.shoot--dev--demo.svc:2380".into(),
        initial_advertise_peer_urls: "https://etcd-main-0.etcd-main-peer.shoot--dev--demo.svc:2380".into(),
        final_snapshot: None,
        etcd,
        etcdctl,
    }
}

async fn write(api: &Api<ConfigMap>, name: &str) {
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name}, "data": {"written": name}
    }))
    .unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
}

/// Waits (bounded) until the sidecar stored its full snapshot at start: exactly one.
async fn full_snapshot_at_start(store: &Store) {
    testenv::poll::until_some(
        "the full snapshot at start",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            let store = store.clone();
            async move {
                let fulls = store.list().await.unwrap().iter().filter(|s| s.kind == Kind::Full).count();
                (fulls == 1).then_some(())
            }
        },
    )
    .await;
}

/// Every key, value and revision of the etcd on `data_dir` (started by the restore's own
/// temporary etcd: a restore of a directory that holds a member changes nothing and reads it).
async fn dump_dir(data_dir: &Path) -> (Vec<(Vec<u8>, Vec<u8>, i64)>, i64) {
    let (etcd_bin, _) = binaries();
    let port = testenv::free_port("127.0.0.1".parse().unwrap()).unwrap();
    let peer = testenv::free_port("127.0.0.1".parse().unwrap()).unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let mut child = tokio::process::Command::new(etcd_bin)
        .arg("--name=etcd-main-0")
        .arg(format!("--data-dir={}", data_dir.display()))
        .arg(format!("--listen-client-urls={url}"))
        .arg(format!("--advertise-client-urls={url}"))
        .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let etcd = Etcd::new(&url, "", None).await.unwrap();
    let revision = testenv::poll::until_some(
        "the restored etcd answers",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            let etcd = etcd.clone();
            async move { etcd.revision().await.ok() }
        },
    )
    .await;
    let dump = etcd.dump().await.unwrap();
    child.kill().await.unwrap();
    (dump, revision)
}

#[tokio::test]
async fn a_restore_from_a_full_snapshot_and_deltas_gives_back_every_key_at_its_revision() {
    let env = TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for i in 0..5 {
        write(&api, &format!("before-{i}")).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let etcd = Etcd::new(env.etcd_url(), "", None).await.unwrap();
    let metrics = etcd_backup::metrics::Metrics::new().unwrap();
    let healthy = Arc::new(AtomicBool::new(false));
    let snapshotter = Snapshotter::new(
        etcd.clone(),
        Store::new(&store_dir),
        config(Duration::from_millis(500)),
        metrics.clone(),
        Health::new(healthy.clone(), Duration::from_secs(60)),
    );
    let (stop, run) = spawn(snapshotter);
    let store = Store::new(&store_dir);
    full_snapshot_at_start(&store).await;
    // Writes, updates and deletes after the full snapshot, across several delta periods.
    for i in 0..20 {
        write(&api, &format!("after-{i}")).await;
        if i % 5 == 4 {
            api.delete(&format!("before-{}", i / 5), &DeleteParams::default()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(600)).await;
        }
    }
    // The last writes land after the last delta period; SIGTERM stores them.
    write(&api, "last").await;
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), run).await.unwrap().unwrap();
    assert!(healthy.load(std::sync::atomic::Ordering::Acquire), "backups were healthy");
    let snapshots = store.list().await.unwrap();
    let deltas = snapshots.iter().filter(|s| s.kind == Kind::Incr).count();
    assert!(deltas >= 2, "several delta periods stored deltas: {snapshots:?}");
    let rendered = runtime::metrics::render(&metrics.registry);
    assert!(rendered.contains("etcdbr_snapshot_latest_revision{kind=\"Incr\"}"), "{rendered}");

    let origin = etcd.dump().await.unwrap();
    let origin_revision = etcd.revision().await.unwrap();
    drop(env);

    let data_dir = dir.path().join("data");
    let outcome = restore::run(&options(&store_dir, &data_dir)).await.unwrap();
    let restored_revision = match &outcome {
        Outcome::Restored { deltas: n, revision, gap_at: None, .. } => {
            assert_eq!(*n, deltas);
            *revision
        }
        other => panic!("not restored: {other}"),
    };
    let (restored, revision) = dump_dir(&data_dir).await;
    assert_eq!(revision, restored_revision);
    // kube-apiserver goes on writing its own keys (its master lease) after the sidecar stopped;
    // everything up to the last stored revision is back exactly, the test's writes included.
    assert!(restored_revision <= origin_revision, "{outcome}; origin at {origin_revision}");
    let later: Vec<&Vec<u8>> = origin.iter().filter(|(_, _, r)| *r > restored_revision).map(|(k, _, _)| k).collect();
    let ours = |k: &[u8]| k.starts_with(b"/registry/configmaps/");
    assert!(later.iter().all(|k| !ours(k)), "only the API server's own keys changed after the stop");
    let settled = |kvs: &[(Vec<u8>, Vec<u8>, i64)]| -> Vec<(Vec<u8>, Vec<u8>, i64)> {
        kvs.iter().filter(|(k, _, r)| *r <= restored_revision && !later.contains(&k)).cloned().collect()
    };
    assert!(settled(&restored) == settled(&origin), "every key, value and revision up to the stop is back");
    let deleted_later: Vec<&Vec<u8>> =
        restored.iter().map(|(k, _, _)| k).filter(|k| !origin.iter().any(|(o, _, _)| o == *k)).collect();
    assert!(deleted_later.iter().all(|k| !ours(k)), "{deleted_later:?}");
    let configmaps = restored.iter().filter(|(k, _, _)| ours(k)).count();
    assert_eq!(configmaps, origin.iter().filter(|(k, _, _)| ours(k)).count());
    assert!(restored.iter().any(|(k, _, _)| k.ends_with(b"/default/last")), "the write after the last period is back");
    assert!(!dir.path().join("data.restore").exists(), "no scratch directory is left");
    // A data directory with a member is never touched again.
    assert_eq!(restore::run(&options(&store_dir, &data_dir)).await.unwrap(), Outcome::DataPresent);
}

/// Snapshot compaction (etcd-druid's): once the deltas since the newest full snapshot cover the
/// threshold's revisions, the sidecar takes a full snapshot early, and a restore starts from it
/// (replaying only the deltas after it) with every key back.
#[tokio::test]
async fn deltas_past_the_compaction_threshold_are_compacted_into_a_full_snapshot() {
    let env = TestEnv::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(env.client().await.unwrap(), "default");
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let etcd = Etcd::new(env.etcd_url(), "", None).await.unwrap();
    const THRESHOLD: u64 = 30;
    let config = Config { compaction_revisions: THRESHOLD, ..config(Duration::from_millis(300)) };
    let snapshotter = Snapshotter::new(
        etcd.clone(),
        Store::new(&store_dir),
        config,
        etcd_backup::metrics::Metrics::new().unwrap(),
        Health::new(Arc::new(AtomicBool::new(true)), Duration::from_secs(60)),
    );
    let (stop, run) = spawn(snapshotter);
    let store = Store::new(&store_dir);
    let fulls = |all: &[etcd_backup::names::Snapshot]| all.iter().filter(|s| s.kind == Kind::Full).count();
    full_snapshot_at_start(&store).await;
    // Well over the threshold's revisions, across several delta periods.
    for i in 0..90 {
        write(&api, &format!("w-{i:03}")).await;
        if i % 10 == 9 {
            tokio::time::sleep(Duration::from_millis(350)).await;
        }
    }
    let compacted = testenv::poll::until_some(
        "a full snapshot taken early by compaction",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            let store = store.clone();
            async move {
                let all = store.list().await.unwrap();
                (fulls(&all) >= 2).then_some(all)
            }
        },
    )
    .await;
    write(&api, "last").await;
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), run).await.unwrap().unwrap();
    let all = store.list().await.unwrap();
    let chain = etcd_backup::chain::restore_chain(&all).unwrap();
    let replayed: i64 = chain.end() - chain.full.end;
    assert!(
        replayed < 2 * THRESHOLD as i64,
        "the restore chain starts from a compacted full snapshot: {chain:?} (store after the first compaction: {compacted:?})"
    );
    let origin = etcd.dump().await.unwrap();
    drop(env);

    let data_dir = dir.path().join("data");
    let outcome = restore::run(&options(&store_dir, &data_dir)).await.unwrap();
    assert!(matches!(outcome, Outcome::Restored { gap_at: None, .. }), "{outcome}");
    let (restored, _) = dump_dir(&data_dir).await;
    let ours = |kvs: &[(Vec<u8>, Vec<u8>, i64)]| -> Vec<(Vec<u8>, Vec<u8>, i64)> {
        kvs.iter().filter(|(k, _, _)| k.starts_with(b"/registry/configmaps/default/")).cloned().collect()
    };
    assert_eq!(ours(&restored).len(), 91, "every write is back");
    assert!(ours(&restored) == ours(&origin), "with its value and revision");
}

/// A write etcd acknowledged just before SIGTERM is in the last delta, even when the watch had
/// not delivered it yet: the sidecar reads the watch up to etcd's revision before it stops.
#[tokio::test]
async fn writes_acknowledged_just_before_the_shutdown_are_in_the_last_delta() {
    use etcd_backup::delta::Event;
    let env = TestEnv::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let etcd = Etcd::new(env.etcd_url(), "", None).await.unwrap();
    let snapshotter = Snapshotter::new(
        etcd.clone(),
        Store::new(&store_dir),
        // No delta period passes during the test: only the shutdown stores the writes.
        config(Duration::from_secs(3600)),
        etcd_backup::metrics::Metrics::new().unwrap(),
        Health::new(Arc::new(AtomicBool::new(true)), Duration::from_secs(60)),
    );
    let (stop, run) = spawn(snapshotter);
    let store = Store::new(&store_dir);
    full_snapshot_at_start(&store).await;
    // Many small writes, then a large one: the watch takes longest to carry the last.
    for i in 0..100 {
        etcd.apply(&[Event::Put { key: format!("/burst/{i:03}").into_bytes(), value: b"v".to_vec() }]).await.unwrap();
    }
    let last = etcd.apply(&[Event::Put { key: b"/burst/large".to_vec(), value: vec![b'x'; 1 << 20] }]).await.unwrap();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), run).await.unwrap().unwrap();
    let all = store.list().await.unwrap();
    let chain = etcd_backup::chain::restore_chain(&all).unwrap();
    assert_eq!(chain.end(), last, "the store covers every acknowledged write: {all:?}");
}

#[tokio::test]
async fn without_backups_etcd_starts_empty_and_a_corrupt_delta_stops_the_restore() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let data_dir = dir.path().join("data");
    assert_eq!(restore::run(&options(&store_dir, &data_dir)).await.unwrap(), Outcome::NoBackup);
    assert!(!data_dir.exists());

    // A full snapshot of a real etcd and a delta that was cut short.
    let env = TestEnv::start().await.unwrap();
    let etcd = Etcd::new(env.etcd_url(), "", None).await.unwrap();
    let taken = etcd_backup::snapshot::take(&etcd, &store_dir, "taken.db").await.unwrap();
    let full = etcd_backup::names::Snapshot::full(taken.revision, 100);
    std::fs::rename(&taken.path, store_dir.join(full.file_name())).unwrap();
    let mut revisions = Vec::new();
    etcd_backup::delta::push(
        &mut revisions,
        taken.revision + 1,
        etcd_backup::delta::Event::Put { key: b"/registry/x".to_vec(), value: b"y".to_vec() },
    );
    let bytes = etcd_backup::delta::encode(&revisions);
    let delta = etcd_backup::names::Snapshot::incr(taken.revision + 1, taken.revision + 1, 101);
    std::fs::write(store_dir.join(delta.file_name()), &bytes[..bytes.len() - 10]).unwrap();
    let err = restore::run(&options(&store_dir, &data_dir)).await.unwrap_err().to_string();
    assert!(err.contains(&delta.file_name()) && err.contains("trailer"), "{err}");
    assert!(!data_dir.exists() && !dir.path().join("data.restore").exists(), "nothing half written");

    // A migration's final snapshot is preferred while it exists (the broken delta is not read).
    std::fs::copy(store_dir.join(full.file_name()), store_dir.join("final-snapshot.db")).unwrap();
    let with_final =
        restore::Options { final_snapshot: Some("final-snapshot.db".into()), ..options(&store_dir, &data_dir) };
    match restore::run(&with_final).await.unwrap() {
        Outcome::Restored { from, deltas: 0, revision, .. } => {
            assert_eq!(from, "final-snapshot.db");
            assert!(revision >= taken.revision);
        }
        other => panic!("not restored from the final snapshot: {other}"),
    }
    assert!(data_dir.join("member").is_dir());
}

/// The value of `etcdbr_defragmentation_total{succeeded="true"}`.
fn defragmentations(metrics: &etcd_backup::metrics::Metrics) -> u64 {
    metrics
        .registry
        .gather()
        .iter()
        .filter(|f| f.name() == "etcdbr_defragmentation_total")
        .flat_map(|f| f.get_metric())
        .filter(|m| m.get_label().iter().any(|l| l.name() == "succeeded" && l.value() == "true"))
        .map(|m| m.get_counter().get_value() as u64)
        .sum()
}

#[tokio::test]
async fn a_scheduled_defragmentation_gives_back_the_free_pages_and_keeps_every_key() {
    scheduled_defragmentation(true).await;
}

/// An etcd without backups: the sidecar without a store only defragments, on the same schedule.
#[tokio::test]
async fn without_a_store_the_sidecar_still_defragments_on_its_schedule() {
    scheduled_defragmentation(false).await;
}

/// A defragmentation at the first tick of an every-minute schedule, by the backup sidecar's loop
/// (`with_store`) or by the defragmentation-only loop of a sidecar without a store.
async fn scheduled_defragmentation(with_store: bool) {
    use etcd_backup::delta::Event;
    let env = TestEnv::start().await.unwrap();
    let etcd = Etcd::new(env.etcd_url(), "", None).await.unwrap();
    // 8 MiB written and deleted again, and the history compacted: free pages in the file.
    let value = vec![b'x'; 64 << 10];
    for i in 0..128 {
        etcd.apply(&[Event::Put { key: format!("/junk/{i}").into_bytes(), value: value.clone() }]).await.unwrap();
    }
    for i in 0..16 {
        etcd.apply(&[Event::Put { key: format!("/kept/{i}").into_bytes(), value: format!("v{i}").into_bytes() }])
            .await
            .unwrap();
    }
    let mut last = 0;
    for i in 0..128 {
        last = etcd.apply(&[Event::Delete { key: format!("/junk/{i}").into_bytes() }]).await.unwrap();
    }
    // The API server writes on meanwhile (leases, events); the keys this test wrote are compared.
    let kept = |dump: Vec<(Vec<u8>, Vec<u8>, i64)>| -> Vec<(Vec<u8>, Vec<u8>, i64)> {
        dump.into_iter().filter(|(k, _, _)| k.starts_with(b"/kept/") || k.starts_with(b"/junk/")).collect()
    };
    let (_, etcdctl) = binaries();
    let compacted = std::process::Command::new(etcdctl)
        .args(["--endpoints", env.etcd_url(), "compact", &last.to_string(), "--physical"])
        .env("ETCDCTL_API", "3")
        .output()
        .unwrap();
    assert!(compacted.status.success(), "etcdctl compact: {}", String::from_utf8_lossy(&compacted.stderr));
    let before = etcd.db_size().await.unwrap();
    let keys_before = kept(etcd.dump().await.unwrap());
    assert_eq!(keys_before.len(), 16, "the kept keys, none of the deleted ones");
    assert!(before.file > 8 << 20, "the deleted values still fill the file: {before:?}");

    let dir = tempfile::tempdir().unwrap();
    let metrics = etcd_backup::metrics::Metrics::new().unwrap();
    // Every minute: the test waits for the first tick.
    let every_minute = Schedule::parse("* * * * *").unwrap();
    let (stop, run) = if with_store {
        let config = Config { defrag_schedule: Some(every_minute), ..config(Duration::from_secs(1)) };
        let snapshotter = Snapshotter::new(
            etcd.clone(),
            Store::new(dir.path()),
            config,
            metrics.clone(),
            Health::new(Arc::new(AtomicBool::new(false)), Duration::from_secs(60)),
        );
        spawn(snapshotter)
    } else {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(etcd_backup::defrag::run(etcd.clone(), every_minute, metrics.clone(), async move {
            let _ = stopped.await;
        }));
        (stop, run)
    };
    testenv::poll::until_some(
        "a scheduled defragmentation",
        Duration::from_secs(90),
        Duration::from_millis(500),
        || {
            let metrics = metrics.clone();
            async move { (defragmentations(&metrics) > 0).then_some(()) }
        },
    )
    .await;
    let _ = stop.send(());
    run.await.unwrap();

    let after = etcd.db_size().await.unwrap();
    assert!(after.file < before.file - (4 << 20), "the file shrank: {before:?} -> {after:?}");
    assert!(kept(etcd.dump().await.unwrap()) == keys_before, "every key, value and revision stays");
    let text = prometheus::TextEncoder::new().encode_to_string(&metrics.registry.gather()).unwrap();
    assert!(text.contains(&format!("etcdbr_db_size_bytes{{part=\"file\"}} {}", after.file)), "{text}");
    let stored = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(stored > 0, with_store, "only the sidecar with a store stores snapshots ({stored} files)");
}
