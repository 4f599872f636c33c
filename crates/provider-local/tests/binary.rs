//! The provider-local binary as it runs in a seed, against a real API server: it serves
//! `/readyz` and `/metrics` on `--metrics-bind-address`, takes its leader Lease, and on SIGTERM
//! stops cleanly and releases the Lease. Bad flags and a bad kubeconfig stop it with messages
//! for people.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use extension_sdk::k8s_openapi::api::coordination::v1::Lease;
use extension_sdk::kube::Api;
use extension_sdk::testing::TestCluster;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_gardener-extension-provider-local");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("NAMESPACE").output().expect("the binary runs")
}

fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

struct Running(Child);
impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn main_serves_readyz_takes_the_lease_and_releases_it_on_sigterm() {
    let cluster = TestCluster::start().await.expect("a test API server");
    cluster.namespace("extension-provider-local").await.expect("namespace");
    let addr = free_port();
    let backup = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args([
            "--kubeconfig",
            cluster.env.kubeconfig_path().to_str().unwrap(),
            "--metrics-bind-address",
            &addr.to_string(),
            "--leader-election-namespace=extension-provider-local",
            "--backup-root",
            backup.path().to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("started");
    let mut child = Running(child);

    let start = Instant::now();
    loop {
        if get(addr, "/readyz").is_some_and(|r| r.starts_with("HTTP/1.0 200") || r.starts_with("HTTP/1.1 200")) {
            break;
        }
        assert!(child.0.try_wait().unwrap().is_none(), "the binary exited early");
        assert!(start.elapsed() < Duration::from_secs(60), "/readyz never answered 200");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let metrics = get(addr, "/metrics").expect("/metrics answers");
    assert!(metrics.contains(" 200 ") && metrics.contains("text/plain; version=0.0.4"), "{metrics}");

    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "extension-provider-local");
    let lease = leases.get("provider-local-leader-election").await.expect("the leader Lease exists");
    let holder = lease.spec.and_then(|s| s.holder_identity).unwrap_or_default();
    assert!(!holder.is_empty(), "the Lease has a holder");

    let pid = child.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "SIGTERM did not stop the binary");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut stderr = String::new();
    child.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
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
