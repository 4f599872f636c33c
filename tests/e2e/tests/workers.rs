//! Worker pools roll like Gardener's machine controller rolls them, on the local garden: a pool
//! of two nodes moves to the other machine image version one machine at a time (a new machine
//! first, its Node Ready with kube-proxy, then the old Node cordoned and drained through the
//! Eviction API), and a client that asks a Service of a Deployment with a PodDisruptionBudget
//! every 200 ms from inside the shoot sees no failed request; the pool's labels and taint are on
//! the new Nodes. A drain that a PodDisruptionBudget blocks for good names the pod in the
//! Worker's status and ends at the pool's `machineDrainTimeout`, and the roll-out goes on.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::kubectl;
use e2e::shoot::{CaseShoot, PROJECT_NS, STEP_TIMEOUT};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, LogParams};
use kube::{Client, ResourceExt};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const OLD_IMAGE: &str = "gardener-rs local machine 1.0.0";
const NEW_IMAGE: &str = "gardener-rs local machine 1.1.0";
/// A roll-out of two nodes on two cores, with other cases beside it.
const ROLLOUT_TIMEOUT: Duration = Duration::from_secs(600);

/// The shoot of a case with one pool on machine image 1.0.0 and no automatic updates (the
/// case changes the version itself).
fn pool_shoot(case: &str, octet: u8, size: u32, edit: impl FnOnce(&mut serde_json::Value)) -> CaseShoot {
    CaseShoot::apply_with(case, octet, |s| {
        let w = &mut s["spec"]["provider"]["workers"][0];
        w["minimum"] = size.into();
        w["maximum"] = size.into();
        w["machine"]["image"]["version"] = "1.0.0".into();
        s["spec"]["maintenance"] =
            serde_json::json!({"autoUpdate": {"kubernetesVersion": false, "machineImageVersion": false}});
        edit(s);
    })
}

/// Changes the pool's machine image version, as a user does.
fn set_image_version(s: &CaseShoot, version: &str) {
    let patch = serde_json::json!([
        {"op": "replace", "path": "/spec/provider/workers/0/machine/image/version", "value": version}
    ]);
    kubectl(&["-n", PROJECT_NS, "patch", "shoot", &s.name, "--type=json", "-p", &patch.to_string()]).unwrap();
}

/// The Worker's roll-out status of the shoot's first pool (`status.providerStatus.rollouts[0]`).
async fn rollout_status(s: &CaseShoot) -> serde_json::Value {
    let workers = s.garden().await.list(&e2e::garden::WORKER, Some(&s.seed_ns)).await.unwrap_or_default();
    workers.first().map(|w| w["status"]["providerStatus"]["rollouts"][0].clone()).unwrap_or_default()
}

/// The shoot's Nodes: name → (Ready, OS image).
async fn nodes(shoot: &Client) -> Result<BTreeMap<String, (bool, String)>, String> {
    let api: Api<Node> = Api::all(shoot.clone());
    let list = api.list(&ListParams::default()).await.map_err(|e| e.to_string())?;
    Ok(list
        .items
        .iter()
        .map(|n| {
            let status = n.status.clone().unwrap_or_default();
            let ready = status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True");
            let image = status.node_info.map(|i| i.os_image).unwrap_or_default();
            (n.name_any(), (ready, image))
        })
        .collect())
}

/// Waits for `count` Ready Nodes, all on `image`; returns their names.
async fn wait_nodes(s: &CaseShoot, shoot: &Client, count: usize, image: &str) -> Vec<String> {
    let (names, took) = s
        .wait(&format!("{count} Ready Nodes on {image:?}"), STEP_TIMEOUT, || async {
            let now = nodes(shoot).await?;
            let done = now.len() == count && now.values().all(|(ready, i)| *ready && i == image);
            Ok(done.then(|| now.keys().cloned().collect::<Vec<_>>()))
        })
        .await;
    eprintln!("{count} Ready Nodes on {image:?} after {took:?}: {names:?}");
    names
}

/// `kubectl apply` of `manifest` in the shoot, with its admin kubeconfig.
fn apply_in_shoot(s: &CaseShoot, manifest: &serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let (kubeconfig, file) = (dir.path().join("kubeconfig"), dir.path().join("manifest.json"));
    std::fs::write(&kubeconfig, s.kubeconfig().unwrap()).unwrap();
    std::fs::write(&file, serde_json::to_string(manifest).unwrap()).unwrap();
    e2e::kubectl_with(&kubeconfig, &["apply", "-f", &file.to_string_lossy()]).unwrap();
}

/// The name of a pod of `pods` that runs.
async fn running(pods: &Api<Pod>) -> Result<Option<String>, String> {
    let list = pods.list(&ListParams::default()).await.map_err(|e| e.to_string())?;
    let running = list.items.iter().find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"));
    Ok(running.map(|p| p.name_any()))
}

/// The workload of the first case: two web servers spread over the nodes, a budget that keeps
/// one of them, a Service, and a client on every node (a DaemonSet: drains leave it, so it
/// watches the whole roll-out) that asks the Service every 200 ms and prints each outcome. The
/// web servers stop serving only after their endpoints are gone (a `preStop` pause), as a
/// workload that wants no failed request during node roll-outs does.
fn workload(namespace: &str) -> serde_json::Value {
    let labels = serde_json::json!({"app": "web"});
    let web = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {
                "terminationGracePeriodSeconds": 30,
                "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                    "weight": 100,
                    "podAffinityTerm": {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"},
                }]}},
                "containers": [{
                    "name": "web",
                    "image": "gardener-rs.local/busybox:1.35.0",
                    "command": ["sh", "-c", "mkdir -p /tmp/www && hostname > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"],
                    "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
                    // Serving on until every node's kube-proxy has dropped the endpoint: on two
                    // busy cores that can take several seconds.
                    "lifecycle": {"preStop": {"exec": {"command": ["sleep", "15"]}}},
                }],
            },
        }},
    });
    let budget = serde_json::json!({
        "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
    });
    let service = serde_json::json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]},
    });
    // Bounded: 4500 requests (15 minutes at 200 ms and more), each at most 10 s.
    let client = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "client", "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": "client"}}, "template": {
            "metadata": {"labels": {"app": "client"}},
            "spec": {"tolerations": [{"operator": "Exists"}], "containers": [{
                "name": "client",
                "image": "gardener-rs.local/busybox:1.35.0",
                "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                // A failure names its time, node, wget's complaint and exit code, and ends with
                // `ok=N`: how many answers this client had had before it. 10 s per request: a
                // request to a pod that is gone never completes (SYNs to a dead address), while a
                // slow answer is an answer. The bound is above the resolver's 5 s retry of a
                // lost DNS datagram (glibc's `timeout:5`, which busybox's wget uses): at 5 s a
                // query lost once failed a request that any client with the resolver's defaults
                // would have seen answered. An answer that took 3 s or more is also printed as
                // `slow` (reported, not counted as failed).
                "command": ["sh", "-c", "ok=0; for i in $(seq 1 4500); do t=$(date +%s); if out=$(timeout 10 wget -qO- http://web/ 2>&1 >/dev/null); then echo ok; ok=$((ok+1)); d=$(($(date +%s)-t)); [ $d -lt 3 ] || echo \"slow $(date +%T) node=$NODE ${d}s\"; else echo \"fail $(date +%T) node=$NODE rc=$? ${out:-no output} ok=$ok\"; fi; sleep 0.2; done; sleep 3600"],
            }]},
        }},
    });
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        web, budget, service, client,
    ]})
}

/// The last lines of kube-proxy and the cluster DNS on every node of the shoot: what a failed
/// request during a roll-out is explained by (a node's rules lagging behind the endpoints, a name
/// server going away).
async fn system_logs(shoot: &Client) -> String {
    let pods: Api<Pod> = Api::namespaced(shoot.clone(), "kube-system");
    let mut out = String::new();
    for selector in ["k8s-app=kube-proxy", "k8s-app=kube-dns"] {
        let Ok(list) = pods.list(&ListParams::default().labels(selector)).await else { continue };
        for p in list.items {
            let node = p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
            let params = LogParams { tail_lines: Some(40), timestamps: true, ..LogParams::default() };
            let log = pods.logs(&p.name_any(), &params).await.unwrap_or_else(|e| e.to_string());
            out.push_str(&format!("==> {} on {node} <==\n{log}\n", p.name_any()));
        }
    }
    out
}

/// Every client pod's log as last read, by pod name (a pod whose node is gone keeps its last
/// read).
async fn read_client_logs(pods: &Api<Pod>, logs: &mut BTreeMap<String, String>) {
    let Ok(list) = pods.list(&ListParams::default().labels("app=client")).await else { return };
    for p in list.items {
        if let Ok(text) = pods.logs(&p.name_any(), &LogParams::default()).await {
            logs.insert(p.name_any(), text);
        }
    }
}

/// The lines each client printed after `baseline` (its line count when the roll-out began; a
/// client that started later counts from its first line).
fn since<'a>(logs: &'a BTreeMap<String, String>, baseline: &BTreeMap<String, usize>) -> Vec<&'a str> {
    logs.iter().flat_map(|(pod, log)| log.lines().skip(baseline.get(pod).copied().unwrap_or(0))).collect()
}

#[tokio::test]
async fn a_pool_rolls_to_a_new_image_version_without_a_failed_request() {
    let mut s = pool_shoot("roll", 31, 2, |s| {
        let w = &mut s["spec"]["provider"]["workers"][0];
        w["labels"] = serde_json::json!({"e2e.gardener.cloud/pool": "roll"});
        w["taints"] =
            serde_json::json!([{"key": "e2e.gardener.cloud/rolling", "value": "pool", "effect": "PreferNoSchedule"}]);
    });
    eprintln!("created in {:?}", s.created().await);
    let shoot = s.ready_client().await;
    let old = wait_nodes(&s, &shoot, 2, OLD_IMAGE).await;

    apply_in_shoot(&s, &workload("roll"));
    let pods: Api<Pod> = Api::namespaced(shoot.clone(), "roll");
    let mut logs = BTreeMap::new();
    s.wait("the web servers serve and both clients got answers", STEP_TIMEOUT, || async {
        let mut now = BTreeMap::new();
        read_client_logs(&pods, &mut now).await;
        let answered = now.len() == 2 && now.values().all(|l| l.lines().any(|x| x == "ok"));
        Ok(answered.then_some(()))
    })
    .await;

    read_client_logs(&pods, &mut logs).await;
    let baseline: BTreeMap<String, usize> = logs.iter().map(|(pod, log)| (pod.clone(), log.lines().count())).collect();
    set_image_version(&s, "1.1.0");
    let start = Instant::now();
    let mut events: Vec<String> = Vec::new();
    let mut last_draining = String::new();
    // When each old machine's drain ended (its machine is removed from then on), as the clients'
    // `date +%T` writes it (UTC, the host's clock).
    let mut drain_ended: BTreeMap<String, String> = BTreeMap::new();
    loop {
        read_client_logs(&pods, &mut logs).await;
        let status = rollout_status(&s).await;
        let draining = status["draining"].as_array().map(|d| {
            d.iter().map(|x| x["machine"].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>().join(",")
        });
        let draining = draining.unwrap_or_default();
        if draining != last_draining {
            events.push(format!("{:>4} s: draining [{draining}]", start.elapsed().as_secs()));
            let at = k8s_openapi::jiff::Timestamp::now().strftime("%H:%M:%S").to_string();
            for ended in last_draining.split(',').filter(|m| !m.is_empty() && !draining.split(',').any(|d| d == *m)) {
                drain_ended.insert(ended.to_string(), at.clone());
            }
            last_draining = draining;
        }
        let now = nodes(&shoot).await.unwrap_or_default();
        let replaced = now.len() == 2
            && now.iter().all(|(name, (ready, image))| *ready && image == NEW_IMAGE && !old.contains(name));
        if replaced && status["settled"] == true {
            break;
        }
        assert!(
            start.elapsed() < ROLLOUT_TIMEOUT,
            "the roll-out did not end within {ROLLOUT_TIMEOUT:?}: nodes {now:?}, status {status}\n{}",
            s.diagnosis()
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let took = start.elapsed();
    read_client_logs(&pods, &mut logs).await;
    eprintln!("drain order and times:\n{}", events.join("\n"));
    let lines = since(&logs, &baseline);
    let ok = lines.iter().filter(|l| **l == "ok").count();
    // A client on a new node starts as soon as its node is Ready; until its first answer it
    // measures the node's start (its kube-proxy's first sync), not the roll-out. A client on an
    // old node whose drain has ended goes away with its machine; its requests from then on
    // measure that machine's shutdown. Both are reported but not counted (a drain's end is
    // noticed up to one poll late, which counts more, not less). Every other failure is a
    // request the roll-out dropped.
    let (warm_up, rest): (Vec<&str>, Vec<&str>) =
        lines.iter().filter(|l| l.starts_with("fail")).partition(|l| l.ends_with(" ok=0"));
    let on_removed_machine = |line: &str| {
        let mut words = line.split(' ').skip(1);
        let (time, node) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
        let node = node.trim_start_matches("node=");
        drain_ended.get(node).is_some_and(|ended| time >= ended.as_str())
    };
    let (going, failed): (Vec<&str>, Vec<&str>) = rest.into_iter().partition(|l| on_removed_machine(l));
    let slow: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("slow")).collect();
    eprintln!(
        "rolled two nodes to 1.1.0 in {took:?}; client requests: {ok} answered ({} in 3 s or more: {slow:?}), {} failed; {} before a new node's client had its first answer: {warm_up:?}; {} on a machine being removed after its drain: {going:?}",
        slow.len(),
        failed.len(),
        warm_up.len(),
        going.len()
    );
    assert!(
        failed.is_empty(),
        "requests failed during the roll-out: {failed:?}\ndrain order and times:\n{}\n{}",
        events.join("\n"),
        system_logs(&shoot).await
    );
    // At 200 ms per request, the clients asked throughout the roll-out, not a few times.
    assert!(ok as u64 >= took.as_secs() * 2, "only {ok} answered requests in {took:?}");
    assert!(events.len() >= 2, "each old machine was drained in turn: {events:?}");

    // The pool's metadata on the new Nodes.
    let api: Api<Node> = Api::all(shoot.clone());
    for node in api.list(&ListParams::default()).await.unwrap().items {
        let name = node.name_any();
        assert_eq!(node.labels().get("e2e.gardener.cloud/pool").map(String::as_str), Some("roll"), "{name}");
        assert_eq!(node.labels().get("worker.gardener.cloud/pool").map(String::as_str), Some("local"), "{name}");
        assert_eq!(node.labels().get("topology.kubernetes.io/zone").map(String::as_str), Some("0"), "{name}");
        let spec = node.spec.clone().unwrap_or_default();
        assert!(!spec.unschedulable.unwrap_or(false), "{name} is cordoned");
        let taints = spec.taints.unwrap_or_default();
        assert!(
            taints.iter().any(|t| t.key == "e2e.gardener.cloud/rolling" && t.effect == "PreferNoSchedule"),
            "{name} lacks the pool's taint: {taints:?}"
        );
    }
    eprintln!("deleted in {:?}", s.delete().await);
}

#[tokio::test]
async fn a_drain_blocked_by_a_budget_ends_at_the_drain_timeout_and_the_roll_out_goes_on() {
    const TIMEOUT_SECONDS: u64 = 40;
    let mut s = pool_shoot("drain", 32, 1, |s| {
        s["spec"]["provider"]["workers"][0]["machineControllerManager"] =
            serde_json::json!({"machineDrainTimeout": format!("{TIMEOUT_SECONDS}s")});
    });
    eprintln!("created in {:?}", s.created().await);
    let shoot = s.ready_client().await;
    let old = wait_nodes(&s, &shoot, 1, OLD_IMAGE).await;

    // One replica and a budget that wants it always: no eviction is ever allowed.
    let labels = serde_json::json!({"app": "stuck"});
    apply_in_shoot(
        &s,
        &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "stuck"}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "stuck", "namespace": "stuck"},
             "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
               "spec": {"containers": [{"name": "c", "image": "gardener-rs.local/busybox:1.35.0", "command": ["sleep", "3600"]}]}}}},
            {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "stuck", "namespace": "stuck"},
             "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}},
        ]}),
    );
    let pods: Api<Pod> = Api::namespaced(shoot.clone(), "stuck");
    let (pod, _) = s.wait("the budgeted pod runs", STEP_TIMEOUT, || running(&pods)).await;

    set_image_version(&s, "1.1.0");
    let start = Instant::now();
    let (blocked, _) = s
        .wait("the Worker names the pod that blocks the drain", ROLLOUT_TIMEOUT, || async {
            let status = rollout_status(&s).await;
            let blocked = status["draining"][0]["blockedBy"][0].as_str().unwrap_or_default().to_string();
            Ok(blocked.contains(&format!("stuck/{pod}")).then_some((blocked, status)))
        })
        .await;
    eprintln!("{:>4} s: the Worker says: {}", start.elapsed().as_secs(), blocked.1["draining"]);
    assert!(blocked.0.contains("disruption budget"), "the reason names the budget: {}", blocked.0);

    let (forced, _) = s
        .wait("the drain ends at its timeout and the roll-out completes", ROLLOUT_TIMEOUT, || async {
            let status = rollout_status(&s).await;
            let now = nodes(&shoot).await?;
            let replaced = now.len() == 1 && now.iter().all(|(n, (r, i))| *r && i == NEW_IMAGE && !old.contains(n));
            Ok((replaced && status["settled"] == true).then(|| status["lastForcedDrain"].clone()))
        })
        .await;
    eprintln!("{:>4} s: rolled; the forced drain: {forced}", start.elapsed().as_secs());
    assert_eq!(forced["machine"].as_str(), Some(old[0].as_str()), "{forced}");
    let forced_pods: Vec<&str> = forced["pods"].as_array().unwrap().iter().filter_map(|p| p.as_str()).collect();
    assert!(forced_pods.contains(&format!("stuck/{pod}").as_str()), "the pod deleted at the timeout: {forced}");
    let since = blocked.1["draining"][0]["since"].as_str().unwrap().parse::<k8s_openapi::jiff::Timestamp>().unwrap();
    let at = forced["at"].as_str().unwrap().parse::<k8s_openapi::jiff::Timestamp>().unwrap();
    let waited = at.as_second() - since.as_second();
    assert!(waited >= TIMEOUT_SECONDS as i64, "the drain ended after {waited} s, before its timeout");
    eprintln!("the drain waited {waited} s for the budget (timeout {TIMEOUT_SECONDS} s)");
    // The workload goes on, on the new node.
    s.wait("the budgeted workload runs again", STEP_TIMEOUT, || running(&pods)).await;
    eprintln!("deleted in {:?}", s.delete().await);
}
