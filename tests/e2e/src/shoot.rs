//! The shoot of one end-to-end case. Cases run side by side on one local garden, so each owns
//! its shoot: the name derives from the case (`e2e-<case>`, in the project `local`), its node
//! range is its own, and the shoot is pinned to the seed `local` (another case may register a
//! second seed meanwhile). Dropping a [`CaseShoot`] that was not deleted by its case deletes the
//! shoot (also when the case panics), so a failure leaves nothing behind for the host
//! comparison at the end of `make e2e`.

use crate::garden::{Garden, NAMESPACE, SHOOT};
use crate::{kubectl, repo_root};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use std::time::{Duration, Instant};

/// The project every case's shoot lives in (`example/shoot.yaml`'s).
pub const PROJECT: &str = "local";
pub const PROJECT_NS: &str = "garden-local";
/// Gardener gives its e2e create test 15 minutes on 8 CPUs; ours runs on 2, with other cases
/// beside it.
pub const CREATE_TIMEOUT: Duration = Duration::from_secs(600);
pub const DELETE_TIMEOUT: Duration = Duration::from_secs(600);
pub const STEP_TIMEOUT: Duration = Duration::from_secs(180);

/// One case's shoot.
#[derive(Debug)]
pub struct CaseShoot {
    pub name: String,
    /// The shoot's control-plane namespace in the seed.
    pub seed_ns: String,
    /// The namespace of its machines (provider-local's Pods).
    pub machine_ns: String,
    deleted: bool,
    /// The garden's API server for the polls, connected on first use (on the case's runtime).
    garden: tokio::sync::OnceCell<Garden>,
}

impl CaseShoot {
    /// Applies `example/shoot.yaml` as a user does, under the case's own name and node range
    /// (`10.<node_octet>.0.0/16`), pinned to the seed `local`.
    pub fn apply(case: &str, node_octet: u8) -> Self {
        Self::apply_with(case, node_octet, |_| {})
    }

    /// [`Self::apply`] with `edit` applied to the manifest first (settings a case needs).
    pub fn apply_with(case: &str, node_octet: u8, edit: impl FnOnce(&mut serde_json::Value)) -> Self {
        let shoot = manifest(case, node_octet, edit);
        let name = shoot["metadata"]["name"].as_str().unwrap_or_default().to_string();
        crate::apply(PROJECT_NS, &serde_yaml::to_string(&shoot).expect("the shoot as YAML"));
        let seed_ns = format!("shoot--{PROJECT}--{name}");
        Self {
            machine_ns: format!("{seed_ns}--machines"),
            seed_ns,
            name,
            deleted: false,
            garden: tokio::sync::OnceCell::new(),
        }
    }

    /// The garden, through one client (crate::garden: a kubectl per poll costs much more).
    pub async fn garden(&self) -> &Garden {
        self.garden.get_or_init(Garden::connect).await
    }

    /// A kubectl JSONPath template of the Shoot object.
    pub async fn field(&self, path: &str) -> Result<String, String> {
        self.garden().await.field(&SHOOT, Some(PROJECT_NS), &self.name, path).await
    }

    /// What an operator needs to see when a step fails: the shoot's status, the pods and last
    /// events of its namespaces in the seed, its Worker and its machine's log.
    pub fn diagnosis(&self) -> String {
        let status =
            kubectl(&["-n", PROJECT_NS, "get", "shoot", &self.name, "-o", "jsonpath={.status}"]).unwrap_or_else(|e| e);
        let mut out = format!("shoot {} status: {status}\n", self.name);
        for ns in [&self.seed_ns, &self.machine_ns] {
            let pods = kubectl(&["-n", ns, "get", "pods,pvc", "-o", "wide"]).unwrap_or_else(|e| e);
            let events = kubectl(&["-n", ns, "get", "events", "--sort-by=.lastTimestamp"]).unwrap_or_else(|e| e);
            let tail: Vec<&str> = events.lines().rev().take(15).collect();
            out.push_str(&format!(
                "{ns}:\n{pods}\nlast events:\n{}\n",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        let machine = kubectl(&["-n", &self.machine_ns, "logs", "-l", "worker.gardener.cloud/pool", "--tail=40"])
            .unwrap_or_else(|e| e);
        let worker =
            kubectl(&["-n", &self.seed_ns, "get", "worker", "-o", "jsonpath={.items[*].status.lastOperation}"])
                .unwrap_or_else(|e| e);
        out.push_str(&format!("worker: {worker}\nmachine log:\n{machine}\n"));
        out
    }

    /// Polls `probe` every second until it yields `Some`; fails naming `what`, the last error the
    /// probe returned and [`Self::diagnosis`] after `timeout`. Returns the value and the time taken.
    pub async fn wait<T, Fut: std::future::Future<Output = Result<Option<T>, String>>>(
        &self,
        what: &str,
        timeout: Duration,
        mut probe: impl FnMut() -> Fut,
    ) -> (T, Duration) {
        let start = Instant::now();
        let mut last = String::new();
        loop {
            match probe().await {
                Ok(Some(v)) => return (v, start.elapsed()),
                Ok(None) => {}
                Err(e) => last = e,
            }
            if start.elapsed() > timeout {
                panic!("shoot {}: {what}: not within {timeout:?}; last: {last}\n{}", self.name, self.diagnosis());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Waits until the creation succeeded (fails at once on a failed operation).
    pub async fn created(&self) -> Duration {
        let ((), took) = self
            .wait("the shoot's creation succeeds", CREATE_TIMEOUT, || async {
                let op = self.field("{.status.lastOperation.type}/{.status.lastOperation.state}").await?;
                assert!(!op.ends_with("/Failed"), "shoot {}: lastOperation {op}\n{}", self.name, self.diagnosis());
                Ok((op == "Create/Succeeded").then_some(()))
            })
            .await;
        took
    }

    /// The shoot's admin kubeconfig, as `hack/shoot-kubeconfig.sh` prints it.
    pub fn kubeconfig(&self) -> Result<String, String> {
        let out = std::process::Command::new(repo_root().join("hack/shoot-kubeconfig.sh"))
            .args([PROJECT, &self.name])
            .env("KUBECTL", crate::assets().join("kubectl"))
            .env("KUBECONFIG_FILE", crate::kubeconfig())
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// A client for the shoot's API server with the admin kubeconfig.
    pub async fn client(&self) -> Result<Client, String> {
        let kubeconfig = Kubeconfig::from_yaml(&self.kubeconfig()?).map_err(|e| e.to_string())?;
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        Client::try_from(config).map_err(|e| e.to_string())
    }

    /// Waits for a client whose API server answers.
    pub async fn ready_client(&self) -> Client {
        self.wait("a client for the shoot", STEP_TIMEOUT, || async {
            let client = self.client().await?;
            client.apiserver_version().await.map_err(|e| e.to_string())?;
            Ok(Some(client))
        })
        .await
        .0
    }

    /// Hibernates or wakes up the shoot, as a user does.
    pub fn set_hibernation(&self, enabled: bool) {
        let patch = format!(r#"{{"spec":{{"hibernation":{{"enabled":{enabled}}}}}}}"#);
        kubectl(&["-n", PROJECT_NS, "patch", "shoot", &self.name, "--type=merge", "-p", &patch]).unwrap();
    }

    /// The UIDs of the shoot's machine Pods (their cgroups on the host carry them).
    pub fn machine_pod_uids(&self) -> Vec<String> {
        kubectl(&["-n", &self.machine_ns, "get", "pods", "-o", "jsonpath={.items[*].metadata.uid}"])
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    /// Deletes the shoot as a user does (the confirmation annotation, then `kubectl delete`).
    fn request_deletion(&self) -> Result<(), String> {
        kubectl(&[
            "-n",
            PROJECT_NS,
            "annotate",
            "shoot",
            &self.name,
            "confirmation.gardener.cloud/deletion=true",
            "--overwrite",
        ])?;
        kubectl(&["-n", PROJECT_NS, "delete", "shoot", &self.name, "--wait=false"]).map(drop)
    }

    /// Deletes the shoot and waits until it and its namespaces in the seed are gone; returns how
    /// long the shoot took to go.
    pub async fn delete(&mut self) -> Duration {
        self.start_deletion();
        self.wait_gone().await
    }

    /// Requests the deletion as a user does, without waiting for it.
    pub fn start_deletion(&mut self) {
        self.request_deletion().unwrap();
        self.deleted = true;
    }

    /// Waits until the shoot and its namespaces in the seed are gone; returns how long the shoot
    /// took to go.
    pub async fn wait_gone(&self) -> Duration {
        let ((), deleted) = self
            .wait("the shoot is gone", DELETE_TIMEOUT, || async {
                self.garden().await.gone(&SHOOT, Some(PROJECT_NS), &self.name).await
            })
            .await;
        for ns in [self.seed_ns.clone(), self.machine_ns.clone()] {
            self.wait(&format!("namespace {ns} is gone"), STEP_TIMEOUT, || async {
                self.garden().await.gone(&NAMESPACE, None, &ns).await
            })
            .await;
        }
        deleted
    }
}

/// `example/shoot.yaml` as the case `case` applies it: named `e2e-<case>`, with its own node
/// range (`10.<node_octet>.0.0/16`), pinned to the seed `local`, then `edit`ed.
pub fn manifest(case: &str, node_octet: u8, edit: impl FnOnce(&mut serde_json::Value)) -> serde_json::Value {
    let example = std::fs::read_to_string(repo_root().join("example/shoot.yaml")).expect("example/shoot.yaml");
    let mut shoot: serde_json::Value = serde_yaml::from_str(&example).expect("example/shoot.yaml is YAML");
    shoot["metadata"]["name"] = format!("e2e-{case}").into();
    shoot["spec"]["seedName"] = "local".into();
    shoot["spec"]["networking"]["nodes"] = format!("10.{node_octet}.0.0/16").into();
    edit(&mut shoot);
    shoot
}

impl Drop for CaseShoot {
    fn drop(&mut self) {
        // A case that failed before deleting its shoot: delete it now, without waiting (the
        // teardown of the local cluster removes whatever is still running).
        if !self.deleted
            && let Err(e) = self.request_deletion()
        {
            eprintln!("shoot {}: deleting it after the case failed: {e}", self.name);
        }
    }
}
