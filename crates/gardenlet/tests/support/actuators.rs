//! Small actuators on the extension SDK that stand in for a provider (test code only). They
//! do nothing in any cloud; they count calls and can be told to fail with an error code.

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
}

impl TestActuator {
    pub fn new() -> Self {
        Self {
            calls: Arc::default(),
            hibernated_seen: Arc::default(),
            fail_first: Arc::default(),
            code: ErrorCode::InfraRateLimitsExceeded,
        }
    }

    /// A second actuator sharing this one's counters and failure switch.
    pub fn handle(&self) -> Self {
        Self {
            calls: self.calls.clone(),
            hibernated_seen: self.hibernated_seen.clone(),
            fail_first: self.fail_first.clone(),
            code: self.code,
        }
    }

    fn maybe_fail(&self) -> Result<(), ActuatorError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let remaining = self.fail_first.load(Ordering::SeqCst);
        if remaining > 0 {
            self.fail_first.store(remaining.saturating_sub(1), Ordering::SeqCst);
            return Err(ActuatorError::new("simulated provider error: rate limit exceeded").with_codes([self.code]));
        }
        Ok(())
    }
}

macro_rules! plain_actuator {
    ($($kind:ty),*) => {$(
        impl Actuator<$kind> for TestActuator {
            async fn reconcile(&self, _: &$kind, cluster: &ClusterContext) -> Result<Outcome<$kind>, ActuatorError> {
                self.maybe_fail()?;
                self.hibernated_seen.lock().unwrap().push(cluster.is_hibernated());
                Ok(Outcome::done().with_state(serde_json::json!({"reconciled": true})))
            }
            async fn delete(&self, _: &$kind, _: &ClusterContext) -> Result<(), ActuatorError> {
                Ok(())
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
    api::extensions::Extension,
    api::extensions::BackupEntry
);

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
