//! The roll-out of a pool, step by step as Gardener's machine controller runs it: the pure
//! decisions (which machine next, when to wait, when a drain ends).
//!
//! A machine *serves* when its Node is Ready and the node's kube-proxy runs. Each reconcile
//! looks at the pool's machines as they are and decides:
//! - **create** machines of the new class while fewer than `desired` exist, at most `maxSurge`
//!   above `desired` in all while old machines are still there;
//! - **drain** (cordon, then evict through the Eviction API) the machines that have to go: old
//!   classes and a scale-down's surplus. One that does not serve can go at once; one that serves
//!   only while more than `desired - maxUnavailable` machines serve, so a roll-out never takes
//!   the pool below that;
//! - a drained machine is removed when its Node has no pods left to evict, or when the drain
//!   timeout has passed (the remaining pods are then deleted, as the machine controller does).
//!
//! Nothing is kept in memory: a draining machine carries the time its drain began on its Pod
//! ([`super::drain::ANNOTATION_DRAIN_STARTED`]), so a restart of provider-local or gardenlet
//! in the middle of a roll-out carries on where it stopped.

use std::collections::BTreeSet;

/// A machine of a pool, as a roll-out decision needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    pub name: String,
    pub hash: String,
    pub index: u32,
    /// Its Node is Ready and runs kube-proxy: it carries workloads.
    pub serves: bool,
    /// Cordoned and being drained since this time (seconds since the epoch).
    pub draining_since: Option<i64>,
}

impl Machine {
    fn draining(&self) -> bool {
        self.draining_since.is_some()
    }
}

/// What to do now for a pool: machines to create (indices of the new class) and machines to
/// start draining.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub create: Vec<u32>,
    pub drain: Vec<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.drain.is_empty()
    }
}

/// The next actions from `machines` towards `desired` machines of class `hash`, within `surge`
/// machines above and `unavailable` machines below `desired`.
pub fn plan(desired: u32, hash: &str, machines: &[Machine], surge: u32, unavailable: u32) -> Plan {
    let total = machines.len() as u32;
    let live: Vec<&Machine> = machines.iter().filter(|m| !m.draining()).collect();
    let mut new: Vec<&Machine> = live.iter().copied().filter(|m| m.hash == hash).collect();
    new.sort_by_key(|m| m.index);
    let others_exist = machines.iter().any(|m| m.hash != hash);
    let n_new = new.len() as u32;

    let create_count = match desired.checked_sub(n_new) {
        Some(missing) if missing > 0 && !others_exist => missing,
        Some(missing) => missing.min((desired + surge).saturating_sub(total)),
        None => 0,
    };
    // Names must not collide with a machine of the class that still exists (draining or not).
    let used: BTreeSet<u32> = machines.iter().filter(|m| m.hash == hash).map(|m| m.index).collect();
    let create: Vec<u32> = (0..).filter(|i| !used.contains(i)).take(create_count as usize).collect();

    // Machines to go: old classes (highest index first), then the new class's surplus.
    let mut old: Vec<&Machine> = live.iter().copied().filter(|m| m.hash != hash).collect();
    old.sort_by_key(|m| std::cmp::Reverse(m.index));
    let surplus = new.iter().copied().skip(desired as usize).rev();
    let candidates: Vec<&Machine> = old.into_iter().chain(surplus).collect();

    let serving = live.iter().filter(|m| m.serves).count() as u32;
    let mut budget = serving.saturating_sub(desired.saturating_sub(unavailable));
    let mut drain = Vec::new();
    // One that does not serve costs nothing.
    drain.extend(candidates.iter().filter(|m| !m.serves).map(|m| m.name.clone()));
    for m in candidates.iter().filter(|m| m.serves) {
        if budget == 0 {
            break;
        }
        budget -= 1;
        drain.push(m.name.clone());
    }
    Plan { create, drain }
}

/// Whether the pool is where it should be: exactly `desired` machines of class `hash`, all
/// serving, none draining.
pub fn converged(desired: u32, hash: &str, machines: &[Machine]) -> bool {
    machines.len() as u32 == desired && machines.iter().all(|m| m.hash == hash && m.serves && !m.draining())
}

/// Where a machine's drain stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainVerdict {
    /// Nothing left to evict: the machine can go.
    Done,
    /// Pods are left and there is time: evict again later.
    Continue,
    /// Pods are left and the drain timeout has passed: delete them and the machine.
    TimedOut,
}

/// The verdict on a drain that began at `since` with `remaining` pods left, at `now`.
pub fn drain_verdict(remaining: usize, since: i64, now: i64, timeout_seconds: i64) -> DrainVerdict {
    if remaining == 0 {
        DrainVerdict::Done
    } else if now.saturating_sub(since) >= timeout_seconds {
        DrainVerdict::TimedOut
    } else {
        DrainVerdict::Continue
    }
}

/// The drain timeout of the machine controller when a pool sets none
/// (`machineControllerManager.machineDrainTimeout`; machine-controller-manager's default).
pub const DEFAULT_DRAIN_TIMEOUT_SECONDS: i64 = 2 * 60 * 60;

/// A pool's drain timeout in seconds: its `machineDrainTimeout` (a Go duration) or the default.
pub fn drain_timeout_seconds(setting: Option<&str>) -> Result<i64, String> {
    let Some(text) = setting else { return Ok(DEFAULT_DRAIN_TIMEOUT_SECONDS) };
    let nanos = extension_sdk::api::helpers::duration::parse_go_duration(text)?;
    if nanos < 0 {
        return Err(format!("{text:?} is negative"));
    }
    Ok(i64::try_from(nanos / 1_000_000_000).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests;
