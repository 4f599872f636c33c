use super::*;
use crate::field::ErrorList;
use api::core::Shoot;
use kube::CustomResourceExt;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path as FsPath, PathBuf};

fn shoot(spec: Value) -> Shoot {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "Shoot",
        "metadata": {"name": "demo", "namespace": "garden-dev"},
        "spec": spec,
    }))
    .unwrap()
}

fn base() -> Value {
    serde_json::json!({
        "cloudProfileName": "local",
        "region": "local",
        "secretBindingName": "local",
        "kubernetes": {"version": "1.20.2"},
        "networking": {"type": "local", "nodes": "10.10.0.0/16"},
        "provider": {"type": "local", "workers": [{
            "name": "local", "minimum": 1, "maximum": 1, "maxSurge": 1, "maxUnavailable": 0, "zones": ["0"],
            "machine": {"type": "local", "image": {"name": "local", "version": "1.0.0"}}
        }]}
    })
}

fn with(mut spec: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let mut target = &mut spec;
    for segment in parent.split('/').filter(|s| !s.is_empty()) {
        target = match segment.parse::<usize>() {
            Ok(i) => &mut target[i],
            Err(_) => target.as_object_mut().unwrap().entry(segment).or_insert_with(|| serde_json::json!({})),
        };
    }
    target.as_object_mut().unwrap().insert(key.to_string(), value);
    spec
}

fn messages(errs: &ErrorList) -> Vec<String> {
    errs.0.iter().map(ToString::to_string).collect()
}

#[test]
fn the_example_shoot_is_accepted_as_it_is() {
    let errs = validate(&shoot(base()), None);
    assert!(errs.0.is_empty(), "{:?}", messages(&errs));
}

#[test]
fn the_contract_refuses_what_it_does_not_honour() {
    let cases = [
        (
            "/kubernetes/kubelet",
            serde_json::json!({"imagePullProgressDeadline": "1m"}),
            "spec.kubernetes.kubelet.imagePullProgressDeadline: Forbidden: not supported: a dockershim setting",
        ),
        (
            "/monitoring",
            serde_json::json!({"alerting": {"emailReceivers": ["a@b.c"]}}),
            "spec.monitoring: Forbidden: not supported: this system runs no alerting",
        ),
        (
            "/provider/workers/0/sysctls",
            serde_json::json!({"net.core.somaxconn": "1024"}),
            "spec.provider.workers[0].sysctls: Forbidden: not supported: ",
        ),
        (
            "/controlPlane",
            serde_json::json!({"highAvailability": {"failureTolerance": {"type": "node"}}}),
            "spec.controlPlane.highAvailability: Forbidden: not supported: highly available",
        ),
    ];
    for (pointer, value, expected) in cases {
        let errs = validate(&shoot(with(base(), pointer, value)), None);
        let got = messages(&errs);
        assert_eq!(got.len(), 1, "{pointer}: {got:?}");
        assert!(got[0].starts_with(expected), "{pointer}: {got:?}");
    }
}

#[test]
fn the_contract_accepts_what_the_system_does_anyway() {
    let accepted = [
        ("/kubernetes/kubeProxy", serde_json::json!({"mode": "IPTables", "enabled": true})),
        ("/addons", serde_json::json!({"nginxIngress": {"enabled": false}, "kubernetesDashboard": {"enabled": false}})),
        ("/kubernetes/allowPrivilegedContainers", serde_json::json!(true)),
        ("/kubernetes/enableStaticTokenKubeconfig", serde_json::json!(false)),
        ("/kubernetes/verticalPodAutoscaler", serde_json::json!({"enabled": false})),
        ("/maintenance/confineSpecUpdateRollout", serde_json::json!(false)),
        ("/networking/ipFamilies", serde_json::json!(["IPv4"])),
        ("/provider/workers/0/cri", serde_json::json!({"name": "containerd"})),
        ("/provider/workers/0/systemComponents", serde_json::json!({"allow": true})),
        ("/provider/workers/0/machine/architecture", serde_json::json!("amd64")),
    ];
    for (pointer, value) in accepted {
        let errs = validate(&shoot(with(base(), pointer, value.clone())), None);
        assert!(errs.0.is_empty(), "{pointer} = {value}: {:?}", messages(&errs));
    }
    let refused = [
        (
            "/kubernetes/kubeProxy",
            serde_json::json!({"mode": "IPVS"}),
            "spec.kubernetes.kubeProxy.mode: Forbidden: not supported: IPVS",
        ),
        (
            "/addons",
            serde_json::json!({"nginxIngress": {"enabled": true}}),
            "spec.addons.nginxIngress.enabled: Forbidden",
        ),
        (
            "/networking/ipFamilies",
            serde_json::json!(["IPv6"]),
            "spec.networking.ipFamilies: Forbidden: not supported: only IPv4",
        ),
    ];
    for (pointer, value, expected) in refused {
        let got = messages(&validate(&shoot(with(base(), pointer, value)), None));
        assert_eq!(got.len(), 1, "{pointer}: {got:?}");
        assert!(got[0].starts_with(expected), "{pointer}: {got:?}");
    }
}

#[test]
fn a_field_the_system_does_not_know_is_refused_by_its_path() {
    let spec = with(base(), "/kubernetes/kubeAPIServer/someFutureSetting", serde_json::json!(3));
    let got = messages(&validate(&shoot(spec), None));
    assert_eq!(
        got,
        vec![
            "spec.kubernetes.kubeAPIServer.someFutureSetting: Forbidden: not a field this system knows; it would be stored and ignored"
        ]
    );
}

#[test]
fn an_update_checks_only_what_changed() {
    let old = shoot(with(base(), "/monitoring", serde_json::json!({"alerting": {"emailReceivers": ["a@b.c"]}})));
    // Unchanged refused value: the shoot can still be updated (here: hibernated).
    let new = shoot(with(
        with(base(), "/monitoring", serde_json::json!({"alerting": {"emailReceivers": ["a@b.c"]}})),
        "/hibernation",
        serde_json::json!({"enabled": true}),
    ));
    assert!(validate(&new, Some(&old)).0.is_empty());
    // A changed refused value is refused.
    let changed = shoot(with(base(), "/monitoring", serde_json::json!({"alerting": {"emailReceivers": ["x@y.z"]}})));
    assert_eq!(messages(&validate(&changed, Some(&old))).len(), 1);
}

#[test]
fn entries_cover_their_descendants_and_the_longest_entry_wins() {
    assert_eq!(
        entry_for("spec.kubernetes.kubelet.evictionHard.memoryAvailable").map(|f| f.path),
        Some("spec.kubernetes.kubelet.evictionHard")
    );
    assert_eq!(
        entry_for("spec.kubernetes.verticalPodAutoscaler.enabled").map(|f| f.path),
        Some("spec.kubernetes.verticalPodAutoscaler.enabled")
    );
    assert_eq!(entry_for("spec.kubernetes.verticalPodAutoscalerX"), None);
    assert_eq!(entry_for("spec.provider.workers[].name").map(|f| f.path), Some("spec.provider.workers[].name"));
}

/// Every field path of the Shoot CRD's `spec` schema (lists as `[]`), down to the leaves.
fn schema_paths(path: &str, schema: &Value, out: &mut BTreeSet<String>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            schema_paths(&format!("{path}.{k}"), v, out);
        }
    } else if let Some(items) = schema.get("items").filter(|i| i.get("properties").is_some()) {
        schema_paths(&format!("{path}[]"), items, out);
    } else {
        out.insert(path.to_string());
    }
}

#[test]
fn every_field_of_the_shoot_crd_has_a_fate() {
    let crd = serde_json::to_value(Shoot::crd()).unwrap();
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let mut paths = BTreeSet::new();
    schema_paths("spec", spec, &mut paths);
    assert!(paths.len() > 200, "the schema walk found only {} fields", paths.len());
    let missing: Vec<_> = paths.iter().filter(|p| entry_for(p).is_none()).collect();
    assert!(missing.is_empty(), "fields without a fate in contract::FIELDS: {missing:#?}");
    // And no entry names a field the CRD does not have.
    let stale: Vec<_> = FIELDS.iter().filter(|f| !paths.iter().any(|p| covers(f.path, p))).map(|f| f.path).collect();
    assert!(stale.is_empty(), "entries for fields the Shoot CRD does not have: {stale:?}");
}

fn repo_root() -> PathBuf {
    FsPath::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &FsPath, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("target") {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_proof_names_a_test_that_exists() {
    let mut files = Vec::new();
    rust_files(&repo_root().join("crates"), &mut files);
    rust_files(&repo_root().join("tests"), &mut files);
    let source: String = files.iter().filter_map(|f| std::fs::read_to_string(f).ok()).collect();
    let proofs: BTreeSet<&str> = FIELDS
        .iter()
        .filter_map(|f| match f.fate {
            Fate::Honoured { proof, .. } | Fate::OnlyAs { proof, .. } => Some(proof),
            Fate::Refused { .. } => None,
        })
        .collect();
    let missing: Vec<_> = proofs.iter().filter(|p| !source.contains(&format!("fn {p}("))).collect();
    assert!(missing.is_empty(), "proofs that name no test: {missing:?}");
}

#[test]
fn the_field_page_is_current() {
    let page = repo_root().join("docs/shoot-fields.md");
    if std::env::var_os("WRITE_SHOOT_FIELDS").is_some() {
        std::fs::write(&page, markdown()).unwrap();
    }
    let current = std::fs::read_to_string(&page).unwrap_or_default();
    assert!(
        current == markdown(),
        "docs/shoot-fields.md is not the table; regenerate it: WRITE_SHOOT_FIELDS=1 cargo nextest run -p admission the_field_page_is_current"
    );
}
