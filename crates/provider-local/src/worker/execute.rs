//! Carrying out a pool's roll-out ([`super::rollout`]) against the seed (machine Pods) and the
//! shoot (cordon, evictions), and what the Worker's status says about it.

use super::drain::{self, rfc3339};
use super::nodes::ShootView;
use super::pods::Machines;
use super::rollout::{self, DrainVerdict, Machine};
use crate::error::Error;
use extension_sdk::api::extensions::worker::WorkerPool;
use extension_sdk::k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A pool's roll-out as the Worker's `status.providerStatus.rollouts` reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolRollout {
    pub pool: String,
    /// Machines the pool should have.
    pub desired: u32,
    /// Machines of the current class that serve.
    pub updated: u32,
    /// Machines that exist, old and new, draining or not.
    pub machines: u32,
    /// Machines being drained, with what holds them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub draining: Vec<DrainStatus>,
    /// The last drain that ended at its timeout, with the pods deleted for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_forced_drain: Option<ForcedDrain>,
    /// Whether the pool is where it should be.
    pub settled: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainStatus {
    pub machine: String,
    /// When the drain began (RFC 3339).
    pub since: String,
    /// When the remaining pods are deleted regardless of their budgets (RFC 3339).
    pub deadline: String,
    /// Pods still on the node.
    pub remaining: Vec<String>,
    /// Pods whose eviction was refused, with the reason (a PodDisruptionBudget).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_by: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForcedDrain {
    pub machine: String,
    /// When the timeout ended the drain (RFC 3339).
    pub at: String,
    /// Pods deleted without their budget's consent.
    pub pods: Vec<String>,
}

/// One pool's reconcile.
pub(super) struct PoolRun<'a> {
    pub machines: &'a Machines,
    /// The shoot, when it can be reached at all (see [`super::nodes::observe`]).
    pub view: Option<&'a ShootView>,
    pub pool: &'a WorkerPool,
    pub hash: &'a str,
    pub image: &'a str,
    pub backup_store: Option<&'a str>,
    pub want: u32,
    /// A hibernating pool's machines go at once: the shoot's workloads stop with it.
    pub hibernated: bool,
    pub drain_timeout_seconds: i64,
    /// The pool's status from the Worker's last reconcile.
    pub previous: Option<PoolRollout>,
}

impl PoolRun<'_> {
    /// Whether a machine serves: with no shoot to ask (a Worker outside a gardenlet-managed
    /// shoot), as soon as it exists.
    fn serves(&self, name: &str) -> bool {
        self.view.is_none_or(|v| v.serves(name))
    }

    async fn observe(&self) -> Result<Vec<Machine>, Error> {
        let mut machines = self.machines.list_pool(&self.pool.name).await?;
        for m in &mut machines {
            m.serves = self.serves(&m.name);
        }
        Ok(machines)
    }

    /// Runs the roll-out as far as it can go now: every decision whose effect is immediate
    /// (with no shoot to wait for, all of them) is followed by the next.
    pub async fn run(&self) -> Result<PoolRollout, Error> {
        let (surge, unavailable) = super::desired::rollout_limits(self.pool, self.want);
        let mut status = PoolRollout {
            pool: self.pool.name.clone(),
            desired: self.want,
            last_forced_drain: self.previous.as_ref().and_then(|p| p.last_forced_drain.clone()),
            ..Default::default()
        };
        let mut machines = self.observe().await?;
        // Each machine's drain gets one round of evictions per reconcile, however many rounds of
        // decisions follow; its status entry is from that round.
        let mut drained = BTreeSet::new();
        // Each round removes or adds at least one machine, or ends.
        for _ in 0..2 * (self.want as usize + machines.len()) + 4 {
            if self.hibernated {
                for m in &machines {
                    self.machines.delete(&m.name).await?;
                }
                machines.clear();
                break;
            }
            let mut changed = false;
            for m in machines.iter().filter(|m| m.draining_since.is_some()) {
                if drained.insert(m.name.clone()) {
                    changed |= self.drain(m, &mut status).await?;
                }
            }
            let mut plan = rollout::plan(self.want, self.hash, &machines, surge, unavailable);
            if self.view.is_some_and(|v| !v.reachable) {
                plan.drain.clear();
            }
            for &index in &plan.create {
                self.machines.create(self.pool, self.hash, index, self.image, self.backup_store).await?;
            }
            let now = Timestamp::now().as_second();
            for name in &plan.drain {
                tracing::info!(machine = name, "draining machine");
                self.machines.mark_draining(name, now).await?;
            }
            if !changed && plan.is_empty() {
                break;
            }
            machines = self.observe().await?;
        }
        status.machines = machines.len() as u32;
        status.updated =
            machines.iter().filter(|m| m.hash == self.hash && m.serves && m.draining_since.is_none()).count() as u32;
        status.settled = rollout::converged(self.want, self.hash, &machines);
        Ok(status)
    }

    /// One round of a machine's drain; true when the machine was removed.
    async fn drain(&self, m: &Machine, status: &mut PoolRollout) -> Result<bool, Error> {
        let since = m.draining_since.unwrap_or_default();
        let Some(view) = self.view else {
            self.machines.delete(&m.name).await?;
            return Ok(true);
        };
        let deadline = since.saturating_add(self.drain_timeout_seconds);
        let mut pending = DrainStatus {
            machine: m.name.clone(),
            since: rfc3339(since),
            deadline: rfc3339(deadline),
            ..Default::default()
        };
        if !view.reachable {
            pending.blocked_by.push("the shoot's API server is not reachable".into());
            status.draining.push(pending);
            return Ok(false);
        }
        let context = || format!("draining the Node of machine {} in the shoot", m.name);
        let progress = drain::evict(&view.client, &m.name).await.map_err(Error::kube(context()))?;
        let now = Timestamp::now().as_second();
        match rollout::drain_verdict(progress.remaining.len(), since, now, self.drain_timeout_seconds) {
            DrainVerdict::Done => {
                tracing::info!(machine = m.name, seconds = now - since, "drained; removing the machine");
            }
            DrainVerdict::TimedOut => {
                tracing::warn!(machine = m.name, pods = ?progress.remaining, blocked = ?progress.blocked,
                    "the drain timeout has passed; deleting the remaining pods and the machine");
                drain::force(&view.client, &m.name, &progress.remaining).await.map_err(Error::kube(context()))?;
                status.last_forced_drain =
                    Some(ForcedDrain { machine: m.name.clone(), at: rfc3339(now), pods: progress.remaining });
            }
            DrainVerdict::Continue => {
                pending.remaining = progress.remaining;
                pending.blocked_by = progress.blocked;
                status.draining.push(pending);
                return Ok(false);
            }
        }
        self.machines.delete(&m.name).await?;
        Ok(true)
    }
}
