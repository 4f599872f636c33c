//! Worker: one machine per pool member, as a Pod in the shoot's machine namespace (see
//! [`crate::infrastructure`]).
//!
//! Each pool has a machine class (a Secret `machine-class-<pool>-<hash>` with the user data,
//! mounted into its machines) and is scaled to its minimum, or to zero while the shoot is
//! hibernated. A changed machine spec rolls the pool (see [`desired`]). `status.state` lists
//! the machines with their UIDs; a migration leaves the Pods in place, and a restore adopts the
//! ones listed (same names, same UIDs) instead of recreating them.

pub mod desired;
pub mod drain;
mod execute;
mod nodes;
mod pods;
pub mod rollout;

use crate::common::{describe, ensure_namespace, provider_config, technical_id};
use crate::error::Error;
use crate::infrastructure::machine_namespace;
use desired::{CloudProfileConfig, PoolConfig, WorkerConfig};
pub use execute::{DrainStatus, ForcedDrain, PoolRollout};
use extension_sdk::api::extensions::Worker;
use extension_sdk::api::extensions::worker::MachineDeployment;
use extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use extension_sdk::k8s_openapi::jiff::Timestamp;
use extension_sdk::kube::Client;
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use pods::Machines;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::time::Duration;

pub use pods::{LABEL_CLASS, LABEL_POOL, machine_labels};

const COMPONENT: &str = "worker";
/// How often a Worker whose machines are not all running looks again.
const MACHINE_POLL: Duration = Duration::from_secs(3);

/// A machine as recorded in `status.state`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineRecord {
    pub name: String,
    pub pool: String,
    pub class_hash: String,
    pub uid: String,
}

/// `status.state` of a Worker.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerState {
    pub machines: Vec<MachineRecord>,
}

/// The CloudProfile's `spec.providerConfig` from the Cluster (empty when it has none).
fn cloud_profile_config(cluster: &ClusterContext, object: &str) -> Result<CloudProfileConfig, Error> {
    match cluster.cloud_profile().pointer("/spec/providerConfig") {
        None | Some(serde_json::Value::Null) => Ok(CloudProfileConfig::default()),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
            Error::config(
                object,
                "Cluster spec.cloudProfile.spec.providerConfig",
                format!("not a CloudProfileConfig: {e}"),
            )
        }),
    }
}

/// The pools' roll-outs from the Worker's last reconcile (`status.providerStatus.rollouts`).
fn previous_rollouts(worker: &Worker) -> Vec<PoolRollout> {
    worker
        .status
        .as_ref()
        .and_then(|s| s.default.provider_status.as_ref())
        .and_then(|p| p.as_value().get("rollouts").cloned())
        .and_then(|r| serde_json::from_value(r).ok())
        .unwrap_or_default()
}

/// The machine namespace: `machineNamespace` from the Infrastructure's providerStatus, else the
/// name Infrastructure would give it.
pub fn namespace_of(worker: &Worker, technical_id: &str) -> String {
    worker
        .spec
        .infrastructure_provider_status
        .as_ref()
        .and_then(|s| s.as_value().get("machineNamespace"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| machine_namespace(technical_id))
}

/// The name of a pool's machine deployment in the status.
pub fn deployment_name(technical_id: &str, pool: &str) -> String {
    format!("{technical_id}-{pool}")
}

/// The Worker actuator.
#[derive(Clone)]
pub struct LocalWorker {
    client: Client,
    default_image: Option<String>,
    backup_root: Option<String>,
}

crate::debug_without_client!(LocalWorker);

impl LocalWorker {
    /// `default_image` is used for pools whose provider config names no image.
    pub fn new(client: Client, default_image: Option<String>) -> Self {
        Self { client, default_image, backup_root: None }
    }

    /// The backup store (`--backup-root`, a directory of the seed host) that pools asking for
    /// it (`providerConfig.backupStore`) get mounted at the same path.
    pub fn with_backup_root(mut self, root: &std::path::Path) -> Self {
        self.backup_root = Some(root.to_string_lossy().into_owned());
        self
    }

    fn machines(&self, worker: &Worker) -> Result<Machines, Error> {
        let id = technical_id(worker)?;
        let namespace = namespace_of(worker, &id);
        Ok(Machines::new(self.client.clone(), namespace, id))
    }

    /// The container image of pool `i`'s machines and the backup store they mount, checked.
    fn pool_machine(
        &self,
        object: &str,
        i: usize,
        pool: &extension_sdk::api::extensions::worker::WorkerPool,
        worker_config: &WorkerConfig,
        profile: &CloudProfileConfig,
    ) -> Result<(String, Option<&str>), Error> {
        let field = format!("spec.pools[{i}]");
        let pool_config: PoolConfig =
            provider_config(pool.provider_config.as_ref(), object, &format!("{field}.providerConfig"))?;
        let image_config: PoolConfig = provider_config(
            pool.machine_image.provider_config.as_ref(),
            object,
            &format!("{field}.machineImage.providerConfig"),
        )?;
        let image =
            desired::resolve_image(pool, &pool_config, &image_config, worker_config, self.default_image.as_deref())
                .ok_or_else(|| {
                    Error::config(object, format!("{field}.providerConfig.image"), "no machine image named")
                })?;
        profile.check(pool).map_err(|e| Error::config(object, format!("{field}.machineImage.version"), e))?;
        if pool.minimum < 0 || pool.maximum < pool.minimum {
            return Err(Error::config(object, &field, "want 0 <= minimum <= maximum"));
        }
        let backup_store = match (pool_config.backup_store, self.backup_root.as_deref()) {
            (false, _) => None,
            (true, Some(root)) => Some(root),
            (true, None) => {
                return Err(Error::config(
                    object,
                    format!("{field}.providerConfig.backupStore"),
                    "this provider has no backup store to mount (the backupentry controller is off)",
                ));
            }
        };
        Ok((image, backup_store))
    }

    async fn ensure(&self, worker: &Worker, cluster: &ClusterContext) -> Result<Outcome<Worker>, Error> {
        let object = describe(worker);
        let machines = self.machines(worker)?;
        let labels = crate::infrastructure::machine_namespace_labels(&machines.technical_id, COMPONENT);
        ensure_namespace(&self.client, &machines.namespace, labels, COMPONENT).await?;
        let mut worker_config: WorkerConfig =
            provider_config(worker.spec.default.provider_config.as_ref(), &object, "spec.providerConfig")?;
        let profile = cloud_profile_config(cluster, &object)?;
        worker_config.machine_images.extend(profile.mappings());
        let hibernated = cluster.is_hibernated();
        let mut classes = BTreeSet::new();
        let mut pools = BTreeSet::new();
        let mut wanted = Vec::new();
        let mut rollouts = Vec::new();
        let previous = previous_rollouts(worker);
        // The shoot, unless it sleeps (its API server is going away).
        let view = if hibernated { None } else { nodes::observe(&self.client, &machines.technical_id).await };
        for (i, pool) in worker.spec.pools.iter().enumerate() {
            let (image, backup_store) = self.pool_machine(&object, i, pool, &worker_config, &profile)?;
            let hash = desired::class_hash(pool, &image);
            let want = if hibernated { 0 } else { pool.minimum as u32 };
            let drain_timeout_seconds = rollout::drain_timeout_seconds(
                pool.machine_controller_manager.as_ref().and_then(|m| m.machine_drain_timeout.as_deref()),
            )
            .map_err(|e| {
                Error::config(&object, format!("spec.pools[{i}].machineControllerManager.machineDrainTimeout"), e)
            })?;
            pools.insert(pool.name.clone());
            classes.insert(machines.class_secret_name(&pool.name, &hash));
            if want > 0 {
                machines.apply_class(&pool.name, &hash, &pool.user_data).await?;
            }
            let run = execute::PoolRun {
                machines: &machines,
                view: view.as_ref(),
                pool,
                hash: &hash,
                image: &image,
                backup_store,
                want,
                hibernated,
                drain_timeout_seconds,
                previous: previous.iter().find(|p| p.pool == pool.name).cloned(),
            };
            rollouts.push(run.run().await?);
            wanted.push((pool.name.as_str(), hash, want));
        }
        machines.delete_other_pools(&pools).await?;
        machines.delete_unused_classes(&classes).await?;

        let now = machines.snapshot().await?;
        let state = WorkerState { machines: now.records() };
        let mut waiting: u32 = wanted.iter().map(|(pool, hash, want)| now.not_running(pool, hash, *want)).sum();
        if let Some(view) = view.as_ref().filter(|_| waiting == 0) {
            // Running machines count once their Nodes are Ready, as Gardener's machine
            // controller counts them.
            waiting += nodes::sync(view, &now.live(), &worker.spec.pools).await as u32;
        }
        // A roll-out under way (a drain, a machine still to serve) is looked at again soon.
        waiting += rollouts.iter().filter(|r| !r.settled).count() as u32;
        // Machines still shutting down are followed until they are gone.
        waiting += now.terminating_count() as u32;
        let deployments: Vec<MachineDeployment> = worker
            .spec
            .pools
            .iter()
            .map(|p| MachineDeployment {
                name: deployment_name(&machines.technical_id, &p.name),
                minimum: p.minimum,
                maximum: p.maximum,
            })
            .collect();
        let changed = worker.status.as_ref().is_none_or(|s| s.machine_deployments != deployments);
        let state = serde_json::to_value(&state).map_err(|e| Error::config(&object, "status.state", e.to_string()))?;
        let provider_status = serde_json::json!({
            "machineNamespace": machines.namespace,
            "hibernated": hibernated,
            "rollouts": rollouts,
        });
        let outcome = Outcome::done().with_state(state).with_provider_status(provider_status);
        let outcome = if waiting > 0 {
            tracing::info!(waiting, "waiting for machines to run and their Nodes to be Ready");
            outcome.requeue(MACHINE_POLL)
        } else {
            outcome
        };
        Ok(outcome.with_status(move |s: &mut extension_sdk::api::extensions::WorkerStatus| {
            if changed {
                s.machine_deployments = deployments;
                s.machine_deployments_last_update_time = Some(Time(Timestamp::now()));
            }
        }))
    }
}

impl Actuator<Worker> for LocalWorker {
    #[tracing::instrument(skip_all, fields(worker = %describe(worker)))]
    async fn reconcile(&self, worker: &Worker, cluster: &ClusterContext) -> Result<Outcome<Worker>, ActuatorError> {
        Ok(self.ensure(worker, cluster).await?)
    }

    #[tracing::instrument(skip_all, fields(worker = %describe(worker)))]
    async fn delete(&self, worker: &Worker, _: &ClusterContext) -> Result<(), ActuatorError> {
        let machines = self.machines(worker)?;
        let remaining = machines.delete_all().await?;
        if remaining > 0 {
            tracing::info!(remaining, "waiting for machines to terminate");
            return Err(ActuatorError::requeue_after(Duration::from_secs(5)));
        }
        Ok(())
    }

    #[tracing::instrument(skip_all, fields(worker = %describe(worker)))]
    async fn migrate(&self, worker: &Worker, _: &ClusterContext) -> Result<Outcome<Worker>, ActuatorError> {
        // The machines keep running; the state tells the destination which ones to adopt.
        let machines = self.machines(worker)?;
        let state = WorkerState { machines: machines.records().await? };
        tracing::info!(machines = state.machines.len(), "migrating: leaving the machines in place");
        let state =
            serde_json::to_value(&state).map_err(|e| Error::config(describe(worker), "status.state", e.to_string()))?;
        Ok(Outcome::done().with_state(state))
    }

    #[tracing::instrument(skip_all, fields(worker = %describe(worker)))]
    async fn restore(&self, worker: &Worker, cluster: &ClusterContext) -> Result<Outcome<Worker>, ActuatorError> {
        let recorded: WorkerState = worker
            .status
            .as_ref()
            .and_then(|s| s.default.state.as_ref())
            .map(|s| s.decode())
            .transpose()
            .map_err(|e| Error::config(describe(worker), "status.state", e.to_string()))?
            .unwrap_or_default();
        let found = self.machines(worker)?.records().await?;
        let adopted = recorded.machines.iter().filter(|m| found.contains(m)).count();
        tracing::info!(recorded = recorded.machines.len(), adopted, "restoring: adopting existing machines");
        Ok(self.ensure(worker, cluster).await?)
    }
}
