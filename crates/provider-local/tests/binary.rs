//! The provider-local binary as it runs in a seed, against a real API server: it serves
//! `/readyz` and `/metrics` on `--metrics-bind-address`, takes its leader Lease, and on SIGTERM
//! stops cleanly and releases the Lease. Bad flags and a bad kubeconfig stop it with messages
//! for people.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use extension_sdk::k8s_openapi::api::coordination::v1::Lease;
use extension_sdk::kube::Api;
use extension_sdk::testing::TestCluster;
use extension_sdk::testing::testenv::binary::{Binary, free_address, http_get};
use std::process::{Command, Output};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_gardener-extension-provider-local");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("NAMESPACE").output().expect("the binary runs")
}

#[tokio::test]
async fn main_serves_readyz_takes_the_lease_and_releases_it_on_sigterm() {
    let cluster = TestCluster::start().await.expect("a test API server");
    cluster.namespace("extension-provider-local").await.expect("namespace");
    let addr = free_address().unwrap();
    let backup = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "--kubeconfig",
        cluster.env.kubeconfig_path().to_str().unwrap(),
        "--metrics-bind-address",
        &addr.to_string(),
        "--leader-election-namespace=extension-provider-local",
        "--backup-root",
        backup.path().to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut child = Binary::spawn(BIN, &args).expect("started");
    child.wait_ready(addr, Duration::from_secs(60)).await.unwrap();
    let metrics = http_get(addr, "/metrics").expect("/metrics answers");
    assert!(metrics.contains(" 200 ") && metrics.contains("text/plain; version=0.0.4"), "{metrics}");

    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "extension-provider-local");
    let lease = leases.get("provider-local-leader-election").await.expect("the leader Lease exists");
    let holder = lease.spec.and_then(|s| s.holder_identity).unwrap_or_default();
    assert!(!holder.is_empty(), "the Lease has a holder");

    let (status, stderr) = child.stop(Duration::from_secs(30)).await.unwrap();
    assert!(status.success(), "clean exit after SIGTERM: {status}\n{stderr}");
    let lease = leases.get("provider-local-leader-election").await.expect("the Lease is still there");
    let holder = lease.spec.and_then(|s| s.holder_identity).unwrap_or_default();
    assert!(holder.is_empty(), "the Lease is released on shutdown, holder {holder:?}");
}

#[test]
fn a_missing_kubeconfig_is_named_with_its_cause() {
    let out = run(&["--kubeconfig", "/nonexistent/kubeconfig"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error: reading the kubeconfig /nonexistent/kubeconfig"), "{err}");
    assert!(err.contains("caused by:"), "{err}");
    assert!(!err.contains("Os {"), "{err}");
}

#[test]
fn help_and_bad_flags() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in ["--kubeconfig", "--metrics-bind-address", "--log-level", "--log-format", "--controllers"] {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
    let out = run(&["--controllers=worker,nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
}
