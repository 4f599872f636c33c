//! The shoot care controller: refreshes the conditions of every shoot on this seed
//! (`APIServerAvailable`, `ControlPlaneHealthy`, `EveryNodeReady`, `SystemComponentsHealthy`)
//! on its own period (default one minute), independent of reconciles, so a broken control plane
//! shows within a period plus the threshold instead of at the next reconcile.
//!
//! It reads this seed's Shoots from the shoot controller's cache (one copy in memory, filled by
//! one watch that selects on the seed's label), and on every tick checks the shoots it cares for
//! ([`cared_for`]) a few at a time: the checks of [`crate::shoot::health::checks`] against the seed
//! namespace and the shoot's API server (with the admin kubeconfig gardenlet keeps in the seed),
//! folded into the conditions by [`conditions`]. The seed side of a tick is read from watches and
//! kept clients ([`cache`]), so a tick of an unchanged shoot costs the seed no request. The
//! status is written only when a condition changed, with the resourceVersion that was read (a
//! concurrent write wins; the next tick looks again). The clock is injectable. After etcd was
//! restored from backups, the kube-apiserver pods that started before the restore are restarted
//! once ([`after_restore`]).

pub mod after_restore;
pub mod cache;

use crate::shoot::health::checks::{self, Inputs};
use crate::shoot::status::conditions;
use api::common::LastOperationType;
use api::core::Shoot;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How long one request of a check to the shoot's API server may take before the check
/// counts as failed.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(20);

/// The time source (tests move it).
pub type Clock = Arc<dyn Fn() -> Time + Send + Sync>;

/// Settings of the care controller.
#[derive(Clone)]
pub struct CareController {
    pub garden: kube::Client,
    pub seed: kube::Client,
    pub seed_name: String,
    /// How often every shoot is checked.
    pub period: Duration,
    /// How long a failing condition stays `Progressing` before it turns `False`.
    pub threshold: Duration,
    /// Shoots checked at once.
    pub concurrency: usize,
    pub clock: Clock,
    /// The shoot controller's caches: the care controller reads this seed's Shoots from the
    /// same store instead of keeping a second copy.
    pub shoots: crate::shoot::caches::SharedCaches,
}

impl std::fmt::Debug for CareController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CareController")
            .field("seed", &self.seed_name)
            .field("period", &self.period)
            .field("threshold", &self.threshold)
            .finish_non_exhaustive()
    }
}

/// Why caring for one shoot failed (the next tick tries again).
#[derive(Debug, thiserror::Error)]
pub enum CareError {
    #[error("writing the conditions of shoot {shoot}")]
    Write {
        shoot: String,
        #[source]
        source: kube::Error,
    },
}

/// Pure: whether the care controller looks after `shoot`: it runs on `seed` (status and spec
/// agree, so not during a migration), it exists (a technical ID and a last operation), and no
/// operation is creating, deleting or migrating it (their flows set the conditions themselves).
pub fn cared_for(shoot: &Shoot, seed: &str) -> bool {
    let Some(status) = shoot.status.as_ref() else { return false };
    let Some(last) = status.last_operation.as_ref() else { return false };
    let creating = last.type_ == LastOperationType::Create && last.state != api::common::LastOperationState::Succeeded;
    shoot.metadata.deletion_timestamp.is_none()
        && shoot.spec.seed_name.as_deref() == Some(seed)
        && status.seed_name.as_deref() == Some(seed)
        && !status.technical_id.is_empty()
        && !creating
        && !matches!(last.type_, LastOperationType::Delete | LastOperationType::Migrate)
}

/// A running care controller: its settings and the caches its ticks read.
struct Running {
    settings: CareController,
    workloads: cache::Workloads,
    clients: cache::ShootClients,
    /// The etcd restore each seed namespace's API servers were restarted after.
    handled_restores: std::sync::Mutex<std::collections::HashMap<String, Time>>,
}

impl CareController {
    /// Runs until `stop` resolves.
    pub async fn run(self, stop: impl Future<Output = ()> + Send) {
        let reader = self.shoots.shoots();
        let (workloads, watches) = cache::Workloads::start(&self.seed);
        let this = Arc::new(Running {
            settings: self,
            workloads,
            clients: Default::default(),
            handled_restores: Default::default(),
        });
        let ticks = {
            let this = this.clone();
            async move {
                if reader.wait_until_ready().await.is_err() || !this.workloads.ready().await {
                    return;
                }
                let settings = &this.settings;
                let mut tick = tokio::time::interval(settings.period);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let shoots: Vec<Arc<Shoot>> =
                        reader.state().into_iter().filter(|s| cared_for(s, &settings.seed_name)).collect();
                    let namespaces: std::collections::HashSet<&str> =
                        shoots.iter().filter_map(|s| s.status.as_ref()).map(|s| s.technical_id.as_str()).collect();
                    this.clients.retain(&namespaces);
                    this.handled_restores
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .retain(|n, _| namespaces.contains(n.as_str()));
                    futures::stream::iter(shoots)
                        .for_each_concurrent(settings.concurrency.max(1), |shoot| {
                            let this = this.clone();
                            async move {
                                if let Err(e) = this.care(&shoot).await {
                                    tracing::warn!(shoot = %shoot.name_any(), error = %runtime::events::error_chain(&e), "shoot care");
                                }
                            }
                        })
                        .await;
                }
            }
        };
        tokio::select! {
            () = ticks => {}
            () = watches => {}
            () = stop => {}
        }
    }
}

impl Running {
    /// Checks one shoot and writes its conditions when they changed. Returns whether it wrote.
    #[tracing::instrument(skip_all, fields(shoot = %format!("{}/{}", shoot.namespace().unwrap_or_default(), shoot.name_any())))]
    async fn care(&self, shoot: &Shoot) -> Result<bool, CareError> {
        let Some(status) = shoot.status.as_ref() else { return Ok(false) };
        let namespace = status.technical_id.as_str();
        let settings = &self.settings;
        if !status.hibernated {
            self.restart_api_servers_after_a_restore(namespace).await;
        }
        let inputs = Inputs {
            seed: &settings.seed,
            namespace,
            hibernated: status.hibernated,
            expected_nodes: shoot.spec.provider.workers.iter().map(|w| w.minimum).sum(),
            kube_proxy_enabled: crate::components::kube_proxy::enabled(shoot),
            tunnel: !shoot.spec.provider.workers.is_empty(),
            shoot: if status.hibernated { Err(String::new()) } else { self.shoot_client(namespace).await },
            workloads: Some(&self.workloads),
        };
        let checks = checks::conditions_of(&inputs).await;
        let unreachable = checks.iter().any(|c| {
            c.type_ == api::helpers::constants::conditions::API_SERVER_AVAILABLE
                && c.status != api::common::ConditionStatus::True
        });
        if unreachable || status.hibernated {
            // Perhaps the kubeconfig changed: the next tick reads it again.
            self.clients.forget(namespace);
        }
        let now = (settings.clock)();
        let (conditions, changed) = conditions::next_conditions(&status.conditions, &checks, settings.threshold, &now);
        if !changed {
            return Ok(false);
        }
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": shoot.resource_version()},
            "status": {"conditions": conditions},
        });
        let api: Api<Shoot> = Api::namespaced(settings.garden.clone(), &shoot.namespace().unwrap_or_default());
        match api.patch_status(&shoot.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => Ok(true),
            // Someone wrote in between: the cache brings the new version, the next tick looks again.
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(source) => Err(CareError::Write { shoot: shoot.name_any(), source }),
        }
    }

    /// Restarts the API servers that started before etcd's latest restore, once per restore
    /// ([`after_restore`]); a failure is logged and tried again at the next tick.
    async fn restart_api_servers_after_a_restore(&self, namespace: &str) {
        let Some(at) = after_restore::restored_at(&self.workloads.etcd_pods(namespace)) else { return };
        let handled = |map: &std::collections::HashMap<String, Time>| map.get(namespace) == Some(&at);
        if handled(&self.handled_restores.lock().unwrap_or_else(|e| e.into_inner())) {
            return;
        }
        match after_restore::restart(&self.settings.seed, namespace, &at).await {
            Ok(restarted) => {
                if !restarted.is_empty() {
                    tracing::info!(%namespace, pods = ?restarted, restored_at = %at.0, "restarted kube-apiserver after etcd's restore");
                    self.clients.forget(namespace);
                }
                self.handled_restores.lock().unwrap_or_else(|e| e.into_inner()).insert(namespace.to_string(), at);
            }
            Err(e) => tracing::warn!(%namespace, error = %e, "restarting kube-apiserver after etcd's restore"),
        }
    }

    /// A client for the shoot's API server: the kept one, or one built from the admin
    /// kubeconfig in its seed namespace.
    async fn shoot_client(&self, namespace: &str) -> Result<kube::Client, String> {
        let now = std::time::Instant::now();
        if let Some(client) = self.clients.fresh(namespace, now) {
            return Ok(client);
        }
        let client =
            crate::shoot::operation::clients::from_admin_secret(&self.settings.seed, namespace, CHECK_TIMEOUT).await?;
        self.clients.keep(namespace, client.clone(), now);
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;
    use serde_json::json;

    fn shoot(spec_seed: &str, status_seed: &str, op: &str, state: &str) -> Shoot {
        serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "garden-dev"},
            "spec": {"seedName": spec_seed, "region": "r", "provider": {"type": "local"}},
            "status": {"seedName": status_seed, "technicalID": "shoot--dev--s", "hibernated": false,
                       "lastOperation": {"type": op, "state": state, "progress": 100, "description": "",
                                         "lastUpdateTime": "2026-01-01T00:00:00Z"}}
        }))
        .unwrap()
    }

    #[test]
    fn only_existing_shoots_of_this_seed_outside_create_delete_and_migrate_are_cared_for() {
        assert!(cared_for(&shoot("a", "a", "Reconcile", "Succeeded"), "a"));
        assert!(cared_for(&shoot("a", "a", "Reconcile", "Error"), "a"), "a failing reconcile is cared for");
        assert!(cared_for(&shoot("a", "a", "Create", "Succeeded"), "a"));
        assert!(!cared_for(&shoot("a", "a", "Create", "Processing"), "a"));
        assert!(!cared_for(&shoot("a", "a", "Delete", "Processing"), "a"));
        assert!(!cared_for(&shoot("b", "a", "Migrate", "Processing"), "a"));
        assert!(!cared_for(&shoot("b", "b", "Reconcile", "Succeeded"), "a"), "another seed's shoot");
        let mut new = shoot("a", "a", "Reconcile", "Succeeded");
        new.status = None;
        assert!(!cared_for(&new, "a"));
    }
}
