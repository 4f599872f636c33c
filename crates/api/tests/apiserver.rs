//! The API against a real kube-apiserver: every CRD is accepted and Established, every kind
//! round-trips through create/read/status/list/delete without losing a field, the reference
//! system's example manifests apply, invalid objects are refused with a usable message, and
//! `kubectl get` shows the intended columns.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use support::*;
use testenv::TestEnv;

async fn env_with_crds() -> (TestEnv, kube::Client) {
    let env = TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..Default::default() })
        .await
        .unwrap_or_else(|e| panic!("starting the test control plane: {e}"));
    let client = env.client().await.unwrap();
    for ns in ["garden-dev", "shoot--dev--demo"] {
        ensure_namespace(&client, ns).await;
    }
    (env, client)
}

/// Creates the object, reads it back, patches its status, lists it and deletes it; returns the
/// problems found (empty when the kind behaves).
async fn exercise(client: &kube::Client, name: &str, fixture: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let (api, _) = dynamic_api(client, fixture);
    let (create, status) = split_fixture(fixture);
    let obj: DynamicObject = serde_json::from_value(create.clone()).unwrap();
    let object_name = obj.metadata.name.clone().unwrap();
    if let Err(e) = api.create(&PostParams::default(), &obj).await {
        return vec![format!("{name}: create refused: {e}")];
    }
    let read = serde_json::to_value(api.get(&object_name).await.unwrap()).unwrap();
    differences(&create, &read, name, &mut problems);

    if let Some(status) = status {
        let patch = json!({ "status": status });
        match api.patch_status(&object_name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Err(e) => problems.push(format!("{name}: status patch refused: {e}")),
            Ok(after) => {
                let after = serde_json::to_value(after).unwrap();
                differences(&status, &after["status"], &format!("{name} status"), &mut problems);
                // The status subresource must not have touched the spec.
                differences(&create, &after, &format!("{name} after status patch"), &mut problems);
            }
        }
    }

    let listed = api.list(&ListParams::default()).await.unwrap();
    if !listed.items.iter().any(|o| o.metadata.name.as_deref() == Some(&object_name)) {
        problems.push(format!("{name}: not listed"));
    }
    api.delete(&object_name, &DeleteParams::default()).await.unwrap();
    match api.get_opt(&object_name).await.unwrap() {
        None => {}
        Some(o) => {
            problems.push(format!("{name}: still present after delete (finalizers {:?})", o.metadata.finalizers))
        }
    }
    problems
}

#[tokio::test]
async fn every_crd_is_established_with_the_reference_scope() {
    let (_env, client) = env_with_crds().await;
    let crds = api::crds::all();
    assert_eq!(crds.len(), 33, "one CRD per kind");
    let cluster_scoped = [
        ("core.gardener.cloud", "CloudProfile"),
        ("core.gardener.cloud", "Project"),
        ("core.gardener.cloud", "Seed"),
        ("core.gardener.cloud", "ControllerRegistration"),
        ("core.gardener.cloud", "ControllerDeployment"),
        ("core.gardener.cloud", "ControllerInstallation"),
        ("core.gardener.cloud", "ExposureClass"),
        ("core.gardener.cloud", "BackupBucket"),
        ("extensions.gardener.cloud", "BackupBucket"),
        ("extensions.gardener.cloud", "BackupEntry"),
        ("extensions.gardener.cloud", "Cluster"),
    ];
    let api: kube::Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        kube::Api::all(client.clone());
    for crd in &crds {
        let name = crd.metadata.name.clone().unwrap();
        let served = api.get(&name).await.unwrap();
        assert!(testenv::is_established(&served), "{name} is not Established");
        let want = if cluster_scoped.contains(&(crd.spec.group.as_str(), crd.spec.names.kind.as_str())) {
            "Cluster"
        } else {
            "Namespaced"
        };
        assert_eq!(served.spec.scope, want, "scope of {name}");
    }
}

#[tokio::test]
async fn every_kind_round_trips_through_the_apiserver() {
    let (_env, client) = env_with_crds().await;
    let mut kinds = std::collections::BTreeSet::new();
    let mut problems = Vec::new();
    for sub in ["core", "extensions", "seedmanagement", "operations", "authentication", "security"] {
        for (name, fixture) in load_fixtures(sub) {
            kinds.insert(format!("{} {}", fixture["apiVersion"].as_str().unwrap(), fixture["kind"].as_str().unwrap()));
            problems.extend(exercise(&client, &name, &fixture).await);
        }
    }
    assert_eq!(kinds.len(), 33, "a fixture per kind; have {kinds:?}");
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[tokio::test]
async fn reference_example_manifests_apply_and_read_back() {
    let (_env, client) = env_with_crds().await;
    let examples = load_fixtures("seed-examples");
    let kinds: std::collections::BTreeSet<&str> = examples.iter().map(|(_, v)| v["kind"].as_str().unwrap()).collect();
    for kind in ["CloudProfile", "Seed", "Project", "SecretBinding", "Quota", "BackupBucket", "BackupEntry", "Shoot"] {
        assert!(kinds.contains(kind), "missing the reference example for {kind}");
    }
    let mut problems = Vec::new();
    for (name, fixture) in &examples {
        problems.extend(exercise(&client, name, fixture).await);
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

fn api_error(result: Result<DynamicObject, kube::Error>) -> String {
    match result {
        Ok(o) => panic!("the apiserver accepted an invalid object: {:?}", o.metadata.name),
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422, "invalid objects are Unprocessable: {s:?}");
            s.message
        }
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[tokio::test]
async fn invalid_objects_are_refused_with_an_actionable_message() {
    let (_env, client) = env_with_crds().await;
    let infra = json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "Infrastructure",
        "metadata": {"name": "no-region", "namespace": "shoot--dev--demo"},
        "spec": {"type": "local", "secretRef": {"name": "cloudprovider"}}
    });
    let (api, _) = dynamic_api(&client, &infra);
    let msg = api_error(api.create(&PostParams::default(), &serde_json::from_value(infra.clone()).unwrap()).await);
    assert!(msg.contains("spec.region") && msg.contains("Required value"), "{msg}");

    let mut ok = infra.clone();
    ok["metadata"]["name"] = json!("bad-state");
    ok["spec"]["region"] = json!("local");
    api.create(&PostParams::default(), &serde_json::from_value(ok).unwrap()).await.unwrap();
    let bad_status = json!({"status": {"lastOperation": {
        "description": "x", "lastUpdateTime": "2024-01-02T03:04:05Z", "progress": 10,
        "state": "Sleeping", "type": "Reconcile"}}});
    let msg = api_error(api.patch_status("bad-state", &PatchParams::default(), &Patch::Merge(&bad_status)).await);
    assert!(msg.contains("status.lastOperation.state") && msg.contains("Sleeping"), "{msg}");
    assert!(msg.contains("Succeeded"), "the message lists the allowed values: {msg}");

    let bad_progress = json!({"status": {"lastOperation": {
        "description": "x", "lastUpdateTime": "2024-01-02T03:04:05Z", "progress": 170,
        "state": "Processing", "type": "Reconcile"}}});
    let msg = api_error(api.patch_status("bad-state", &PatchParams::default(), &Patch::Merge(&bad_progress)).await);
    assert!(msg.contains("status.lastOperation.progress"), "{msg}");

    let bad_code = json!({"status": {"lastError": {"description": "x", "codes": ["ERR_SOMETHING"]}}});
    let msg = api_error(api.patch_status("bad-state", &PatchParams::default(), &Patch::Merge(&bad_code)).await);
    assert!(msg.contains("status.lastError.codes") && msg.contains("ERR_SOMETHING"), "{msg}");

    let dns = json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "DNSRecord",
        "metadata": {"name": "mx", "namespace": "shoot--dev--demo"},
        "spec": {"type": "local", "secretRef": {"name": "dns"}, "name": "api.example.com", "recordType": "MX", "values": ["1.2.3.4"]}
    });
    let (dns_api, _) = dynamic_api(&client, &dns);
    let msg = api_error(dns_api.create(&PostParams::default(), &serde_json::from_value(dns).unwrap()).await);
    assert!(msg.contains("spec.recordType") && msg.contains("\"MX\""), "{msg}");

    let class = json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "Extension",
        "metadata": {"name": "bad-class", "namespace": "shoot--dev--demo"},
        "spec": {"type": "local-ext", "class": "planet"}
    });
    let (ext_api, _) = dynamic_api(&client, &class);
    let msg = api_error(ext_api.create(&PostParams::default(), &serde_json::from_value(class).unwrap()).await);
    assert!(msg.contains("spec.class"), "{msg}");
}

/// Requests the Table form, as `kubectl get` does, and returns (column names, first row cells).
async fn table(client: &kube::Client, path: &str) -> (Vec<String>, Vec<Value>) {
    let request = http::Request::get(path)
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let table: Value = client.request(request).await.unwrap();
    let columns = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    let cells = table["rows"][0]["cells"].as_array().cloned().unwrap_or_default();
    (columns, cells)
}

fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| &v[*k])
}

#[tokio::test]
async fn kubectl_get_shows_the_columns_a_platform_team_expects() {
    let (_env, client) = env_with_crds().await;
    let shoot = load_fixtures("core").into_iter().find(|(n, _)| n.ends_with("shoot.yaml")).unwrap().1;
    let infra = load_fixtures("extensions").into_iter().find(|(n, _)| n.ends_with("infrastructure.yaml")).unwrap().1;
    for fixture in [&shoot, &infra] {
        let (api, _) = dynamic_api(&client, fixture);
        let (create, status) = split_fixture(fixture);
        let name = create["metadata"]["name"].as_str().unwrap().to_string();
        api.create(&PostParams::default(), &serde_json::from_value(create).unwrap()).await.unwrap();
        let patch = json!({ "status": status.unwrap() });
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    }

    let (columns, cells) = table(&client, "/apis/core.gardener.cloud/v1beta1/namespaces/garden-dev/shoots").await;
    assert_eq!(
        columns,
        ["Name", "CloudProfile", "Provider", "Region", "K8S Version", "Seed", "Operation", "Progress", "Age"],
        "Shoot columns"
    );
    let expected = [
        at(&shoot, &["metadata", "name"]),
        at(&shoot, &["spec", "cloudProfileName"]),
        at(&shoot, &["spec", "provider", "type"]),
        at(&shoot, &["spec", "region"]),
        at(&shoot, &["spec", "kubernetes", "version"]),
        at(&shoot, &["spec", "seedName"]),
        at(&shoot, &["status", "lastOperation", "state"]),
        at(&shoot, &["status", "lastOperation", "progress"]),
    ];
    for (i, want) in expected.iter().enumerate() {
        assert!(!want.is_null(), "the Shoot fixture sets column {}", columns[i]);
        assert_eq!(&cells[i], *want, "Shoot column {}", columns[i]);
    }

    let (columns, cells) =
        table(&client, "/apis/extensions.gardener.cloud/v1alpha1/namespaces/shoot--dev--demo/infrastructures").await;
    assert_eq!(columns, ["Name", "Type", "Region", "Status", "Age"], "Infrastructure columns");
    assert_eq!(cells[1], infra["spec"]["type"]);
    assert_eq!(cells[2], infra["spec"]["region"]);
    assert_eq!(cells[3], infra["status"]["lastOperation"]["state"]);
}
