//! The EncryptionConfiguration gardenlet renders for a shoot's `encryptionConfig.provider.type`
//! works on a real etcd and kube-apiserver, for each provider Gardener offers and for a change
//! between them: a Secret written under the old provider and key (its raw etcd value carried over
//! unchanged, as the shoot's etcd keeps it across the API server's restart) is read through the
//! API server that runs with the new provider first and the old one after it, and rewriting it
//! stores it under the new provider and key (what the rotation that a change begins does for
//! every Secret). The raw values are read with etcdctl.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use gardenlet::components::kube_apiserver::{Providers, encryption_configuration_for, encryption_key_name};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use testenv::{Options, SETUP_COMMAND, TestEnv};

const MARKER: &str = "provider-marker-3d1c-must-not-reach-etcd";
const KEY: &str = "/registry/secrets/default/s";
/// Two keys as gardenlet makes them (standard base64 of 32 bytes): the old one and the one the
/// rotation brings.
const OLD_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const NEW_KEY: &str = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";

fn etcdctl(env: &TestEnv) -> Command {
    let dir = std::env::var_os("KUBEBUILDER_ASSETS")
        .unwrap_or_else(|| panic!("KUBEBUILDER_ASSETS is not set; run `{SETUP_COMMAND}` first"));
    let path = PathBuf::from(dir).join("etcdctl");
    assert!(path.is_file(), "{} not found; run `{SETUP_COMMAND}` first", path.display());
    let mut command = Command::new(path);
    command.env("ETCDCTL_API", "3").arg(format!("--endpoints={}", env.etcd_url()));
    command
}

/// The raw value stored under [`KEY`] (etcdctl's JSON output carries it in base64).
fn raw(env: &TestEnv) -> Vec<u8> {
    let output = etcdctl(env).args(["get", KEY, "-w", "json"]).output().expect("running etcdctl");
    assert!(output.status.success(), "etcdctl get: {}", String::from_utf8_lossy(&output.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let value = answer["kvs"][0]["value"].as_str().unwrap_or_else(|| panic!("{KEY} is not in etcd: {answer}"));
    B64.decode(value).unwrap()
}

/// Stores `value` under [`KEY`] as it is (etcdctl reads it from stdin, so any byte passes).
fn put_raw(env: &TestEnv, value: &[u8]) {
    let mut child = etcdctl(env).args(["put", KEY]).stdin(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(value).unwrap();
    assert!(child.wait().unwrap().success(), "etcdctl put {KEY}");
}

/// `value` is encrypted by `provider` under `key` (its `k8s:enc:<provider>:v1:<key name>:`
/// prefix) and does not show the marker.
fn assert_stored(value: &[u8], provider: &str, key: &str) {
    let prefix = format!("k8s:enc:{provider}:v1:{}:", encryption_key_name(key));
    let shown = String::from_utf8_lossy(&value[..value.len().min(60)]).into_owned();
    assert!(value.starts_with(prefix.as_bytes()), "expected {prefix}..., etcd holds {shown:?}");
    let marker = MARKER.as_bytes();
    assert!(!value.windows(marker.len()).any(|w| w == marker), "the marker is readable in etcd under {provider}");
}

/// etcd and kube-apiserver started with the configuration gardenlet renders for `providers`,
/// `key` and (during the rotation) `previous`.
async fn start(
    dir: &tempfile::TempDir,
    name: &str,
    key: &str,
    previous: Option<&str>,
    providers: Providers<'_>,
) -> TestEnv {
    let path = dir.path().join(format!("{name}.yaml"));
    std::fs::write(&path, encryption_configuration_for(key, previous, &[], providers)).unwrap();
    TestEnv::start_with(Options {
        extra_apiserver_args: vec![format!("--encryption-provider-config={}", path.display())],
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("kube-apiserver refused or failed with the {name} configuration: {e}"))
}

fn marker_of(secret: &Secret) -> Option<String> {
    let data = secret.data.clone().unwrap_or_default();
    data.get("key").map(|b| String::from_utf8_lossy(&b.0).into_owned())
}

#[tokio::test]
async fn each_provider_encrypts_and_a_change_reads_the_old_data_and_rewrites_it_under_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    // Before: the shoot's default, aescbc, with its key.
    let aescbc = Providers { current: "aescbc", previous: "aescbc" };
    let before = start(&dir, "aescbc", OLD_KEY, None, aescbc).await;
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "s", "namespace": "default"}, "stringData": {"key": MARKER},
    }))
    .unwrap();
    Api::<Secret>::namespaced(before.client().await.unwrap(), "default")
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let old = raw(&before);
    assert_stored(&old, "aescbc", OLD_KEY);
    drop(before);

    for to in ["aesgcm", "secretbox"] {
        // During the rotation a change begins: the new provider and key encrypt, the old provider
        // with both keys still decrypts.
        let env = start(&dir, to, NEW_KEY, Some(OLD_KEY), Providers { current: to, previous: "aescbc" }).await;
        put_raw(&env, &old);
        let secrets = Api::<Secret>::namespaced(env.client().await.unwrap(), "default");
        let read = secrets.get("s").await.unwrap_or_else(|e| panic!("reading the aescbc Secret under {to}: {e}"));
        assert_eq!(marker_of(&read).as_deref(), Some(MARKER), "the old data reads back under {to}");
        secrets.replace("s", &PostParams::default(), &read).await.unwrap();
        assert_stored(&raw(&env), to, NEW_KEY);
        drop(env);

        // After the rotation: the new provider alone, with the new key, reads what it wrote.
        let after = start(&dir, &format!("{to}-after"), NEW_KEY, None, Providers { current: to, previous: to }).await;
        let secrets = Api::<Secret>::namespaced(after.client().await.unwrap(), "default");
        secrets.create(&PostParams::default(), &secret).await.unwrap();
        assert_stored(&raw(&after), to, NEW_KEY);
        assert_eq!(marker_of(&secrets.get("s").await.unwrap()).as_deref(), Some(MARKER));
    }
}
