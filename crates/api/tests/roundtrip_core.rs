//! Every core, security and authentication fixture (`tests/fixtures/{core,security,authentication}/`) and every GEP-15 example manifest
//! (`tests/fixtures/seed-examples/`) decodes into its typed kind and encodes back to the same
//! JSON: no field of the reference API or of the examples is lost.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use api::authentication::AdminKubeconfigRequest;
use api::core::{
    BackupBucket, BackupEntry, CloudProfile, ControllerDeployment, ControllerInstallation, ControllerRegistration,
    ExposureClass, InternalSecret, NamespacedCloudProfile, Project, Quota, SecretBinding, Seed, Shoot, ShootState,
};
use api::security::{CredentialsBinding, WorkloadIdentity};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())).path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Drops empty lists: like the reference API's `omitempty`, the types do not write them back,
/// and an empty list carries no information.
fn without_empty_lists(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !matches!(v, Value::Array(a) if a.is_empty()))
                .map(|(k, v)| (k, without_empty_lists(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_empty_lists).collect()),
        other => other,
    }
}

fn roundtrip<K: DeserializeOwned + Serialize>(path: &Path, input: &Value) -> Result<(), String> {
    let typed: K = serde_json::from_value(input.clone()).map_err(|e| format!("{}: decoding: {e}", path.display()))?;
    let output = serde_json::to_value(&typed).map_err(|e| format!("{}: encoding: {e}", path.display()))?;
    let expected = without_empty_lists(input.clone());
    let mut diffs = Vec::new();
    diff("", &expected, &output, &mut diffs);
    if !diffs.is_empty() {
        return Err(format!("{}: JSON changed in the round trip:\n  {}", path.display(), diffs.join("\n  ")));
    }
    Ok(())
}

/// The paths where `output` differs from `input`. Numbers compare by value (JSON does not tell
/// `-1` from `-1.0`; a float field writes the latter).
fn diff(path: &str, input: &Value, output: &Value, out: &mut Vec<String>) {
    match (input, output) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                match b.get(k) {
                    Some(vb) => diff(&format!("{path}.{k}"), va, vb, out),
                    None => out.push(format!("{path}.{k}: lost ({va})")),
                }
            }
            for (k, vb) in b {
                if !a.contains_key(k) {
                    out.push(format!("{path}.{k}: added ({vb})"));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        (a, b) if a != b => out.push(format!("{path}: {a} became {b}")),
        _ => {}
    }
}

fn roundtrip_any(path: &Path) -> Result<&'static str, String> {
    let input = load(path);
    let kind = input["kind"].as_str().unwrap_or_default().to_string();
    let group = match kind.as_str() {
        "CredentialsBinding" | "WorkloadIdentity" => "security.gardener.cloud/v1alpha1",
        "AdminKubeconfigRequest" => "authentication.gardener.cloud/v1alpha1",
        _ => "core.gardener.cloud/v1beta1",
    };
    assert_eq!(input["apiVersion"], group, "{}", path.display());
    match kind.as_str() {
        "CloudProfile" => roundtrip::<CloudProfile>(path, &input).map(|_| "CloudProfile"),
        "Project" => roundtrip::<Project>(path, &input).map(|_| "Project"),
        "SecretBinding" => roundtrip::<SecretBinding>(path, &input).map(|_| "SecretBinding"),
        "Quota" => roundtrip::<Quota>(path, &input).map(|_| "Quota"),
        "Seed" => roundtrip::<Seed>(path, &input).map(|_| "Seed"),
        "Shoot" => roundtrip::<Shoot>(path, &input).map(|_| "Shoot"),
        "ShootState" => roundtrip::<ShootState>(path, &input).map(|_| "ShootState"),
        "BackupBucket" => roundtrip::<BackupBucket>(path, &input).map(|_| "BackupBucket"),
        "BackupEntry" => roundtrip::<BackupEntry>(path, &input).map(|_| "BackupEntry"),
        "ControllerRegistration" => roundtrip::<ControllerRegistration>(path, &input).map(|_| "ControllerRegistration"),
        "ControllerDeployment" => roundtrip::<ControllerDeployment>(path, &input).map(|_| "ControllerDeployment"),
        "ControllerInstallation" => roundtrip::<ControllerInstallation>(path, &input).map(|_| "ControllerInstallation"),
        "ExposureClass" => roundtrip::<ExposureClass>(path, &input).map(|_| "ExposureClass"),
        "InternalSecret" => roundtrip::<InternalSecret>(path, &input).map(|_| "InternalSecret"),
        "NamespacedCloudProfile" => roundtrip::<NamespacedCloudProfile>(path, &input).map(|_| "NamespacedCloudProfile"),
        "CredentialsBinding" => roundtrip::<CredentialsBinding>(path, &input).map(|_| "CredentialsBinding"),
        "WorkloadIdentity" => roundtrip::<WorkloadIdentity>(path, &input).map(|_| "WorkloadIdentity"),
        "AdminKubeconfigRequest" => roundtrip::<AdminKubeconfigRequest>(path, &input).map(|_| "AdminKubeconfigRequest"),
        other => Err(format!("{}: unexpected kind {other:?}", path.display())),
    }
}

fn check_dir(dir: &str, expected_kinds: &[&str]) {
    let mut failures = Vec::new();
    let mut seen = Vec::new();
    for path in fixtures(dir) {
        match roundtrip_any(&path) {
            Ok(kind) => {
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
                assert_eq!(stem, kind.to_lowercase(), "fixture file name must be the lowercase kind");
                seen.push(kind);
            }
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    seen.sort();
    let mut expected = expected_kinds.to_vec();
    expected.sort();
    assert_eq!(seen, expected, "one fixture per kind in tests/fixtures/{dir}");
}

#[test]
fn core_fixtures_round_trip() {
    check_dir(
        "core",
        &[
            "BackupBucket",
            "BackupEntry",
            "CloudProfile",
            "ControllerDeployment",
            "ControllerInstallation",
            "ControllerRegistration",
            "ExposureClass",
            "InternalSecret",
            "NamespacedCloudProfile",
            "Project",
            "Quota",
            "SecretBinding",
            "Seed",
            "Shoot",
            "ShootState",
        ],
    );
}

#[test]
fn security_and_authentication_fixtures_round_trip() {
    check_dir("security", &["CredentialsBinding", "WorkloadIdentity"]);
    check_dir("authentication", &["AdminKubeconfigRequest"]);
}

#[test]
fn seed_document_examples_round_trip() {
    check_dir(
        "seed-examples",
        &["BackupBucket", "BackupEntry", "CloudProfile", "Project", "Quota", "SecretBinding", "Seed", "Shoot"],
    );
}

#[test]
fn namespaced_fixtures_use_the_project_namespace() {
    for dir in ["core", "seed-examples", "security", "authentication"] {
        for path in fixtures(dir) {
            let v = load(&path);
            let namespaced = !matches!(
                v["kind"].as_str(),
                Some(
                    "CloudProfile"
                        | "Project"
                        | "Seed"
                        | "BackupBucket"
                        | "ControllerRegistration"
                        | "ControllerDeployment"
                        | "ControllerInstallation"
                        | "ExposureClass"
                )
            );
            let ns = v["metadata"]["namespace"].as_str();
            if namespaced {
                assert_eq!(ns, Some("garden-dev"), "{}", path.display());
            } else {
                assert_eq!(ns, None, "{}: cluster-scoped kinds have no namespace", path.display());
            }
        }
    }
}

#[test]
fn legacy_spellings_are_readable_through_helpers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed-examples");
    let shoot: Shoot = serde_json::from_value(load(&dir.join("shoot.yaml"))).unwrap();
    let status = shoot.status.as_ref().unwrap();
    assert_eq!(status.seed_name(), Some("seed1"));
    assert_eq!(status.technical_id, "shoot--core--crazy-botany");
    let addons = shoot.spec.addons.as_ref().unwrap();
    assert_eq!(addons.kubernetes_dashboard().map(|d| d.enabled), Some(true));
    assert_eq!(addons.nginx_ingress().map(|n| n.enabled), Some(false));
    let oidc = shoot.spec.kubernetes.kube_api_server.as_ref().and_then(|k| k.oidc_config.as_ref()).unwrap();
    assert_eq!(oidc.signing_algs.as_ref().map(|s| s.to_vec()).unwrap(), vec!["RS256", "some-other-algorithm"]);

    let seed: Seed = serde_json::from_value(load(&dir.join("seed.yaml"))).unwrap();
    assert_eq!(seed.spec.backup.as_ref().and_then(|b| b.provider_type()), Some("local"));
    assert_eq!(seed.spec.dns.provider.as_ref().map(|p| p.type_()), Some("local"));
    assert_eq!(seed.spec.ingress_domain(), Some("seed1.dev.example.com"));

    let bucket: BackupBucket = serde_json::from_value(load(&dir.join("backupbucket.yaml"))).unwrap();
    assert_eq!(bucket.spec.seed_name(), Some("seed1"));
    let entry: BackupEntry = serde_json::from_value(load(&dir.join("backupentry.yaml"))).unwrap();
    assert_eq!(entry.spec.seed_name(), Some("seed1"));

    let profile: CloudProfile = serde_json::from_value(load(&dir.join("cloudprofile.yaml"))).unwrap();
    let storage = profile.spec.machine_types[0].storage.as_ref().and_then(|s| s.size()).map(|q| q.0.as_str());
    assert_eq!(storage, Some("20Gi"));
}

#[test]
fn unmodeled_component_settings_are_kept() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/core");
    let shoot: Shoot = serde_json::from_value(load(&dir.join("shoot.yaml"))).unwrap();
    let api_server = shoot.spec.kubernetes.kube_api_server.as_ref().unwrap();
    assert_eq!(api_server.unmodeled["structuredAuthentication"]["configMapName"], "authn-config");
    let ca = shoot.spec.kubernetes.cluster_autoscaler.as_ref().unwrap();
    assert_eq!(ca.unmodeled["verbosity"], 2);
    assert!(!ca.unmodeled.contains_key("scanInterval"), "modelled fields are not duplicated");
}
