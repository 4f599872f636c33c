//! The harness itself: clusters are real, independent, cleaned up, and missing binaries are
//! reported with the setup command.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use std::time::{Duration, Instant};
use testenv::{Options, TestEnv};

fn alive(pid: u32) -> bool {
    // A zombie still has a /proc entry; its state letter is Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.split_whitespace().nth(2) != Some("Z"))
        .unwrap_or(false)
}

#[allow(clippy::unwrap_used)] // a test helper: a malformed fixture should fail the test loudly
fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "data": {"k": name}})).unwrap()
}

#[tokio::test]
async fn two_clusters_are_independent() {
    let (a, b) = tokio::join!(TestEnv::start(), TestEnv::start());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_ne!(a.server_url(), b.server_url());
    let (ca, cb) = (a.client().await.unwrap(), b.client().await.unwrap());
    Api::<ConfigMap>::namespaced(ca.clone(), "default")
        .create(&PostParams::default(), &config_map("only-in-a"))
        .await
        .unwrap();
    assert!(Api::<ConfigMap>::namespaced(cb, "default").get_opt("only-in-a").await.unwrap().is_none());
    assert!(Api::<ConfigMap>::namespaced(ca, "default").get_opt("only-in-a").await.unwrap().is_some());
    // The kubeconfig file works for other processes and carries the CA (TLS verification on).
    let text = std::fs::read_to_string(a.kubeconfig_path()).unwrap();
    assert!(text.contains(a.server_url()) && text.contains("certificate-authority-data"));
}

#[tokio::test]
async fn processes_and_directory_are_gone_after_drop() {
    let env = TestEnv::start().await.unwrap();
    let pids = env.pids();
    let dir = env.dir().to_path_buf();
    assert!(pids.iter().all(|p| alive(*p)));
    drop(env);
    assert!(pids.iter().all(|p| !alive(*p)), "processes survived drop: {pids:?}");
    assert!(!dir.exists(), "{} survived drop", dir.display());
}

#[tokio::test]
async fn processes_are_cleaned_up_when_a_test_panics() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let result = tokio::spawn(async move {
        let env = TestEnv::start().await.unwrap();
        tx.send(env.pids()).unwrap();
        panic!("deliberate panic while the environment is running");
    })
    .await;
    assert!(result.unwrap_err().is_panic());
    let pids = rx.await.unwrap();
    assert!(pids.iter().all(|p| !alive(*p)), "processes survived the panic: {pids:?}");
}

#[tokio::test]
async fn controller_manager_finishes_namespace_deletion() {
    let env = TestEnv::start_with(Options { controller_manager: true, ..Default::default() }).await.unwrap();
    assert!(env.has_controller_manager());
    let client = env.client().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "doomed"}})).unwrap();
    namespaces.create(&PostParams::default(), &ns).await.unwrap();
    Api::<ConfigMap>::namespaced(client, "doomed")
        .create(&PostParams::default(), &config_map("content"))
        .await
        .unwrap();
    namespaces.delete("doomed", &DeleteParams::default()).await.unwrap();
    let started = Instant::now();
    // Without kube-controller-manager the namespace would stay Terminating forever.
    while namespaces.get_opt("doomed").await.unwrap().is_some() {
        assert!(started.elapsed() < Duration::from_secs(60), "namespace still present after 60 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn missing_binaries_name_the_setup_command() {
    let empty = tempfile::tempdir().unwrap();
    let err = testenv::Assets::from_dir(empty.path()).unwrap_err().to_string();
    assert!(err.contains("etcd not found") && err.contains("hack/setup-envtest.sh"), "{err}");
}

/// A CRD of this harness's own (not the system's), so the test does not depend on `api`.
#[allow(clippy::unwrap_used)] // a test helper: a malformed fixture should fail the test loudly
fn widget_crd() -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "widgets.snapshot.testenv.example"},
        "spec": {
            "group": "snapshot.testenv.example",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn a_second_environment_with_the_same_crds_starts_from_the_snapshot_and_serves_them() {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let options = Options { crds: vec![widget_crd()], ..Default::default() };
    // The first one installs the CRD (and keeps the snapshot) unless an earlier run left it.
    let first = TestEnv::start_with(options.clone()).await.unwrap();
    drop(first);
    let env = TestEnv::start_with(options).await.unwrap();
    assert!(env.started_from_snapshot(), "the second environment installed the CRDs again");
    let client = env.client().await.unwrap();
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("snapshot.testenv.example", "v1", "Widget"));
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let widget: DynamicObject =
        serde_json::from_value(serde_json::json!({"apiVersion": "snapshot.testenv.example/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 3}}))
        .unwrap();
    widgets.create(&PostParams::default(), &widget).await.unwrap();
    assert_eq!(widgets.get("w").await.unwrap().data["spec"]["size"], 3);
    // What the first API server stored about its PKI (the client CA in the authentication
    // ConfigMap) is replaced by this one's: another environment's CA would be trusted otherwise.
    let config_maps: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    let started = Instant::now();
    loop {
        let current = config_maps.get_opt("extension-apiserver-authentication").await.unwrap();
        let ca = current.and_then(|c| c.data).and_then(|d| d.get("client-ca-file").cloned()).unwrap_or_default();
        if ca.trim() == env.ca_pem().trim() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the authentication ConfigMap holds another CA:\n{ca}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether the API server serves `group/version` (its discovery document answers).
#[allow(clippy::unwrap_used)] // a test helper: a malformed request should fail the test loudly
async fn serves(client: &kube::Client, group_version: &str) -> bool {
    let request = http::Request::get(format!("/apis/{group_version}")).body(Vec::new()).unwrap();
    client.request_text(request).await.is_ok()
}

#[tokio::test]
async fn beta_versions_with_a_ga_version_are_not_served_and_a_test_can_serve_one_again() {
    let env = TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    assert!(!serves(&client, "rbac.authorization.k8s.io/v1beta1").await);
    assert!(!serves(&client, "extensions/v1beta1").await);
    assert!(serves(&client, "rbac.authorization.k8s.io/v1").await);
    // PodDisruptionBudget has no other version in 1.20.
    assert!(serves(&client, "policy/v1beta1").await);
    drop(env);

    let options =
        Options { extra_apiserver_args: vec!["--runtime-config=batch/v1beta1=true".into()], ..Options::default() };
    let env = TestEnv::start_with(options).await.unwrap();
    let client = env.client().await.unwrap();
    assert!(serves(&client, "batch/v1beta1").await, "a test's own --runtime-config adds to the default");
    assert!(!serves(&client, "extensions/v1beta1").await);
}

/// The OpenAPI document in its protobuf form (what kubectl's validation and `explain` read): its
/// ETag and body.
#[allow(clippy::unwrap_used)] // a test helper: a malformed request should fail the test loudly
async fn openapi_protobuf(client: &kube::Client) -> (String, Vec<u8>) {
    use http_body_util::BodyExt;
    let request = http::Request::get("/openapi/v2")
        .header(http::header::ACCEPT, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::OK, "GET /openapi/v2 as protobuf");
    let etag = response.headers().get(http::header::ETAG).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let body = response.into_body().collect().await.unwrap().to_bytes().to_vec();
    (etag, body)
}

fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// kube-apiserver is built with a patch that builds the protobuf form of its OpenAPI document on
/// the first request after an update instead of at every update
/// (`hack/patches/kubernetes-1.20.2-lazy-openapi-protobuf.patch`): the form must still follow
/// every change, with a new ETag, and stay the same between changes.
#[tokio::test]
async fn the_openapi_protobuf_form_follows_a_new_crd() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let env = TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    let (etag, before) = openapi_protobuf(&client).await;
    assert!(holds(&before, b"io.k8s.api.core.v1.Pod"), "the document lacks the built-in kinds");
    assert!(!holds(&before, b"snapshot.testenv.example"), "the CRD is in the document before it was created");

    Api::<CustomResourceDefinition>::all(client.clone()).create(&PostParams::default(), &widget_crd()).await.unwrap();
    let started = Instant::now();
    let (new_etag, after) = loop {
        let (new_etag, after) = openapi_protobuf(&client).await;
        if holds(&after, b"snapshot.testenv.example") {
            break (new_etag, after);
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the protobuf form lacks the new CRD after 60 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_ne!(new_etag, etag, "the protobuf form changed and kept its ETag");
    assert!(holds(&after, b"io.k8s.api.core.v1.Pod"));
    let (again_etag, again) = openapi_protobuf(&client).await;
    assert_eq!((again_etag, again), (new_etag, after), "two requests without a change in between differ");
}
