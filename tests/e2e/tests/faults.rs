//! Faults of the bring-up itself, on the running local cluster (run after the other e2e tests,
//! one at a time: they stop parts of the cluster): a concurrent `up`, a port taken by
//! another process, and a killed kubelet and containerd repaired by `up` without data loss.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::*;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, PostParams};
use local_cluster::settings::NODE_NAME;
use std::process::Command;

fn up(state_dir: &std::path::Path) -> std::process::Output {
    Command::new(local_cluster_bin())
        .arg(format!("--state-dir={}", state_dir.display()))
        .args(["up", "--timeout=120"])
        .arg(format!("--assets={}", assets().display()))
        .arg(format!("--images={}", images().display()))
        .output()
        .expect("local-cluster runs")
}

fn pid_of(component: &str) -> String {
    std::fs::read_to_string(state_dir().join("pids").join(format!("{component}.pid"))).expect("a PID file")
}

#[test]
fn a_second_up_while_one_runs_reports_it_and_changes_nothing() {
    let lock = std::fs::OpenOptions::new().write(true).open(state_dir().join("lock")).expect("the lock file");
    lock.try_lock().expect("no other up or down runs now");
    let pids_before: Vec<String> = ["etcd", "kubelet"].iter().map(|c| pid_of(c)).collect();
    let out = up(&state_dir());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the second up must fail");
    assert!(stderr.contains("holds this state directory") && stderr.contains("nothing was changed"), "{stderr}");
    let pids_after: Vec<String> = ["etcd", "kubelet"].iter().map(|c| pid_of(c)).collect();
    assert_eq!(pids_before, pids_after);
    lock.unlock().expect("unlocked");
}

#[test]
fn a_port_taken_by_someone_else_is_named_with_the_fix() {
    // A second cluster's state directory: its etcd would need the port the running one holds.
    let other = std::env::temp_dir().join(format!("local-cluster-port-test-{}", std::process::id()));
    let out = up(&other);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_dir_all(&other);
    assert!(!out.status.success());
    assert!(stderr.contains("already in use") && stderr.contains("etcd") && stderr.contains("ss -ltnp"), "{stderr}");
}

#[tokio::test]
async fn a_killed_kubelet_and_containerd_are_repaired_by_up_without_losing_data() {
    let client = client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let name = format!("survivor-{}", std::process::id());
    let cm: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "data": {"k": "v"}})).expect("cm");
    cms.create(&PostParams::default(), &cm).await.expect("created");

    let kubelet = pid_of("kubelet");
    let containerd = pid_of("containerd");
    for pid in [&kubelet, &containerd] {
        let status = Command::new("kill").args(["-KILL", pid.trim()]).status().expect("kill runs");
        assert!(status.success());
    }
    let out = up(&state_dir());
    assert!(out.status.success(), "up repairs the cluster: {}", String::from_utf8_lossy(&out.stderr));
    assert_ne!(pid_of("kubelet"), kubelet);
    assert_ne!(pid_of("containerd"), containerd);
    // The restarted kubelet may report the node NotReady for a moment (its runtime and pod
    // lifecycle checks settle after start): Ready again within a minute.
    let nodes = Api::<Node>::all(client.clone());
    let started = std::time::Instant::now();
    loop {
        let node = nodes.get(NODE_NAME).await.expect("node");
        if local_cluster::up::node_ready(&node) {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the node is not Ready: {:?}", node.status);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    // The repaired node runs new pods.
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), "default");
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "c", "image": "gardener-rs.local/busybox:1.35.0", "command": ["sleep", "3600"]}]}
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod).await.expect("pod created");
    let ready =
        kube::runtime::wait::await_condition(pods.clone(), &name, |p: Option<&k8s_openapi::api::core::v1::Pod>| {
            p.is_some_and(local_cluster::up::pod_ready)
        });
    let became_ready = tokio::time::timeout(TIMEOUT, ready).await;
    let _ = pods.delete(&name, &Default::default()).await;
    assert!(matches!(became_ready, Ok(Ok(_))), "a pod on the repaired node did not become Ready: {became_ready:?}");
    let kept = cms.get(&name).await.expect("the ConfigMap survived");
    assert_eq!(kept.data.and_then(|d| d.get("k").cloned()).as_deref(), Some("v"));
    cms.delete(&name, &Default::default()).await.expect("cleanup");
}
