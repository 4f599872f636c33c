//! What gardenlet's chart lets it do with pods in its seed: list, watch and delete them (a
//! migration waits for the control plane's pods; the care controller restarts kube-apiserver
//! after an etcd restore), and nothing else: creating pods, exec into them and reading their logs
//! are refused.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use testenv::TestEnv;

const CONFIG: &str = "seed:\n  name: local\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n";

fn pod() -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "kube-apiserver-0"},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.2"}]},
    }))
    .unwrap()
}

async fn allowed(client: &kube::Client, verb: &str, subresource: &str) -> bool {
    let review: SelfSubjectAccessReview = serde_json::from_value(serde_json::json!({
        "spec": {"resourceAttributes": {"namespace": "shoot--dev--a", "verb": verb, "resource": "pods", "subresource": subresource}}
    }))
    .unwrap();
    let answer =
        Api::<SelfSubjectAccessReview>::all(client.clone()).create(&PostParams::default(), &review).await.unwrap();
    answer.status.is_some_and(|s| s.allowed)
}

#[tokio::test]
async fn gardenlet_may_delete_control_plane_pods_but_not_create_exec_or_read_logs() {
    let env = TestEnv::start().await.unwrap();
    let admin = env.client().await.unwrap();
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "shoot--dev--a"}})).unwrap();
    Api::<Namespace>::all(admin.clone()).create(&PostParams::default(), &ns).await.unwrap();
    Api::<Pod>::namespaced(admin, "shoot--dev--a").create(&PostParams::default(), &pod()).await.unwrap();
    let gardenlet = support::chart::gardenlet_client(&env, CONFIG).await;
    let pods: Api<Pod> = Api::namespaced(gardenlet.clone(), "shoot--dev--a");

    let mut other = pod();
    other.metadata.name = Some("created-by-gardenlet".into());
    match pods.create(&PostParams::default(), &other).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 403, "creating a pod is refused: {s:?}"),
        other => panic!("gardenlet created a pod: {other:?}"),
    }
    assert!(!allowed(&gardenlet, "create", "exec").await, "exec into pods is refused");
    assert!(!allowed(&gardenlet, "get", "log").await, "reading pods' logs is refused");
    assert!(!allowed(&gardenlet, "update", "").await, "changing a pod is refused");
    pods.delete("kube-apiserver-0", &DeleteParams::default()).await.expect("deleting a pod is allowed");
}
