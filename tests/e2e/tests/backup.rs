//! Continuous etcd backups on the local garden (docs/backup.md): a shoot whose etcd volume is
//! deleted while a client writes ConfigMaps comes back by itself, restored from its full
//! snapshot and the delta snapshots after it, with every acknowledged write that is older than
//! one delta period (and, since the sidecar stores its last delta when the pod stops, in practice
//! every acknowledged write). The deleted shoot's backups are kept for the deletion grace
//! period, then deleted.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::kubectl;
use e2e::shoot::{CREATE_TIMEOUT, CaseShoot, STEP_TIMEOUT};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// gardenlet's default delta snapshot period.
const DELTA_PERIOD: Duration = Duration::from_secs(20);

/// Writes a ConfigMap every 200 ms until `stop`, at most `limit` times; records each acknowledged
/// write with the time of its acknowledgement.
fn start_writer(
    client: kube::Client,
    stop: Arc<std::sync::atomic::AtomicBool>,
    acked: Arc<Mutex<Vec<(String, Instant)>>>,
    limit: usize,
) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let api: Api<ConfigMap> = Api::namespaced(client, "default");
        let mut failed = 0;
        for i in 0..limit {
            if stop.load(std::sync::atomic::Ordering::Acquire) {
                break;
            }
            let name = format!("w-{i:04}");
            let cm: ConfigMap =
                serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "data": {"i": i.to_string()}}))
                    .unwrap();
            let params = PostParams::default();
            match tokio::time::timeout(Duration::from_secs(2), api.create(&params, &cm)).await {
                Ok(Ok(_)) => acked.lock().unwrap().push((name, Instant::now())),
                _ => failed += 1,
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        failed
    })
}

/// A JSONPath of the shoot's etcd pod.
async fn etcd_pod(s: &CaseShoot, path: &str) -> Result<String, String> {
    s.garden().await.field(&e2e::garden::POD, Some(&s.seed_ns), "etcd-main-0", path).await
}

fn backup_files(s: &CaseShoot) -> Vec<String> {
    let dir = backup_dir(s);
    let mut names: Vec<String> = std::fs::read_dir(dir.trim())
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn a_shoot_whose_etcd_volume_is_lost_comes_back_from_its_backups() {
    let mut s = CaseShoot::apply("backup", 33);
    let created = s.created().await;
    eprintln!("shoot {} created after {created:?}", s.name);
    let shoot = s.ready_client().await;
    let (files, _) = s
        .wait("the backup sidecar stored a full snapshot", STEP_TIMEOUT, || async {
            let files = backup_files(&s);
            Ok(files.iter().any(|f| f.starts_with("Full-")).then_some(files))
        })
        .await;
    eprintln!("backup entry after creation: {files:?}");

    // Writes across more than one delta period, then the loss while writes go on.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let writer = start_writer(shoot.clone(), stop.clone(), acked.clone(), 1500);
    tokio::time::sleep(DELTA_PERIOD + Duration::from_secs(10)).await;
    let old_claim =
        kubectl(&["-n", &s.seed_ns, "get", "pvc", "data-etcd-main-0", "-o", "jsonpath={.metadata.uid}"]).unwrap();
    let loss = Instant::now();
    let acked_before_loss = acked.lock().unwrap().len();
    kubectl(&["-n", &s.seed_ns, "delete", "pvc", "data-etcd-main-0", "--wait=false"]).unwrap();
    kubectl(&["-n", &s.seed_ns, "delete", "pod", "etcd-main-0", "--wait=true", "--timeout=120s"]).unwrap();
    eprintln!("etcd's volume and pod deleted ({acked_before_loss} writes acknowledged before)");

    // The StatefulSet recreates the pod; one created before the old claim was gone waits for a
    // claim that no longer exists, and is deleted again, as an operator would.
    let (message, restored_after) = s
        .wait("etcd runs again on a new volume, restored from the backups", CREATE_TIMEOUT, || async {
            let claim =
                kubectl(&["-n", &s.seed_ns, "get", "pvc", "data-etcd-main-0", "-o", "jsonpath={.metadata.uid}"])
                    .unwrap_or_default();
            let phase = etcd_pod(&s, "{.status.phase}").await.unwrap_or_default();
            if claim.is_empty() && phase == "Pending" {
                kubectl(&["-n", &s.seed_ns, "delete", "pod", "etcd-main-0", "--wait=false"])?;
                return Ok(None);
            }
            let ready = etcd_pod(&s, r#"{.status.containerStatuses[?(@.name=="etcd")].ready}"#).await?;
            if claim.is_empty() || claim == old_claim || ready != "true" {
                return Ok(None);
            }
            let message =
                etcd_pod(&s, r#"{.status.initContainerStatuses[?(@.name=="restore")].state.terminated.message}"#)
                    .await?;
            Ok(Some(message))
        })
        .await;
    eprintln!("etcd restored after {restored_after:?}: {message}");
    assert!(message.starts_with("restored from Full-"), "the restore says what it restored from: {message:?}");

    // The shoot's API answers again; writes go on until they succeed again, then stop.
    let ((), back_after) = s
        .wait("the shoot's API server serves again", STEP_TIMEOUT, || async {
            let api: Api<ConfigMap> = Api::namespaced(shoot.clone(), "default");
            api.list(&ListParams::default().limit(1)).await.map_err(|e| e.to_string())?;
            Ok(Some(()))
        })
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, std::sync::atomic::Ordering::Release);
    let failed = writer.await.unwrap();
    eprintln!("the shoot's API served again {back_after:?} after the restore; {failed} writes failed meanwhile");

    // The shoot's health says that etcd was restored, and from what (the care controller looks
    // every minute).
    let (health, _) = s
        .wait("ControlPlaneHealthy reports the restore", STEP_TIMEOUT, || async {
            let message = s.field(r#"{.status.conditions[?(@.type=="ControlPlaneHealthy")].message}"#).await?;
            Ok(message.contains("was restored from its backups").then_some(message))
        })
        .await;
    eprintln!("ControlPlaneHealthy: {health}");
    assert!(health.contains(&message), "the condition names what the restore said: {health}");

    // The care controller restarted the kube-apiserver pods that ran during the restore: their
    // watch cache would wait for revisions a restore after an abrupt loss took back.
    let restored_at: k8s_openapi::jiff::Timestamp =
        etcd_pod(&s, r#"{.status.initContainerStatuses[?(@.name=="restore")].state.terminated.finishedAt}"#)
            .await
            .unwrap()
            .trim()
            .parse()
            .unwrap();
    let (started, _) = s
        .wait("kube-apiserver restarted after the restore", STEP_TIMEOUT, || async {
            let pods = s.garden().await.list(&e2e::garden::POD, Some(&s.seed_ns)).await?;
            let apiservers: Vec<(String, bool)> = pods
                .iter()
                .filter(|p| {
                    p["metadata"]["labels"]["app"] == "kubernetes" && p["metadata"]["labels"]["role"] == "apiserver"
                })
                .map(|p| {
                    let created = p["metadata"]["creationTimestamp"].as_str().unwrap_or_default().to_string();
                    let ready = p["status"]["conditions"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
                    (created, ready)
                })
                .collect();
            let after = |created: &str| created.parse::<k8s_openapi::jiff::Timestamp>().is_ok_and(|c| c >= restored_at);
            let done = !apiservers.is_empty() && apiservers.iter().all(|(c, ready)| after(c) && *ready);
            Ok(done.then_some(apiservers))
        })
        .await;
    eprintln!("kube-apiserver pods after the restore (finished {restored_at}): {started:?}");
    let ((), _) = s
        .wait("the shoot's API server serves after its restart", STEP_TIMEOUT, || async {
            let api: Api<ConfigMap> = Api::namespaced(shoot.clone(), "default");
            api.list(&ListParams::default().limit(1)).await.map_err(|e| e.to_string())?;
            Ok(Some(()))
        })
        .await;

    let api: Api<ConfigMap> = Api::namespaced(shoot.clone(), "default");
    let present: std::collections::BTreeSet<String> =
        api.list(&ListParams::default()).await.unwrap().items.into_iter().filter_map(|c| c.metadata.name).collect();
    let acked = acked.lock().unwrap().clone();
    let lost: Vec<&(String, Instant)> = acked.iter().filter(|(name, _)| !present.contains(name)).collect();
    let lost_seconds = lost.iter().map(|(_, at)| loss.saturating_duration_since(*at).as_secs_f64()).fold(0.0, f64::max);
    eprintln!(
        "{} writes acknowledged, {} lost (the oldest lost one {lost_seconds:.1} s before the loss); backup entry: {:?}",
        acked.len(),
        lost.len(),
        backup_files(&s)
    );
    let guaranteed: Vec<&&(String, Instant)> =
        lost.iter().filter(|(_, at)| loss.saturating_duration_since(*at) > DELTA_PERIOD).collect();
    assert!(guaranteed.is_empty(), "writes older than one delta period were lost: {guaranteed:?}");
    assert!(acked_before_loss > 50, "the writer wrote before the loss ({acked_before_loss})");

    // The shoot goes; its backups stay for the deletion grace period (GARDEN_GRACE), reported by
    // its garden BackupEntry, then go with it.
    let dir = backup_dir(&s);
    let entry = garden_entry(&s).expect("the shoot has a garden BackupEntry");
    assert!(entry.ends_with(" local"), "the garden entry names the seed in its status: {entry}");
    // Observed while the shoot's deletion goes on: the grace period runs from the entry's
    // deletion, early in the deletion flow, and on a busy host the rest of the flow can outlast
    // it (it did, with 60 s).
    s.start_deletion();
    let (kept, _) = s
        .wait("the garden BackupEntry says the backups are kept", STEP_TIMEOUT, || async {
            let entry = garden_entry(&s)
                .ok_or_else(|| "the garden BackupEntry is gone before its grace period ended".to_string())?;
            Ok(entry.contains(" Delete Pending ").then_some(entry))
        })
        .await;
    let files = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    assert!(files > 0, "the backups in {dir} are kept after the shoot's deletion");
    eprintln!("during the shoot's deletion: {kept} ({files} files in {dir})");
    // The grace period runs from the entry's deletion (during the shoot's deletion flow).
    let name = kept.split_whitespace().next().unwrap_or_default().to_string();
    let deleted_at = kubectl(&[
        "-n",
        e2e::shoot::PROJECT_NS,
        "get",
        "backupentries.core.gardener.cloud",
        &name,
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
    ])
    .unwrap();
    let deleted_at: k8s_openapi::jiff::Timestamp = deleted_at.trim().parse().unwrap();
    s.wait_gone().await;
    let ((), gone) = s
        .wait("the garden BackupEntry and its backups are gone after the grace period", STEP_TIMEOUT, || async {
            Ok((garden_entry(&s).is_none() && !std::path::Path::new(&dir).exists()).then_some(()))
        })
        .await;
    let kept_for = k8s_openapi::jiff::Timestamp::now().duration_since(deleted_at);
    eprintln!("backups deleted {kept_for:#} after the entry's deletion ({gone:?} waited after the shoot was gone)");
    // The timestamp has whole seconds.
    assert!(
        kept_for.as_secs() + 1 >= GARDEN_GRACE.as_secs() as i64,
        "the backups went before the grace period ended ({kept_for:#})"
    );
}

/// The local garden's deletion grace period of BackupEntries (hack/local-values/gardenlet.yaml).
const GARDEN_GRACE: Duration = Duration::from_secs(60);

/// The directory of the shoot's backups, from its extension BackupEntry (cluster-scoped, named
/// `<seed namespace>--<shoot UID>`).
fn backup_dir(s: &CaseShoot) -> String {
    let entries = kubectl(&[
        "get",
        "backupentries.extensions.gardener.cloud",
        "-o",
        r#"jsonpath={range .items[*]}{.metadata.name} {.status.providerStatus.hostPath}{"\n"}{end}"#,
    ])
    .unwrap_or_default();
    let prefix = format!("{}--", s.seed_ns);
    entries
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .find_map(|l| l.split_whitespace().nth(1))
        .unwrap_or_default()
        .to_string()
}

/// The shoot's garden BackupEntry as `<name> <lastOperation type> <state> <status.seedName>`.
fn garden_entry(s: &CaseShoot) -> Option<String> {
    let entries = kubectl(&[
        "-n",
        e2e::shoot::PROJECT_NS,
        "get",
        "backupentries.core.gardener.cloud",
        "-o",
        r#"jsonpath={range .items[*]}{.metadata.name} {.status.lastOperation.type} {.status.lastOperation.state} {.status.seedName}{"\n"}{end}"#,
    ])
    .ok()?;
    let prefix = format!("{}--", s.seed_ns);
    entries.lines().find(|l| l.starts_with(&prefix)).map(str::to_string)
}
