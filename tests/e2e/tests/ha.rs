//! Highly available control planes on the local garden's seed (docs/ha.md).
//!
//! The local seed has one node, so a control plane spread over nodes cannot be placed there and
//! admission refuses the field. What one node can show is that the members of an HA etcd, as
//! gardenlet renders them, become one cluster through the seed's real DNS and network: this case
//! runs the three-member `etcd-main` StatefulSet in a namespace of the seed (without its spread,
//! which would keep two members Pending), on certificates from the shoot PKI. Members reach each
//! other by the peer Service's names, accept each other's certificates by the names the seed's
//! DNS gives their addresses, join as learners through the `join` init step, and a member whose
//! volume is deleted is replaced and gets every key back.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::*;
use gardenlet::components::common::{FailureToleranceType, secrets};
use gardenlet::components::{ControlPlaneValues, Images, etcd};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube::api::{Api, DeleteParams, PostParams};
use std::collections::BTreeMap;

const SELECTOR: &str = "app=etcd-statefulset,role=main";

/// The images the local garden's gardenlet runs (hack/local-values/gardenlet.yaml).
fn images() -> Images {
    let path = repo_root().join("hack/local-values/gardenlet.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let values: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    serde_yaml::from_value(values["config"]["images"].clone()).unwrap()
}

fn values(namespace: &str) -> ControlPlaneValues {
    ControlPlaneValues {
        namespace: namespace.into(),
        kubernetes_version: "1.20.2".into(),
        etcd_replicas: 3,
        failure_tolerance: Some(FailureToleranceType::Node),
        images: images(),
        etcd_defragmentation_schedule: "0 0 */3 * *".to_string(),
        // As the local garden's gardenlet asks (controlPlaneRequestsPercent).
        requests_percent: 20,
        ..ControlPlaneValues::default()
    }
}

/// The etcd secrets the pod mounts, from a fresh shoot PKI for `namespace`.
fn pki_secrets(namespace: &str) -> Vec<Secret> {
    let inputs = pki::shoot_set::ShootInputs::new(namespace, "api.ha.e2e.internal", "100.64.0.1".parse().unwrap());
    let configs = pki::shoot_set::shoot_set(&inputs);
    let set = pki::manager::plan(&configs, &pki::SecretSet::new(), std::time::SystemTime::now()).unwrap().secrets;
    let secret = |name: &str, keys: &[&str]| -> Secret {
        let data: BTreeMap<String, String> =
            keys.iter().map(|k| (k.to_string(), set.value(name, k).unwrap().to_string())).collect();
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "stringData": data})).unwrap()
    };
    vec![
        secret(secrets::CA_ETCD_BUNDLE, &[secrets::BUNDLE]),
        secret(secrets::ETCD_SERVER, &[secrets::TLS_CERT, secrets::TLS_KEY]),
    ]
}

/// etcdctl in member `pod`'s etcd container against `endpoint`, with the member's certificate.
fn etcdctl(ns: &str, pod: &str, endpoint: &str, args: &[&str]) -> Result<String, String> {
    let dir = "/srv/kubernetes";
    let mut all = vec![
        "exec".to_string(),
        "-n".into(),
        ns.into(),
        pod.into(),
        "-c".into(),
        "etcd".into(),
        "--".into(),
        "etcdctl".into(),
        format!("--endpoints={endpoint}"),
        format!("--cacert={dir}/{}/{}", secrets::CA_ETCD_BUNDLE, secrets::BUNDLE),
        format!("--cert={dir}/{}/{}", secrets::ETCD_SERVER, secrets::TLS_CERT),
        format!("--key={dir}/{}/{}", secrets::ETCD_SERVER, secrets::TLS_KEY),
        "--command-timeout=5s".into(),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    kubectl(&refs)
}

/// Member `i`'s client URL by its peer Service name.
fn member(ns: &str, i: usize) -> String {
    format!("https://etcd-main-{i}.etcd-main-peer.{ns}.svc:2379")
}

/// `(name, learner)` of every member, sorted, as member 0 sees them.
fn members(ns: &str) -> Result<Vec<(String, bool)>, String> {
    let out = etcdctl(ns, "etcd-main-0", "https://localhost:2379", &["member", "list", "-w", "json"])?;
    let list: serde_json::Value = serde_json::from_str(&out).map_err(|e| format!("{e}: {out}"))?;
    let mut all: Vec<(String, bool)> = list["members"]
        .as_array()
        .ok_or(format!("no members in {out}"))?
        .iter()
        .map(|m| (m["name"].as_str().unwrap_or_default().to_string(), m["isLearner"].as_bool().unwrap_or(false)))
        .collect();
    all.sort();
    Ok(all)
}

/// The `join` init container's termination message of `pod` (empty while there is none, or no
/// pod: the StatefulSet recreates a deleted one).
async fn join_outcome(api: &Api<Pod>, pod: &str) -> String {
    let Ok(pod) = api.get(pod).await else { return String::new() };
    let statuses = pod.status.and_then(|s| s.init_container_statuses).unwrap_or_default();
    statuses
        .iter()
        .find(|s| s.name == "join")
        .and_then(|s| s.state.as_ref()?.terminated.as_ref()?.message.clone())
        .unwrap_or_default()
}

fn voters() -> Vec<(String, bool)> {
    (0..3).map(|i| (format!("etcd-main-{i}"), false)).collect()
}

#[tokio::test]
async fn a_three_member_etcd_forms_over_the_seeds_dns_and_replaces_a_member_whose_volume_is_lost() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "e2e-etcd-ha").await;
    let n = ns.name.as_str();
    // As gardenlet labels a shoot's control-plane namespace: etcd's data-dir step adds
    // capabilities that the baseline level forbids.
    kubectl(&["label", "namespace", n, "pod-security.kubernetes.io/enforce=privileged"]).unwrap();
    let post = PostParams::default();
    for secret in pki_secrets(n) {
        Api::<Secret>::namespaced(client.clone(), n).create(&post, &secret).await.unwrap();
    }
    let v = values(n);
    let services: Api<Service> = Api::namespaced(client.clone(), n);
    services.create(&post, &etcd::client_service(&v)).await.unwrap();
    services.create(&post, &etcd::peer_service(&v)).await.unwrap();
    let mut sts = etcd::statefulset(&v);
    let pod_spec = sts.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
    assert!(pod_spec.topology_spread_constraints.is_some(), "rendered with its spread");
    // One node: the spread would keep two members Pending.
    pod_spec.topology_spread_constraints = None;
    Api::<StatefulSet>::namespaced(client.clone(), n).create(&post, &sts).await.unwrap();

    // All three start at once; the first bootstraps, the others join one after the other.
    ready_pods(&client, &ns, SELECTOR, 3).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), n);
    let first = join_outcome(&pods, "etcd-main-0").await;
    assert!(first.contains("bootstraps"), "etcd-main-0: {first}");
    for i in 1..3 {
        let outcome = join_outcome(&pods, &format!("etcd-main-{i}")).await;
        assert!(outcome.contains("joined as member"), "etcd-main-{i}: {outcome}");
        eprintln!("etcd-main-{i}: {outcome}");
    }
    let list =
        eventually("three voting members", &ns, || async { members(n).map(|m| (m == voters()).then_some(m)) }).await;
    assert_eq!(list, voters());

    // A write through the first member is in the last member's own store (a serializable read
    // answers from it), reached by its peer Service name (the certificate's names, checked by
    // the client).
    etcdctl(n, "etcd-main-0", "https://localhost:2379", &["put", "/e2e/before", "1"]).unwrap();
    local_value(&ns, 2, "/e2e/before", "1").await;

    // Member 2 loses its volume: its claim and its pod are deleted. The new pod gets an empty
    // volume; its join removes the old entry, joins as a learner and is promoted.
    let claims: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> = Api::namespaced(client.clone(), n);
    claims.delete("data-etcd-main-2", &DeleteParams::default()).await.unwrap();
    pods.delete("etcd-main-2", &DeleteParams::default()).await.unwrap();
    etcdctl(n, "etcd-main-0", "https://localhost:2379", &["put", "/e2e/while-gone", "2"]).unwrap();
    let replaced = eventually("etcd-main-2 replaced", &ns, || {
        let pods = pods.clone();
        async move {
            let message = join_outcome(&pods, "etcd-main-2").await;
            Ok(message.contains("replacing").then_some(message))
        }
    })
    .await;
    assert!(replaced.contains("joined as member"), "{replaced}");
    eprintln!("etcd-main-2 after its volume was lost: {replaced}");
    ready_pods(&client, &ns, SELECTOR, 3).await;
    let list = eventually("three voting members after the replacement", &ns, || async {
        members(n).map(|m| (m == voters()).then_some(m))
    })
    .await;
    assert_eq!(list, voters());
    local_value(&ns, 2, "/e2e/before", "1").await;
    local_value(&ns, 2, "/e2e/while-gone", "2").await;
}

/// Waits (bounded) until member `i`'s own store has `key` = `value`.
async fn local_value(ns: &TestNamespace, i: usize, key: &str, value: &str) {
    let n = ns.name.as_str();
    eventually(&format!("{key}={value} in etcd-main-{i}'s store"), ns, || async {
        let read = etcdctl(n, "etcd-main-0", &member(n, i), &["get", key, "--print-value-only", "--consistency=s"])?;
        Ok((read.trim() == value).then_some(()))
    })
    .await;
}
