//! What a ManagedSeedSet does next. Pure: the set and what exists of each replica in; one step
//! (create, delete or update one object of one replica, or wait) and the status out.
//!
//! The rules (GEP-13, "ManagedSeedSets"):
//! * Replica `i` of set `S` is the Shoot `S-i` and the ManagedSeed `S-i`; ordinals come from
//!   `status.nextReplicaNumber` and are never reused.
//! * One replica at a time. While any replica is not ready, nothing else starts: its next step
//!   is taken (the ManagedSeed once its Shoot reconciled) or the set waits, naming the replica
//!   and why in `status.pendingReplica`.
//! * Scale out: the Shoot of the next ordinal first.
//! * Scale in: one replica at a time, its ManagedSeed first, its Shoot once the ManagedSeed is
//!   gone. Only replicas whose seed hosts no shoots and whose ManagedSeed is not protected
//!   (`seedmanagement.gardener.cloud/protect-from-deletion`) are candidates; among them the
//!   least advanced goes first, then a not-ready seed, then the lower
//!   `seedmanagement.gardener.cloud/priority` (default 3), then the higher ordinal (see
//!   [`pick_to_delete`]). Without a candidate the scale-in is blocked and says so.
//! * Rolling update: once the count is right and every replica is ready, the replica with the
//!   highest ordinal at or above the partition whose revision is not the update revision is
//!   updated in place (its Shoot and ManagedSeed specs), then the set waits for it again.
//! * Deleting the set: replicas go in descending ordinal order, ManagedSeed before Shoot; then
//!   the finalizer.

use api::common::{ConditionStatus, LastOperationState, LastOperationType};
use api::helpers::conditions::{ConditionUpdate, set_condition};
use api::seedmanagement::{ManagedSeedSet, ManagedSeedSetStatus, PendingReplica, PendingReplicaReason};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::cmp::Reverse;

/// The label holding the revision of the templates a replica was created or last updated from
/// (StatefulSet's label, which GEP-13 adopts).
pub const LABEL_REVISION: &str = "controller-revision-hash";
/// A ManagedSeed with this annotation set to `"true"` is never chosen for a scale-in.
pub const ANNOTATION_PROTECT_FROM_DELETION: &str = "seedmanagement.gardener.cloud/protect-from-deletion";
/// ManagedSeeds with a lower priority are deleted first on scale-in.
pub const ANNOTATION_PRIORITY: &str = "seedmanagement.gardener.cloud/priority";
pub const DEFAULT_PRIORITY: i32 = 3;
/// The condition summarising the set.
pub const CONDITION_REPLICAS_READY: &str = "ReplicasReady";

/// What exists of a replica's Shoot.
#[derive(Clone, Debug, PartialEq)]
pub struct ShootFacts {
    pub deleting: bool,
    /// `status.observedGeneration == metadata.generation`.
    pub generation_observed: bool,
    pub last_operation: Option<(LastOperationType, LastOperationState)>,
    /// The health conditions (API server, control plane, nodes, system components) are True.
    pub healthy: bool,
    pub revision: Option<String>,
}

/// What exists of a replica's ManagedSeed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManagedSeedFacts {
    pub deleting: bool,
    pub revision: Option<String>,
    pub protected: bool,
    pub priority: i32,
}

/// One replica: whatever of its Shoot, ManagedSeed and Seed exists.
#[derive(Clone, Debug, PartialEq)]
pub struct Replica {
    pub ordinal: i32,
    pub shoot: Option<ShootFacts>,
    pub managed_seed: Option<ManagedSeedFacts>,
    /// The Seed named like the ManagedSeed: `Some(ready)` when it exists, ready meaning
    /// `GardenletReady=True`.
    pub seed_ready: Option<bool>,
    /// Shoots scheduled onto the replica's seed (counted only when scaling in).
    pub scheduled_shoots: usize,
}

/// How far a replica got, from least to most advanced (the order scale-in prefers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    ShootMissing,
    ShootReconcileFailed,
    ShootDeleteFailed,
    ShootReconciling,
    ShootDeleting,
    /// The Shoot reconciled; no ManagedSeed yet.
    ShootReconciled,
    /// The ManagedSeed exists, its Seed does not (yet).
    ManagedSeedPreparing,
    ManagedSeedDeleting,
    /// The Seed exists.
    Registered,
}

impl Replica {
    pub fn phase(&self) -> Phase {
        let ms_deleting = self.managed_seed.as_ref().is_some_and(|m| m.deleting);
        let Some(shoot) = &self.shoot else {
            return if ms_deleting { Phase::ManagedSeedDeleting } else { Phase::ShootMissing };
        };
        let failed = matches!(
            shoot.last_operation,
            Some((_, LastOperationState::Error | LastOperationState::Failed | LastOperationState::Aborted))
        );
        if ms_deleting {
            Phase::ManagedSeedDeleting
        } else if shoot.deleting {
            if failed { Phase::ShootDeleteFailed } else { Phase::ShootDeleting }
        } else if !shoot_reconciled(shoot) {
            if failed { Phase::ShootReconcileFailed } else { Phase::ShootReconciling }
        } else if self.managed_seed.is_none() {
            Phase::ShootReconciled
        } else if self.seed_ready.is_none() {
            Phase::ManagedSeedPreparing
        } else {
            Phase::Registered
        }
    }

    /// Registered, its Seed ready and its Shoot healthy.
    pub fn ready(&self) -> bool {
        self.phase() == Phase::Registered
            && self.seed_ready == Some(true)
            && self.shoot.as_ref().is_some_and(|s| s.healthy)
    }

    /// The revision of the templates the replica was made from (its Shoot's label, else its
    /// ManagedSeed's).
    pub fn revision(&self) -> Option<&str> {
        self.shoot
            .as_ref()
            .and_then(|s| s.revision.as_deref())
            .or_else(|| self.managed_seed.as_ref().and_then(|m| m.revision.as_deref()))
    }

    fn deletable(&self) -> bool {
        self.scheduled_shoots == 0 && !self.managed_seed.as_ref().is_some_and(|m| m.protected)
    }

    fn priority(&self) -> i32 {
        self.managed_seed.as_ref().map_or(DEFAULT_PRIORITY, |m| m.priority)
    }
}

fn shoot_reconciled(s: &ShootFacts) -> bool {
    s.generation_observed
        && matches!(s.last_operation, Some((t, LastOperationState::Succeeded)) if t != LastOperationType::Delete)
}

/// Everything the decision needs.
#[derive(Clone, Debug)]
pub struct Facts {
    pub deleting: bool,
    pub replicas_wanted: i32,
    pub partition: i32,
    pub update_revision: String,
    /// `status.nextReplicaNumber` as recorded.
    pub next_replica_number: i32,
    /// Sorted by ordinal.
    pub replicas: Vec<Replica>,
}

/// The one thing to do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Wait,
    CreateShoot(i32),
    CreateManagedSeed(i32),
    DeleteManagedSeed(i32),
    DeleteShoot(i32),
    /// Patch the Shoot and ManagedSeed specs of the replica to the update revision.
    Update(i32),
    RemoveFinalizer,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub step: Step,
    /// The replica the set is busy with and why it is not done.
    pub pending: Option<(i32, PendingReplicaReason)>,
    pub next_replica_number: i32,
    /// Why a scale-in cannot proceed.
    pub blocked: Option<String>,
}

/// The reason a not-ready replica is waited for, or the step that moves it on.
fn progress(r: &Replica) -> (Step, PendingReplicaReason) {
    use PendingReplicaReason as R;
    match r.phase() {
        Phase::ShootMissing => (Step::CreateShoot(r.ordinal), R::ShootReconciling),
        Phase::ShootReconcileFailed => (Step::Wait, R::ShootReconcileFailed),
        Phase::ShootDeleteFailed => (Step::Wait, R::ShootDeleteFailed),
        Phase::ShootReconciling => (Step::Wait, R::ShootReconciling),
        Phase::ShootDeleting => (Step::Wait, R::ShootDeleting),
        Phase::ShootReconciled => (Step::CreateManagedSeed(r.ordinal), R::ManagedSeedPreparing),
        Phase::ManagedSeedPreparing => (Step::Wait, R::ManagedSeedPreparing),
        Phase::ManagedSeedDeleting => (Step::Wait, R::ManagedSeedDeleting),
        Phase::Registered if r.seed_ready != Some(true) => (Step::Wait, R::SeedNotReady),
        Phase::Registered => (Step::Wait, R::ShootNotHealthy),
    }
}

/// The next step in taking `r` away: its ManagedSeed first, then its Shoot.
fn removal(r: &Replica) -> (Step, PendingReplicaReason) {
    use PendingReplicaReason as R;
    match (&r.managed_seed, &r.shoot) {
        (Some(m), _) if m.deleting => (Step::Wait, R::ManagedSeedDeleting),
        (Some(_), _) => (Step::DeleteManagedSeed(r.ordinal), R::ManagedSeedDeleting),
        (None, Some(_)) if r.phase() == Phase::ShootDeleteFailed => (Step::Wait, R::ShootDeleteFailed),
        (None, Some(s)) if s.deleting => (Step::Wait, R::ShootDeleting),
        (None, Some(_)) => (Step::DeleteShoot(r.ordinal), R::ShootDeleting),
        (None, None) => (Step::Wait, R::ShootDeleting),
    }
}

/// The replica a scale-in takes (GEP-13 "Prioritizing ManagedSeed Deletion"): only replicas
/// whose seed hosts no shoots and whose ManagedSeed is not protected; among those the least
/// advanced, then one whose seed is not ready, then the lowest priority, then the highest
/// ordinal. GEP-13 suggests the oldest as the last tie-break; the highest ordinal (the newest)
/// is what StatefulSets and Gardener's implementation do, and keeps a rolled-out canary
/// (partition) from being the survivor by accident.
pub fn pick_to_delete(replicas: &[Replica]) -> Option<&Replica> {
    replicas
        .iter()
        .filter(|r| r.deletable())
        .min_by_key(|r| (r.phase(), r.seed_ready == Some(true), r.priority(), Reverse(r.ordinal)))
}

pub fn decide(f: &Facts) -> Decision {
    let next = f.replicas.iter().map(|r| r.ordinal + 1).fold(f.next_replica_number.max(0), i32::max);
    let decision = |step, pending: Option<(i32, PendingReplicaReason)>| Decision {
        step,
        pending,
        next_replica_number: next,
        blocked: None,
    };
    if f.deleting {
        return match f.replicas.iter().max_by_key(|r| r.ordinal) {
            None => decision(Step::RemoveFinalizer, None),
            Some(r) => {
                let (step, reason) = removal(r);
                decision(step, Some((r.ordinal, reason)))
            }
        };
    }
    let count = i32::try_from(f.replicas.len()).unwrap_or(i32::MAX);
    if count > f.replicas_wanted {
        // A replica already on its way out is finished first.
        let leaving = f.replicas.iter().rev().find(|r| {
            r.managed_seed.as_ref().is_some_and(|m| m.deleting) || r.shoot.as_ref().is_some_and(|s| s.deleting)
        });
        return match leaving.or_else(|| pick_to_delete(&f.replicas)) {
            Some(r) => {
                let (step, reason) = removal(r);
                decision(step, Some((r.ordinal, reason)))
            }
            None => Decision {
                blocked: Some(format!(
                    "{} replica(s) must go, but every seed hosts shoots or is protected from deletion",
                    count - f.replicas_wanted
                )),
                ..decision(Step::Wait, None)
            },
        };
    }
    if let Some(r) = f.replicas.iter().rev().find(|r| !r.ready()) {
        let (step, reason) = progress(r);
        return decision(step, Some((r.ordinal, reason)));
    }
    if count < f.replicas_wanted {
        return Decision {
            next_replica_number: next + 1,
            ..decision(Step::CreateShoot(next), Some((next, PendingReplicaReason::ShootReconciling)))
        };
    }
    let outdated =
        f.replicas.iter().rev().find(|r| r.ordinal >= f.partition && r.revision() != Some(f.update_revision.as_str()));
    match outdated {
        Some(r) => decision(Step::Update(r.ordinal), Some((r.ordinal, PendingReplicaReason::ShootReconciling))),
        None => decision(Step::Wait, None),
    }
}

/// The status after `decision`: counts, revisions, the pending replica (its `since` kept while
/// name and reason stay), and the `ReplicasReady` condition.
pub fn status(set: &ManagedSeedSet, f: &Facts, decision: &Decision, now: &Time) -> ManagedSeedSetStatus {
    let old = set.status.clone().unwrap_or_default();
    let name = set.metadata.name.as_deref().unwrap_or_default();
    let count = |rev: &str| f.replicas.iter().filter(|r| r.revision() == Some(rev)).count();
    let replicas = f.replicas.len();
    let updated = count(&f.update_revision);
    let current_revision = if old.current_revision.is_empty() || (updated == replicas && decision.pending.is_none()) {
        f.update_revision.clone()
    } else {
        old.current_revision.clone()
    };
    let pending = decision.pending.map(|(ordinal, reason)| {
        let name = replica_name(name, ordinal);
        let since = match &old.pending_replica {
            Some(p) if p.name == name && p.reason == reason => p.since.clone(),
            _ => now.clone(),
        };
        let retries = old.pending_replica.as_ref().filter(|p| p.name == name).and_then(|p| p.retries);
        PendingReplica { name, reason, since, retries }
    });
    let ready = f.replicas.iter().filter(|r| r.ready()).count();
    let mut conditions = old.conditions.clone();
    let (status, reason, message) = match (&decision.blocked, &pending) {
        (Some(why), _) => (ConditionStatus::False, "ScaleInBlocked".to_string(), why.clone()),
        (None, Some(p)) => {
            (ConditionStatus::False, format!("{:?}", p.reason), format!("waiting for replica {}", p.name))
        }
        (None, None) if ready < replicas || i32::try_from(replicas).ok() != Some(f.replicas_wanted) => (
            ConditionStatus::False,
            "ReplicasNotReady".into(),
            format!("{ready} of {} replicas ready", f.replicas_wanted),
        ),
        (None, None) => (ConditionStatus::True, "AllReplicasReady".into(), format!("{ready} replicas ready")),
    };
    let update =
        ConditionUpdate { type_: CONDITION_REPLICAS_READY, status, reason: &reason, message: &message, codes: &[] };
    set_condition(&mut conditions, update, now);
    let to_i32 = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    ManagedSeedSetStatus {
        observed_generation: set.metadata.generation.unwrap_or_default(),
        replicas: to_i32(replicas),
        ready_replicas: to_i32(ready),
        next_replica_number: decision.next_replica_number,
        current_replicas: to_i32(count(&current_revision)),
        updated_replicas: to_i32(updated),
        current_revision,
        update_revision: f.update_revision.clone(),
        collision_count: old.collision_count,
        conditions,
        pending_replica: pending,
    }
}

/// `S-i`: the name of replica `i`'s Shoot and ManagedSeed.
pub fn replica_name(set: &str, ordinal: i32) -> String {
    format!("{set}-{ordinal}")
}

/// The ordinal of a replica name of `set`, if it is one.
pub fn ordinal(set: &str, name: &str) -> Option<i32> {
    let digits = name.strip_prefix(set)?.strip_prefix('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
