//! Shared pieces of the real-apiserver tests: fixtures, dynamic API handles, and a JSON
//! containment check that reports every difference by path.

#![allow(dead_code)]

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every `*.yaml` under `tests/fixtures/<sub>`, sorted, as `(file name, JSON)`.
pub fn load_fixtures(sub: &str) -> Vec<(String, Value)> {
    let dir = fixtures_dir().join(sub);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files.iter().map(|p| (display(p), load(p))).collect()
}

fn display(p: &Path) -> String {
    p.strip_prefix(fixtures_dir()).unwrap_or(p).display().to_string()
}

fn load(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", p.display()));
    serde_json::to_value(yaml).unwrap()
}

/// The CRD serving `apiVersion`/`kind`.
pub fn crd_for(api_version: &str, kind: &str) -> CustomResourceDefinition {
    api::crds::all()
        .into_iter()
        .find(|c| {
            c.spec.names.kind == kind
                && c.spec.versions.iter().any(|v| format!("{}/{}", c.spec.group, v.name) == api_version)
        })
        .unwrap_or_else(|| panic!("no CRD for {api_version} {kind}"))
}

pub fn api_resource(crd: &CustomResourceDefinition) -> ApiResource {
    let version = &crd.spec.versions[0].name;
    ApiResource {
        group: crd.spec.group.clone(),
        version: version.clone(),
        api_version: format!("{}/{}", crd.spec.group, version),
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
    }
}

/// A dynamic API handle for the object's kind, namespaced when the CRD says so.
pub fn dynamic_api(client: &kube::Client, obj: &Value) -> (Api<DynamicObject>, bool) {
    let crd = crd_for(obj["apiVersion"].as_str().unwrap(), obj["kind"].as_str().unwrap());
    let ar = api_resource(&crd);
    if crd.spec.scope == "Namespaced" {
        let ns = obj["metadata"]["namespace"].as_str().expect("namespaced fixture needs metadata.namespace");
        (Api::namespaced_with(client.clone(), ns, &ar), true)
    } else {
        (Api::all_with(client.clone(), &ar), false)
    }
}

pub async fn ensure_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("creating namespace {name}: {e}"),
    }
}

/// Lists every place where `actual` does not contain `expected` (extra fields in `actual`,
/// such as server-set metadata or schema defaults, are fine).
pub fn differences(expected: &Value, actual: &Value, path: &str, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                match a.get(k) {
                    Some(av) => differences(ev, av, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k}: missing (pruned?)")),
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                differences(ev, av, &format!("{path}[{i}]"), out);
            }
        }
        (e, a) if e == a => {}
        (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() => {}
        (e, a) => out.push(format!("{path}: expected {e}, got {a}")),
    }
}

/// Splits a fixture into what is created (no status, no server-owned metadata) and its status.
pub fn split_fixture(obj: &Value) -> (Value, Option<Value>) {
    let mut create = obj.clone();
    let map = create.as_object_mut().unwrap();
    let status = map.remove("status");
    if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
        for server_owned in ["ownerReferences", "finalizers", "uid", "resourceVersion", "creationTimestamp"] {
            meta.remove(server_owned);
        }
    }
    (create, status)
}
