//! Every fixture under `tests/fixtures/{extensions,seedmanagement,operations}` decodes into its
//! typed kind and encodes back to exactly the same JSON: no field is lost or renamed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn read(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Decodes the fixture as `K`, encodes it again and compares the JSON.
fn roundtrip<K: DeserializeOwned + Serialize>(path: &Path) {
    let input = read(path);
    let typed: K = serde_json::from_value(input.clone()).unwrap_or_else(|e| panic!("decoding {}: {e}", path.display()));
    let output = serde_json::to_value(&typed).unwrap_or_else(|e| panic!("encoding {}: {e}", path.display()));
    assert_eq!(output, input, "{} does not round-trip.\nwant: {input:#}\ngot:  {output:#}", path.display());
}

/// Checks one fixture file.
type Check = fn(&Path);

/// The fixture files each group must have, with the function that checks one.
fn expected(group: &str) -> Vec<(&'static str, Check)> {
    use api::extensions as ext;
    match group {
        "extensions" => vec![
            ("infrastructure.yaml", roundtrip::<ext::Infrastructure>),
            ("controlplane.yaml", roundtrip::<ext::ControlPlane>),
            ("worker.yaml", roundtrip::<ext::Worker>),
            ("network.yaml", roundtrip::<ext::Network>),
            ("operatingsystemconfig.yaml", roundtrip::<ext::OperatingSystemConfig>),
            ("dnsrecord.yaml", roundtrip::<ext::DNSRecord>),
            ("backupbucket.yaml", roundtrip::<ext::BackupBucket>),
            ("backupentry.yaml", roundtrip::<ext::BackupEntry>),
            ("bastion.yaml", roundtrip::<ext::Bastion>),
            ("containerruntime.yaml", roundtrip::<ext::ContainerRuntime>),
            ("extension.yaml", roundtrip::<ext::Extension>),
            ("cluster.yaml", roundtrip::<ext::Cluster>),
        ],
        "seedmanagement" => vec![
            ("managedseed.yaml", roundtrip::<api::seedmanagement::ManagedSeed>),
            ("managedseedset.yaml", roundtrip::<api::seedmanagement::ManagedSeedSet>),
        ],
        "operations" => vec![("bastion.yaml", roundtrip::<api::operations::Bastion>)],
        other => panic!("unknown fixture group {other}"),
    }
}

fn check_group(group: &str) {
    let dir = fixtures().join(group);
    let expected = expected(group);
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    present.sort();
    let mut known: Vec<String> = expected.iter().map(|(n, _)| n.to_string()).collect();
    known.sort();
    assert_eq!(present, known, "fixtures in {} differ from the kinds this test knows", dir.display());
    for (name, check) in expected {
        check(&dir.join(name));
    }
}

/// Fails when a fixture's `apiVersion`/`kind` do not match the group directory it lives in.
fn check_type_meta(group: &str, api_version: &str) {
    let dir = fixtures().join(group);
    for (name, _) in expected(group) {
        let v = read(&dir.join(name));
        assert_eq!(v["apiVersion"], api_version, "{group}/{name}");
        assert!(v["kind"].is_string(), "{group}/{name} has no kind");
        assert!(v["metadata"]["name"].is_string(), "{group}/{name} has no name");
    }
}

#[test]
fn extensions_fixtures_round_trip() {
    check_group("extensions");
    check_type_meta("extensions", "extensions.gardener.cloud/v1alpha1");
}

#[test]
fn seedmanagement_fixtures_round_trip() {
    check_group("seedmanagement");
    check_type_meta("seedmanagement", "seedmanagement.gardener.cloud/v1alpha1");
}

#[test]
fn operations_fixtures_round_trip() {
    check_group("operations");
    check_type_meta("operations", "operations.gardener.cloud/v1alpha1");
}

#[test]
fn fixture_namespaces_follow_scope() {
    let cluster_scoped = ["backupbucket.yaml", "backupentry.yaml", "cluster.yaml"];
    for (name, _) in expected("extensions") {
        let v = read(&fixtures().join("extensions").join(name));
        let want = if cluster_scoped.contains(&name) { None } else { Some("shoot--dev--demo") };
        assert_eq!(v["metadata"]["namespace"].as_str(), want, "extensions/{name}");
    }
    for group in ["seedmanagement", "operations"] {
        for (name, _) in expected(group) {
            let v = read(&fixtures().join(group).join(name));
            assert_eq!(v["metadata"]["namespace"].as_str(), Some("garden-dev"), "{group}/{name}");
        }
    }
}
