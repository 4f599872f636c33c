//! Shared helpers of the end-to-end tests: the running local cluster (its kubeconfig, kubectl,
//! the `local-cluster` binary and its inputs, from the environment `hack/e2e.sh` sets), waits
//! that print what they last saw, and a namespace per test that is deleted even when the test
//! fails.
//!
//! The tests need a running cluster; without one they fail and name `make e2e`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

pub mod garden;
pub mod shoot;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a wait may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// The checkout's root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The state directory of the local cluster under test.
pub fn state_dir() -> PathBuf {
    std::env::var_os("LOCAL_CLUSTER_STATE").map(PathBuf::from).unwrap_or_else(|| repo_root().join(".local"))
}

pub fn kubeconfig() -> PathBuf {
    state_dir().join("kubeconfig")
}

fn required_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run the end-to-end tests with `make e2e`"))
}

/// The directory with the Kubernetes binaries (kubectl among them).
pub fn assets() -> PathBuf {
    PathBuf::from(required_env("E2E_ASSETS"))
}

/// The image archives directory.
pub fn images() -> PathBuf {
    PathBuf::from(required_env("E2E_IMAGES"))
}

/// The `local-cluster` binary.
pub fn local_cluster_bin() -> PathBuf {
    PathBuf::from(required_env("E2E_LOCAL_CLUSTER"))
}

/// A client for the running local cluster.
pub async fn client() -> Client {
    let path = kubeconfig();
    assert!(path.exists(), "{} does not exist: the local cluster is not up; run `make e2e`", path.display());
    local_cluster::up::client_from(&path).await.expect("a client from the local cluster's kubeconfig")
}

/// Runs kubectl (the one built with the cluster) against the local cluster; returns stdout, or
/// the failure with stderr.
pub fn kubectl(args: &[&str]) -> Result<String, String> {
    kubectl_with(&kubeconfig(), args)
}

/// Runs kubectl against the cluster of `kubeconfig` (a shoot's admin kubeconfig, say); returns
/// stdout, or the failure with stderr.
pub fn kubectl_with(kubeconfig: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(assets().join("kubectl"))
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .args(args)
        .output()
        .map_err(|e| format!("running kubectl: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("kubectl {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)))
    }
}

/// Applies a YAML manifest (possibly several documents) with kubectl.
pub fn apply(namespace: &str, yaml: &str) {
    if let Err(e) = try_apply(namespace, yaml) {
        panic!("{e}");
    }
}

/// `kubectl apply` of `yaml` in `namespace`: its output, or kubectl's error output (what a user
/// sees when the API server refuses the object).
pub fn try_apply(namespace: &str, yaml: &str) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new(assets().join("kubectl"))
        .arg(format!("--kubeconfig={}", kubeconfig().display()))
        .args(["apply", "-n", namespace, "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("running kubectl: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("kubectl has no stdin")?
        .write_all(yaml.as_bytes())
        .map_err(|e| format!("writing the manifest to kubectl: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("waiting for kubectl: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("kubectl apply failed: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

/// A namespace for one test, deleted on drop (also when the test panics).
pub struct TestNamespace {
    pub name: String,
}

impl TestNamespace {
    pub async fn create(client: &Client, prefix: &str) -> Self {
        let name = format!("{prefix}-{}", std::process::id());
        let ns: Namespace =
            serde_json::from_value(serde_json::json!({ "metadata": { "name": name } })).expect("namespace");
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.expect("namespace created");
        Self { name }
    }

    /// On failure: the namespace's pods, their phases and the last events, for diagnosis.
    pub fn describe(&self) -> String {
        let pods = kubectl(&["get", "pods", "-o", "wide", "-n", &self.name]).unwrap_or_else(|e| e);
        let events = kubectl(&["get", "events", "-n", &self.name, "--sort-by=.lastTimestamp"]).unwrap_or_else(|e| e);
        format!("pods:\n{pods}\nevents:\n{events}")
    }
}

impl std::fmt::Debug for TestNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestNamespace").field("name", &self.name).finish()
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        // kubectl, not the client: the client's connection lives on the test's runtime, which
        // is not polled while a destructor blocks it.
        let _ = kubectl(&["delete", "namespace", &self.name, "--wait=false"]);
    }
}

/// Polls `probe` until it yields `Some`, failing with `describe()` after [`TIMEOUT`].
pub async fn eventually<T, F, Fut>(what: &str, ns: &TestNamespace, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>, String>>,
{
    let start = Instant::now();
    let mut last = String::new();
    loop {
        match probe().await {
            Ok(Some(v)) => return v,
            Ok(None) => {}
            Err(e) => last = e,
        }
        assert!(start.elapsed() < TIMEOUT, "{what}: not within {TIMEOUT:?}; last: {last}\n{}", ns.describe());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until `selector`'s pods in the namespace are `count` and all Ready; returns them.
pub async fn ready_pods(client: &Client, ns: &TestNamespace, selector: &str, count: usize) -> Vec<Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    eventually(&format!("{count} Ready pods {selector}"), ns, || {
        let api = api.clone();
        async move {
            let pods = api.list(&kube::api::ListParams::default().labels(selector)).await.map_err(|e| e.to_string())?;
            let ready: Vec<Pod> = pods.items.into_iter().filter(local_cluster::up::pod_ready).collect();
            Ok((ready.len() == count).then_some(ready))
        }
    })
    .await
}

/// Waits until a pod ran to completion and returns its log (through the API server).
pub async fn completed_logs(client: &Client, ns: &TestNamespace, pod: &str) -> String {
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    eventually(&format!("pod {pod} completed"), ns, || {
        let api = api.clone();
        async move {
            let p = api.get(pod).await.map_err(|e| e.to_string())?;
            let phase = p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default();
            Ok(matches!(phase.as_str(), "Succeeded" | "Failed").then_some(()))
        }
    })
    .await;
    api.logs(pod, &Default::default()).await.expect("logs through the API server")
}

/// Waits until a running pod's log has its first line and returns the log (through the API
/// server). A container is Ready when it started, which can be before its first `echo` reached
/// the log file, so a log read right after Ready may be empty.
pub async fn written_logs(client: &Client, ns: &TestNamespace, pod: &str) -> String {
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    eventually(&format!("the log of pod {pod} has a line"), ns, || {
        let api = api.clone();
        async move {
            let log = api.logs(pod, &Default::default()).await.map_err(|e| e.to_string())?;
            Ok((!log.trim().is_empty()).then_some(log))
        }
    })
    .await
}

pub fn name_of(pod: &Pod) -> String {
    pod.name_any()
}
