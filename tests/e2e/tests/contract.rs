//! The Shoot contract on the local garden (docs/shoot-fields.md): a shoot the system cannot build
//! is refused when it is applied, with the field and the reason, instead of being accepted and
//! left hanging; a shoot that waits for an extension nobody serves fails within a minute with an
//! error that says so, and is then deleted within a minute.
//!
//! The user's view throughout: `kubectl apply` of a manifest and what kubectl prints.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::shoot::{CaseShoot, PROJECT_NS, STEP_TIMEOUT, manifest};
use e2e::{kubectl, try_apply};
use std::time::Instant;

/// Each manifest is refused by `kubectl apply`, and the error names the field and what is wrong.
#[tokio::test]
async fn a_shoot_the_system_cannot_build_is_refused_naming_the_field() {
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&str, Edit, &[&str]); 6] = [
        // Gardener's own provider-local example uses calico, which no extension serves here.
        (
            "calico",
            |s| s["spec"]["networking"]["type"] = "calico".into(),
            &["spec.networking.type", "\"calico\"", "Network"],
        ),
        (
            "os",
            |s| s["spec"]["provider"]["workers"][0]["machine"]["image"]["name"] = "gardenlinux".into(),
            &["spec.provider.workers[0].machine.image.name", "gardenlinux"],
        ),
        // A kubelet setting Kubernetes 1.20 does not have (the user saw it accepted and ignored).
        (
            "seccomp",
            |s| s["spec"]["kubernetes"]["kubelet"] = serde_json::json!({"seccompDefault": true}),
            &["spec.kubernetes.kubelet.seccompDefault", "1.25"],
        ),
        (
            "ipvs",
            |s| s["spec"]["kubernetes"]["kubeProxy"] = serde_json::json!({"mode": "IPVS"}),
            &["spec.kubernetes.kubeProxy.mode", "IPVS"],
        ),
        (
            "alerting",
            |s| s["spec"]["monitoring"] = serde_json::json!({"alerting": {"emailReceivers": ["ops@example.com"]}}),
            &["spec.monitoring", "Forbidden"],
        ),
        (
            "unknown",
            |s| s["spec"]["kubernetes"]["kubeAPIServer"] = serde_json::json!({"someFutureSetting": 3}),
            &["spec.kubernetes.kubeAPIServer.someFutureSetting", "not a field this system knows"],
        ),
    ];
    for (case, edit, expected) in cases {
        let shoot = manifest(&format!("refused-{case}"), 29, edit);
        let name = shoot["metadata"]["name"].as_str().unwrap().to_string();
        let outcome = try_apply(PROJECT_NS, &serde_yaml::to_string(&shoot).unwrap());
        // Nothing may be left of a refused shoot, whatever the outcome.
        let _ = kubectl(&["-n", PROJECT_NS, "delete", "shoot", &name, "--ignore-not-found", "--wait=false"]);
        let err = match outcome {
            Ok(out) => panic!("case {case}: the shoot was accepted: {out}"),
            Err(e) => e,
        };
        for part in expected {
            assert!(err.contains(part), "case {case}: the refusal does not name {part:?}: {err}");
        }
        println!("case {case}: refused: {}", err.trim());
    }
}

/// A workerless shoot of the case `case` (node range and service range from `octet`) asking for
/// the Extension `type_`, applied while a ControllerRegistration (selecting no seed, so it is
/// never installed) makes admission accept the type.
fn workerless_with_unserved_extension(case: &str, octet: u8, type_: &str) -> CaseShoot {
    let registration = format!(
        "apiVersion: core.gardener.cloud/v1beta1\nkind: ControllerRegistration\nmetadata:\n  name: {type_}\nspec:\n  resources:\n  - kind: Extension\n    type: {type_}\n    workerlessSupported: true\n  deployment:\n    seedSelector:\n      matchLabels:\n        e2e.gardener.cloud/no-seed: \"true\"\n"
    );
    e2e::apply("default", &registration);
    CaseShoot::apply_with(case, octet, |s| {
        s["spec"]["provider"]["workers"] = serde_json::json!([]);
        s["spec"]["networking"] = serde_json::json!({"services": format!("10.{}.0.0/16", octet + 105)});
        s["spec"]["extensions"] = serde_json::json!([{"type": type_}]);
    })
}

/// A workerless shoot asks for an Extension whose only registration (selecting no seed, so it is
/// never installed) is removed right after the shoot is accepted: the wait for it ends within a minute with an error naming the kind,
/// the type and the missing registration (a non-retryable configuration problem, so the shoot
/// ends `Failed`), and the deletion then completes within a minute.
#[tokio::test]
async fn a_shoot_whose_extension_nobody_serves_fails_within_a_minute_and_is_deleted() {
    const TYPE: &str = "e2e-unserved";
    let mut s = workerless_with_unserved_extension("unserved", 28, TYPE);
    // Admission accepted the type while it was registered; now nobody serves it.
    kubectl(&["delete", "controllerregistration", TYPE, "--wait=true"]).unwrap();
    let applied = Instant::now();
    let (description, _) = s
        .wait("the creation fails naming the unserved extension", STEP_TIMEOUT, || async {
            let op = s.field("{.status.lastOperation.state}").await?;
            let description = s.field("{.status.lastOperation.description}").await?;
            Ok((op == "Failed").then_some(description))
        })
        .await;
    let failed_after = applied.elapsed();
    for part in ["Extension", TYPE, "no ControllerRegistration serves"] {
        assert!(description.contains(part), "the failure does not name {part:?}: {description}");
    }
    let codes = s.field("{.status.lastErrors[*].codes}").await.unwrap();
    assert!(codes.contains("ERR_CONFIGURATION_PROBLEM"), "error codes: {codes}");
    let deleted_in = s.delete().await;
    println!("failed {failed_after:?} after the registration was removed; deleted in {deleted_in:?}");
}

/// Gardener's force deletion: a workerless shoot fails on an Extension nobody serves (as above),
/// and someone else's finalizer holds that Extension object, so the normal deletion cannot
/// finish. Confirming `confirmation.gardener.cloud/force-deletion` (admission allows it: the
/// shoot is being deleted with ERR_CONFIGURATION_PROBLEM) cancels the running deletion, and the
/// force-deletion removes the shoot, its namespaces in the seed and its ShootState.
#[tokio::test]
async fn a_stuck_deletion_is_forced_and_leaves_nothing_behind() {
    const TYPE: &str = "e2e-forced";
    let mut s = workerless_with_unserved_extension("forced", 29, TYPE);
    kubectl(&["delete", "controllerregistration", TYPE, "--wait=true"]).unwrap();
    s.wait("the creation fails on the unserved extension", STEP_TIMEOUT, || async {
        Ok((s.field("{.status.lastOperation.state}").await? == "Failed").then_some(()))
    })
    .await;
    // Someone else's finalizer holds the Extension object: the normal deletion waits for it.
    let (extension, _) = s
        .wait("the Extension object exists", STEP_TIMEOUT, || async {
            let name = kubectl(&[
                "-n",
                &s.seed_ns,
                "get",
                "extensions.extensions.gardener.cloud",
                "-o",
                "jsonpath={.items[0].metadata.name}",
            ])?;
            Ok((!name.trim().is_empty()).then(|| name.trim().to_string()))
        })
        .await;
    let held = r#"{"metadata":{"finalizers":["e2e.gardener.cloud/held"]}}"#;
    kubectl(&[
        "-n",
        &s.seed_ns,
        "patch",
        "extensions.extensions.gardener.cloud",
        &extension,
        "--type=merge",
        "-p",
        held,
    ])
    .unwrap();
    s.start_deletion();
    s.wait("the deletion waits for the held Extension", STEP_TIMEOUT, || async {
        let op = s.field("{.status.lastOperation.type}").await?;
        let deleting = kubectl(&[
            "-n",
            &s.seed_ns,
            "get",
            "extensions.extensions.gardener.cloud",
            &extension,
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ])?;
        Ok((op == "Delete" && !deleting.trim().is_empty()).then_some(()))
    })
    .await;
    let forced = std::time::Instant::now();
    kubectl(&["-n", PROJECT_NS, "annotate", "shoot", &s.name, "confirmation.gardener.cloud/force-deletion=true"])
        .unwrap();
    let gone = s.wait_gone().await;
    let state = kubectl(&["-n", PROJECT_NS, "get", "shootstate", &s.name, "-o", "name"]);
    assert!(state.as_ref().is_err_and(|e| e.contains("NotFound")), "the ShootState is left: {state:?}");
    println!("force-deleted {:?} after the confirmation (the shoot went after {gone:?})", forced.elapsed());
}

/// Runs a busybox web server pinned to `node_b` behind the Service `cross`, and two clients,
/// pinned to `node_a` and `node_b`: the one on `node_a` fetches from the server's pod address,
/// both fetch from `http://cross/` (the cluster DNS, then kube-proxy). Each fetch is tried for at
/// most 30 times 4 s (bounded) and fails with what it last saw. Returns when both succeeded, with their
/// logs.
async fn cross_node_traffic(
    s: &CaseShoot,
    kubeconfig: &std::path::Path,
    node_a: &str,
    node_b: &str,
) -> (std::time::Duration, Vec<String>) {
    const IMAGE: &str = "gardener-rs.local/busybox:1.35.0";
    let manifests = |docs: serde_json::Value| {
        let path = kubeconfig.with_file_name("cross-node.yaml");
        std::fs::write(&path, serde_json::to_string(&docs).unwrap()).unwrap();
        e2e::kubectl_with(kubeconfig, &["apply", "-f", &path.display().to_string()]).unwrap();
    };
    manifests(serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cross-web", "namespace": "default", "labels": {"app": "cross-web"}},
         "spec": {"nodeName": node_b, "containers": [{"name": "web", "image": IMAGE,
            "command": ["sh", "-c", "mkdir -p /tmp/www && echo served on the other node > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"],
            "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "cross", "namespace": "default"},
         "spec": {"selector": {"app": "cross-web"}, "ports": [{"port": 80, "targetPort": 8080}]}},
    ]}));
    let (ip, _) = s
        .wait("pod cross-web has an address", e2e::shoot::STEP_TIMEOUT, || async {
            let ip = e2e::kubectl_with(
                kubeconfig,
                &["get", "pod", "cross-web", "-n", "default", "-o", "jsonpath={.status.podIP}"],
            )?;
            Ok((!ip.trim().is_empty()).then(|| ip.trim().to_string()))
        })
        .await;
    let fetch = |what: &str, url: &str| {
        format!(
            r#"ok=''; for i in $(seq 1 30); do a=$(timeout 2 wget -qO- {url} 2>&1) && {{ echo "{what}: $a"; ok=1; break; }}; sleep 2; done; [ -n "$ok" ] || {{ echo "{what}: no answer from {url}: $a"; exit 1; }}"#
        )
    };
    let client = |name: &str, node: &str, script: String| {
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "restartPolicy": "Never",
                     "containers": [{"name": "client", "image": IMAGE, "command": ["sh", "-c", script]}]}})
    };
    let on_a = format!(
        "{} && {}",
        fetch("pod address", &format!("http://{ip}:8080/")),
        fetch("service name", "http://cross/")
    );
    manifests(serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        client("cross-client-a", node_a, on_a),
        client("cross-client-b", node_b, fetch("service name", "http://cross/")),
    ]}));
    let mut logs = Vec::new();
    let mut took = std::time::Duration::ZERO;
    for name in ["cross-client-a", "cross-client-b"] {
        let (phase, after) = s
            .wait(&format!("pod {name} completes"), e2e::shoot::STEP_TIMEOUT, || async {
                let phase = e2e::kubectl_with(
                    kubeconfig,
                    &["get", "pod", name, "-n", "default", "-o", "jsonpath={.status.phase}"],
                )?;
                Ok(matches!(phase.trim(), "Succeeded" | "Failed").then(|| phase.trim().to_string()))
            })
            .await;
        let log = e2e::kubectl_with(kubeconfig, &["logs", name, "-n", "default"]).unwrap_or_default();
        assert_eq!(phase, "Succeeded", "pod {name}: {log}\n{}", s.diagnosis());
        logs.push(log.trim().to_string());
        took = took.max(after);
    }
    (took, logs)
}

/// The container args of the Deployment `name` in the shoot's seed namespace.
fn deployment_args(s: &CaseShoot, name: &str) -> Vec<String> {
    // Some components carry their flags in `command`.
    for field in ["args", "command"] {
        let path = format!("jsonpath={{.spec.template.spec.containers[0].{field}}}");
        let value = kubectl(&["-n", &s.seed_ns, "get", "deployment", name, "-o", &path]).unwrap();
        let parsed: Vec<String> = serde_json::from_str(&value).unwrap_or_default();
        if !parsed.is_empty() {
            return parsed;
        }
    }
    Vec::new()
}

const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources:\n  - group: \"\"\n    resources: [\"configmaps\"]\n- level: None\n";

/// A shoot that sets kubelet settings at shoot level (pool `a` inherits them) and at pool level
/// (pool `b`: its own replace the shoot's, as in Gardener), pool labels and annotations, an audit
/// policy, OIDC, kube-controller-manager and kube-scheduler settings, becomes Ready; every
/// setting is then read where it takes effect: the kubelets' `/configz`, the Nodes, the control
/// plane's flags and files, and the audit events of a ConfigMap the test creates.
#[tokio::test]
async fn settings_reach_the_nodes_and_the_control_plane() {
    let audit_config_map = "e2e-settings-audit-policy";
    e2e::apply(
        PROJECT_NS,
        &serde_yaml::to_string(&serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": audit_config_map},
            "data": {"policy": AUDIT_POLICY},
        }))
        .unwrap(),
    );
    let mut s = CaseShoot::apply_with("settings", 27, |s| {
        let pool = s["spec"]["provider"]["workers"][0].clone();
        let mut a = pool.clone();
        a["name"] = "a".into();
        a["labels"] = serde_json::json!({"e2e.gardener.cloud/pool": "a"});
        a["annotations"] = serde_json::json!({"e2e.gardener.cloud/note": "from the pool"});
        let mut b = pool;
        b["name"] = "b".into();
        b["kubernetes"] = serde_json::json!({"kubelet": {"maxPods": 60, "registryPullQPS": 9}});
        s["spec"]["provider"]["workers"] = serde_json::json!([a, b]);
        s["spec"]["kubernetes"]["kubelet"] = serde_json::json!({
            "maxPods": 90, "registryPullQPS": 7, "registryBurst": 14,
            "streamingConnectionIdleTimeout": "5m", "containerLogMaxSize": "20Mi", "podPidsLimit": 1000,
        });
        s["spec"]["kubernetes"]["kubeAPIServer"] = serde_json::json!({
            "auditConfig": {"auditPolicy": {"configMapRef": {"name": audit_config_map}}},
            "oidcConfig": {"issuerURL": "https://oidc.e2e.invalid", "clientID": "e2e", "usernameClaim": "email"},
            "eventTTL": "2h",
        });
        s["spec"]["kubernetes"]["kubeControllerManager"] =
            serde_json::json!({"nodeMonitorGracePeriod": "50s", "horizontalPodAutoscaler": {"syncPeriod": "20s"}});
        s["spec"]["kubernetes"]["kubeScheduler"] = serde_json::json!({"profile": "bin-packing"});
    });
    let created = s.created().await;
    println!("created in {created:?}");

    // The control plane's flags and files.
    let apiserver = deployment_args(&s, "kube-apiserver");
    for flag in [
        "--oidc-issuer-url=https://oidc.e2e.invalid",
        "--oidc-client-id=e2e",
        "--oidc-username-claim=email",
        "--event-ttl=2h",
        "--audit-log-path=-",
    ] {
        assert!(apiserver.iter().any(|a| a == flag), "kube-apiserver lacks {flag}: {apiserver:?}");
    }
    assert!(apiserver.iter().any(|a| a.starts_with("--audit-policy-file=")), "{apiserver:?}");
    let kcm = deployment_args(&s, "kube-controller-manager");
    for flag in ["--node-monitor-grace-period=50s", "--horizontal-pod-autoscaler-sync-period=20s"] {
        assert!(kcm.iter().any(|a| a == flag), "kube-controller-manager lacks {flag}: {kcm:?}");
    }
    let scheduler_config =
        kubectl(&["-n", &s.seed_ns, "get", "configmap", "kube-scheduler-config", "-o", "jsonpath={.data}"]).unwrap();
    assert!(scheduler_config.contains("NodeResourcesMostAllocated"), "{scheduler_config}");

    // The nodes: each pool's kubelet runs with its settings.
    s.ready_client().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, s.kubeconfig().unwrap()).unwrap();
    let node_of = |pool: &str| {
        let selector = format!("worker.gardener.cloud/pool={pool}");
        let kubeconfig = kubeconfig.clone();
        move || {
            let kubeconfig = kubeconfig.clone();
            let selector = selector.clone();
            async move {
                let name = e2e::kubectl_with(
                    &kubeconfig,
                    &["get", "nodes", "-l", &selector, "-o", "jsonpath={.items[0].metadata.name}"],
                )?;
                Ok((!name.trim().is_empty()).then(|| name.trim().to_string()))
            }
        }
    };
    let (node_a, _) = s.wait("pool a has a node", e2e::shoot::STEP_TIMEOUT, node_of("a")).await;
    let (node_b, _) = s.wait("pool b has a node", e2e::shoot::STEP_TIMEOUT, node_of("b")).await;
    let configz = |node: &str| -> serde_json::Value {
        let raw =
            e2e::kubectl_with(&kubeconfig, &["get", "--raw", &format!("/api/v1/nodes/{node}/proxy/configz")]).unwrap();
        serde_json::from_str::<serde_json::Value>(&raw).unwrap()["kubeletconfig"].clone()
    };
    let a = configz(&node_a);
    for (key, want) in [
        ("maxPods", serde_json::json!(90)),
        ("registryPullQPS", serde_json::json!(7)),
        ("registryBurst", serde_json::json!(14)),
        ("streamingConnectionIdleTimeout", serde_json::json!("5m0s")),
        ("containerLogMaxSize", serde_json::json!("20Mi")),
        ("podPidsLimit", serde_json::json!(1000)),
    ] {
        assert_eq!(a[key], want, "pool a's kubelet ({node_a}): {key}; configz: {a}");
    }
    let b = configz(&node_b);
    assert_eq!(b["maxPods"], serde_json::json!(60), "pool b's kubelet ({node_b}); configz: {b}");
    assert_eq!(b["registryPullQPS"], serde_json::json!(9), "pool b's kubelet ({node_b}); configz: {b}");
    assert_ne!(b["registryBurst"], serde_json::json!(14), "pool b's own settings replace the shoot's: {b}");
    let capacity =
        e2e::kubectl_with(&kubeconfig, &["get", "node", &node_a, "-o", "jsonpath={.status.capacity.pods}"]).unwrap();
    assert_eq!(capacity.trim(), "90", "node {node_a}'s pod capacity");

    // The pool's labels, annotations and zone on its Node.
    let (labels, _) = s
        .wait("node a carries its pool's labels", e2e::shoot::STEP_TIMEOUT, || async {
            let meta = e2e::kubectl_with(&kubeconfig, &["get", "node", &node_a, "-o", "jsonpath={.metadata}"])?;
            let meta: serde_json::Value = serde_json::from_str(&meta).map_err(|e| e.to_string())?;
            let labelled = meta["labels"]["e2e.gardener.cloud/pool"] == "a"
                && meta["labels"]["topology.kubernetes.io/zone"] == "0"
                && meta["annotations"]["e2e.gardener.cloud/note"] == "from the pool";
            Ok(labelled.then_some(meta))
        })
        .await;
    println!("node {node_a}: {}", labels["labels"]);

    // The pod network spans the nodes (the Network's pod routes agent): a pod on node a reaches
    // a pod on node b by its address, and pods on both nodes resolve and reach a Service by
    // name, whichever node the cluster DNS runs on.
    let (took, logs) = cross_node_traffic(&s, &kubeconfig, &node_a, &node_b).await;
    println!("pods on {node_a} and {node_b} reached each other and the Service after {took:?}: {logs:?}");

    // Audit events of the shoot's API server.
    // A read names the object in its URL, so its event carries the name whatever the verb.
    e2e::kubectl_with(&kubeconfig, &["create", "configmap", "e2e-audited", "-n", "default"]).unwrap();
    e2e::kubectl_with(&kubeconfig, &["get", "configmap", "e2e-audited", "-n", "default"]).unwrap();
    s.wait("the audit log records the ConfigMap's creation and read", e2e::shoot::STEP_TIMEOUT, || async {
        let log = kubectl(&["-n", &s.seed_ns, "logs", "deploy/kube-apiserver", "--since=10m"])?;
        let found = log.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).any(|e| {
            e["kind"] == "Event"
                && e["verb"] == "get"
                && e["objectRef"]["resource"] == "configmaps"
                && e["objectRef"]["name"] == "e2e-audited"
        });
        Ok(found.then_some(()))
    })
    .await;

    let deleted = s.delete().await;
    kubectl(&["-n", PROJECT_NS, "delete", "configmap", audit_config_map, "--ignore-not-found"]).unwrap();
    println!("deleted in {deleted:?}");
}
