//! Encryption at rest on a real etcd + kube-apiserver (the assets' version, 1.20.2 here) started
//! with the `EncryptionConfiguration` that `up` renders: kube-apiserver accepts it, Secrets are
//! stored as `k8s:enc:secretbox:v1:...` in etcd (read back with etcdctl) and read through the API
//! in plain text. A ConfigMap, not in the configuration, shows that the marker would be visible
//! if a resource were stored unencrypted.
//!
//! Custom resources named in the configuration are encrypted as well. Upstream kube-apiserver
//! before 1.26 ignores the configuration for them (kubernetes/kubernetes#104165); the 1.20.2
//! source build carries the backport `hack/patches/kubernetes-1.20.2-crd-encryption.patch`, and
//! this test is what shows it works.

use api::core::{InternalSecret, ShootState};
use api::extensions::OperatingSystemConfig;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use local_cluster::render::encryption::{KEY_LEN, Key, encryption_config};
use serde::de::DeserializeOwned;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use testenv::{Options, SETUP_COMMAND, TestEnv};

const NS: &str = "default";
const MARKER: &str = "marker-7f3c-plaintext-must-not-reach-etcd";
const PREFIX: &[u8] = b"k8s:enc:secretbox:v1:";

#[allow(clippy::expect_used)] // a test helper: a malformed fixture should fail the test loudly
fn object<T: DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a valid fixture")
}

fn metadata(name: &str) -> serde_json::Value {
    serde_json::json!({"name": name, "namespace": NS, "annotations": {"marker": MARKER}})
}

/// etcdctl from `KUBEBUILDER_ASSETS` (the same directory as etcd).
fn etcdctl() -> PathBuf {
    let dir = std::env::var_os("KUBEBUILDER_ASSETS")
        .unwrap_or_else(|| panic!("KUBEBUILDER_ASSETS is not set; run `{SETUP_COMMAND}` first"));
    let path = PathBuf::from(dir).join("etcdctl");
    assert!(path.is_file(), "{} not found; run `{SETUP_COMMAND}` first", path.display());
    path
}

/// The raw value kube-apiserver stored under `key`.
#[allow(clippy::expect_used)] // a test helper: etcdctl failing to run should fail the test loudly
fn etcd_value(env: &TestEnv, key: &str) -> Vec<u8> {
    let output = std::process::Command::new(etcdctl())
        .env("ETCDCTL_API", "3")
        .args([&format!("--endpoints={}", env.etcd_url()), "get", key, "--print-value-only"])
        .output()
        .expect("running etcdctl");
    assert!(output.status.success(), "etcdctl get {key}: {}", String::from_utf8_lossy(&output.stderr));
    assert!(!output.stdout.is_empty(), "{key} is not in etcd");
    output.stdout
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn assert_plain(env: &TestEnv, key: &str) {
    let value = etcd_value(env, key);
    assert!(!value.starts_with(PREFIX) && contains(&value, MARKER.as_bytes()), "{key} should be stored in plain text");
}

fn assert_encrypted(env: &TestEnv, key: &str) {
    let value = etcd_value(env, key);
    assert!(
        value.starts_with(PREFIX),
        "{key} is not secretbox-encrypted in etcd: {:?} (a custom resource in plain text: the \
         kube-apiserver was built without hack/patches/; run `{SETUP_COMMAND}` again)",
        String::from_utf8_lossy(&value[..value.len().min(120)])
    );
    assert!(!contains(&value, MARKER.as_bytes()), "{key}: the marker is readable in etcd");
}

#[tokio::test]
async fn secrets_and_the_custom_resources_with_keys_are_encrypted_in_etcd() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("encryption-config.yaml");
    let key = Key::new("key-20240101", &[0x5a; KEY_LEN]);
    std::fs::write(&config, encryption_config(&[key]).expect("rendering")).expect("writing the config");
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    let env = TestEnv::start_with(Options {
        extra_apiserver_args: vec![format!("--encryption-provider-config={}", config.display())],
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("starting etcd and kube-apiserver with the encryption config: {e}"));
    let client = env.client().await.expect("client");
    testenv::install_crds(&client, &api::crds::all()).await.unwrap_or_else(|e| panic!("installing CRDs: {e:?}"));
    let pp = PostParams::default();

    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    secrets
        .create(&pp, &object(serde_json::json!({"metadata": metadata("s"), "stringData": {"key": MARKER}})))
        .await
        .expect("creating the Secret");
    let shoot_states: Api<ShootState> = Api::namespaced(client.clone(), NS);
    shoot_states
        .create(
            &pp,
            &object(serde_json::json!({
                "metadata": metadata("ss"),
                "spec": {"gardener": [{"name": "ca", "type": "secret", "data": {"key": MARKER}}]}
            })),
        )
        .await
        .expect("creating the ShootState");
    let internal_secrets: Api<InternalSecret> = Api::namespaced(client.clone(), NS);
    internal_secrets
        .create(&pp, &object(serde_json::json!({"metadata": metadata("is"), "stringData": {"key": MARKER}})))
        .await
        .expect("creating the InternalSecret");
    let oscs: Api<OperatingSystemConfig> = Api::namespaced(client.clone(), NS);
    oscs.create(
        &pp,
        &object(serde_json::json!({
            "metadata": metadata("osc"),
            "spec": {"type": "local", "purpose": "provision", "files": [{
                "path": "/var/lib/kubelet/bootstrap-kubeconfig",
                "content": {"inline": {"data": format!("token: {MARKER}")}}
            }]}
        })),
    )
    .await
    .expect("creating the OperatingSystemConfig");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    config_maps
        .create(&pp, &object(serde_json::json!({"metadata": metadata("cm"), "data": {"key": MARKER}})))
        .await
        .expect("creating the ConfigMap");

    // Secrets are stored encrypted...
    assert_encrypted(&env, &format!("/registry/secrets/{NS}/s"));
    // ...while a resource outside the configuration is not (the check above could see it).
    assert_plain(&env, &format!("/registry/configmaps/{NS}/cm"));
    // So are the custom resources named in the configuration.
    for key in [
        format!("/registry/core.gardener.cloud/shootstates/{NS}/ss"),
        format!("/registry/core.gardener.cloud/internalsecrets/{NS}/is"),
        format!("/registry/extensions.gardener.cloud/operatingsystemconfigs/{NS}/osc"),
    ] {
        assert_encrypted(&env, &key);
    }

    // Read through the API, everything is plain.
    let secret = secrets.get("s").await.expect("reading the Secret");
    let data = secret.data.unwrap_or_default();
    assert_eq!(data.get("key").map(|b| b.0.as_slice()), Some(MARKER.as_bytes()));
    let text = |v: serde_json::Value| v.to_string();
    let shoot_state = shoot_states.get("ss").await.expect("reading the ShootState");
    assert!(text(serde_json::to_value(&shoot_state.spec).expect("json")).contains(MARKER));
    let internal = internal_secrets.get("is").await.expect("reading the InternalSecret");
    assert_eq!(internal.metadata.annotations.unwrap_or_default().get("marker").map(String::as_str), Some(MARKER));
    let osc = oscs.get("osc").await.expect("reading the OperatingSystemConfig");
    assert!(text(serde_json::to_value(&osc.spec).expect("json")).contains(MARKER));
}
