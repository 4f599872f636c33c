//! Small actuators on the extension SDK that stand in for a provider (test code only). They
//! do nothing in any cloud; they count calls, can be told to fail with an error code, keep a
//! random `id` in their state (so a lost state shows as a new id), can be held in migrate and
//! restore, and (BackupEntry) keep a directory per entry under a shared root, as
//! provider-local does.

use api::common::ErrorCode;
use extension_sdk::kinds::{ExtensionResource, OscOutput};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Succeeds, unless `fail_first` reconciles remain: those fail with `code`.
pub struct TestActuator {
    pub calls: Arc<AtomicUsize>,
    /// `Cluster` hibernation as seen by each reconcile.
    pub hibernated_seen: Arc<std::sync::Mutex<Vec<bool>>>,
    pub fail_first: Arc<AtomicUsize>,
    pub code: ErrorCode,
    /// The message of those failures.
    pub fail_message: Arc<std::sync::Mutex<String>>,
    /// Migrate and restore wait while this lock is held (to interrupt a gardenlet there).
    pub hold: Arc<tokio::sync::Mutex<()>>,
    /// BackupEntry: entries are directories `<root>/<bucket>/<entry>`.
    pub backup_root: Option<Arc<std::path::PathBuf>>,
}

/// The state an object keeps: its id, or a fresh one for an object that has none.
fn state_of(status: Option<&api::extensions::DefaultStatus>) -> serde_json::Value {
    let id = status
        .and_then(|s| s.state.as_ref())
        .and_then(|s| s.0.get("id").and_then(|i| i.as_str()).map(str::to_string))
        .unwrap_or_else(|| format!("{:016x}", fastrand::u64(..)));
    serde_json::json!({"reconciled": true, "id": id})
}

impl TestActuator {
    pub fn new() -> Self {
        Self {
            calls: Arc::default(),
            hibernated_seen: Arc::default(),
            fail_first: Arc::default(),
            code: ErrorCode::InfraRateLimitsExceeded,
            fail_message: Arc::new(std::sync::Mutex::new("simulated provider error: rate limit exceeded".into())),
            hold: Arc::default(),
            backup_root: None,
        }
    }

    /// BackupEntries become directories under `root`.
    pub fn with_backup_root(mut self, root: &std::path::Path) -> Self {
        self.backup_root = Some(Arc::new(root.to_path_buf()));
        self
    }

    /// A second actuator sharing this one's counters and failure switch.
    pub fn handle(&self) -> Self {
        Self {
            calls: self.calls.clone(),
            hibernated_seen: self.hibernated_seen.clone(),
            fail_first: self.fail_first.clone(),
            code: self.code,
            fail_message: self.fail_message.clone(),
            hold: self.hold.clone(),
            backup_root: self.backup_root.clone(),
        }
    }

    fn maybe_fail(&self) -> Result<(), ActuatorError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let remaining = self.fail_first.load(Ordering::SeqCst);
        if remaining > 0 {
            self.fail_first.store(remaining.saturating_sub(1), Ordering::SeqCst);
            let message = self.fail_message.lock().unwrap().clone();
            return Err(ActuatorError::new(message).with_codes([self.code]));
        }
        Ok(())
    }
}

macro_rules! plain_actuator {
    ($($kind:ty),*) => {$(
        impl Actuator<$kind> for TestActuator {
            async fn reconcile(&self, obj: &$kind, cluster: &ClusterContext) -> Result<Outcome<$kind>, ActuatorError> {
                self.maybe_fail()?;
                self.hibernated_seen.lock().unwrap().push(cluster.is_hibernated());
                Ok(Outcome::done().with_state(state_of(api::extensions::ExtensionKind::default_status(obj))))
            }
            async fn delete(&self, _: &$kind, _: &ClusterContext) -> Result<(), ActuatorError> {
                Ok(())
            }
            async fn migrate(&self, _: &$kind, _: &ClusterContext) -> Result<Outcome<$kind>, ActuatorError> {
                drop(self.hold.lock().await);
                Ok(Outcome::done())
            }
            async fn restore(&self, obj: &$kind, cluster: &ClusterContext) -> Result<Outcome<$kind>, ActuatorError> {
                drop(self.hold.lock().await);
                self.reconcile(obj, cluster).await
            }
        }
    )*};
}

plain_actuator!(
    api::extensions::Infrastructure,
    api::extensions::DNSRecord,
    api::extensions::ControlPlane,
    api::extensions::Network,
    api::extensions::Worker,
    api::extensions::Extension
);

impl Actuator<api::extensions::BackupEntry> for TestActuator {
    async fn reconcile(
        &self,
        entry: &api::extensions::BackupEntry,
        _: &ClusterContext,
    ) -> Result<Outcome<api::extensions::BackupEntry>, ActuatorError> {
        self.maybe_fail()?;
        let state = state_of(api::extensions::ExtensionKind::default_status(entry));
        let Some(root) = &self.backup_root else { return Ok(Outcome::done().with_state(state)) };
        let dir = root.join(&entry.spec.bucket_name).join(entry.metadata.name.as_deref().unwrap_or_default());
        std::fs::create_dir_all(&dir).map_err(|e| ActuatorError::new(format!("creating {}: {e}", dir.display())))?;
        Ok(Outcome::done().with_state(state).with_provider_status(serde_json::json!({"hostPath": dir})))
    }
    async fn delete(&self, entry: &api::extensions::BackupEntry, _: &ClusterContext) -> Result<(), ActuatorError> {
        if let Some(root) = &self.backup_root {
            let dir = root.join(&entry.spec.bucket_name).join(entry.metadata.name.as_deref().unwrap_or_default());
            let _ = std::fs::remove_dir_all(dir);
        }
        Ok(())
    }
}

impl Actuator<api::extensions::OperatingSystemConfig> for TestActuator {
    async fn reconcile(
        &self,
        osc: &api::extensions::OperatingSystemConfig,
        _: &ClusterContext,
    ) -> Result<Outcome<api::extensions::OperatingSystemConfig>, ActuatorError> {
        self.maybe_fail()?;
        let script = format!("#!/bin/sh\n# {} files, {} units\n", osc.spec.files.len(), osc.spec.units.len());
        Ok(Outcome::done().with_output(OscOutput { user_data: script.into_bytes(), ..Default::default() }))
    }
    async fn delete(
        &self,
        _: &api::extensions::OperatingSystemConfig,
        _: &ClusterContext,
    ) -> Result<(), ActuatorError> {
        Ok(())
    }
}

/// Runs an SDK controller for `K` with the actuator until the task is aborted.
pub fn spawn_controller<K>(client: kube::Client, types: &[&str], actuator: TestActuator) -> tokio::task::JoinHandle<()>
where
    K: ExtensionResource,
    TestActuator: Actuator<K>,
{
    let registry = prometheus::Registry::new();
    let metrics = extension_sdk::Metrics::new(&registry, &format!("test_{}", fastrand::u32(..))).expect("metrics");
    let controller = extension_sdk::ExtensionController::<K, TestActuator>::new(
        client,
        actuator,
        extension_sdk::ControllerConfig::new(types.iter().copied()),
        metrics,
    );
    tokio::spawn(controller.run(std::future::pending()))
}

/// The bastion's address the stand-in reports (no host is started).
pub const BASTION_STAND_IN_IP: &str = "10.99.0.7";

impl Actuator<api::extensions::Bastion> for TestActuator {
    async fn reconcile(
        &self,
        _: &api::extensions::Bastion,
        _: &ClusterContext,
    ) -> Result<Outcome<api::extensions::Bastion>, ActuatorError> {
        self.maybe_fail()?;
        Ok(Outcome::done().with_status(|s: &mut api::extensions::BastionStatus| {
            s.ingress = Some(k8s_openapi::api::core::v1::LoadBalancerIngress {
                ip: Some(BASTION_STAND_IN_IP.into()),
                ..Default::default()
            })
        }))
    }
    async fn delete(&self, _: &api::extensions::Bastion, _: &ClusterContext) -> Result<(), ActuatorError> {
        Ok(())
    }
}
