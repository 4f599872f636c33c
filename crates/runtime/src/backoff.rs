//! Per-object retry pacing. kube-runtime requeues with whatever the reconciler asks for but
//! keeps no per-object history, so the controller keeps one here: a failure count per object
//! (capped exponential delay with jitter, reset on success) and the instant before which the
//! object must not be retried. A requeue the actuator asked for sets that instant without
//! counting as a failure.
//!
//! The gate matters because every status write of the controller is itself a watch event: an
//! object that just failed would otherwise be reconciled again at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Shape of the exponential backoff.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackoffConfig {
    /// Delay after the first failure.
    pub initial: Duration,
    /// Upper bound of the delay.
    pub max: Duration,
    /// Up to this fraction of the delay is added at random (0.0..=1.0).
    pub jitter: f64,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self { initial: Duration::from_secs(1), max: Duration::from_secs(5 * 60), jitter: 0.2 }
    }
}

impl BackoffConfig {
    /// The delay after `failures` consecutive failures (>= 1), with `random` in 0.0..1.0 choosing
    /// the jitter. Pure, for tests.
    pub fn delay(&self, failures: u32, random: f64) -> Duration {
        let exp = failures.saturating_sub(1).min(30);
        let base = self.initial.saturating_mul(1u32 << exp).min(self.max);
        let jitter = base.mul_f64(self.jitter.clamp(0.0, 1.0) * random.clamp(0.0, 1.0));
        base.saturating_add(jitter).min(self.max.saturating_add(self.max.mul_f64(self.jitter.clamp(0.0, 1.0))))
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    failures: u32,
    not_before: Option<Instant>,
}

/// Per-object backoff state, keyed by object UID.
#[derive(Debug, Default)]
pub struct Backoff {
    config: BackoffConfig,
    entries: Mutex<HashMap<String, Entry>>,
}

impl Backoff {
    pub fn new(config: BackoffConfig) -> Self {
        Self { config, entries: Mutex::default() }
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Entry>) -> T) -> T {
        // A poisoned lock only means a panic elsewhere; the map is still consistent.
        let mut guard = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    /// Records a failure and returns how long to wait before the next attempt.
    pub fn failed(&self, key: &str) -> Duration {
        self.failed_at(key, Instant::now(), fastrand::f64())
    }

    pub(crate) fn failed_at(&self, key: &str, now: Instant, random: f64) -> Duration {
        let config = self.config;
        self.with(|m| {
            let e = m.entry(key.to_string()).or_default();
            e.failures = e.failures.saturating_add(1);
            let delay = config.delay(e.failures, random);
            e.not_before = Some(now + delay);
            delay
        })
    }

    /// Records a requested requeue: no failure, but no attempt before `after` has passed.
    pub fn requeue(&self, key: &str, after: Duration) {
        let now = Instant::now();
        self.with(|m| m.entry(key.to_string()).or_default().not_before = Some(now + after));
    }

    /// Forgets the object's failures (after a success, or when it is gone).
    pub fn reset(&self, key: &str) {
        self.with(|m| m.remove(key));
    }

    /// How long the object must still wait, if at all.
    pub fn remaining(&self, key: &str) -> Option<Duration> {
        self.remaining_at(key, Instant::now())
    }

    pub(crate) fn remaining_at(&self, key: &str, now: Instant) -> Option<Duration> {
        self.with(|m| m.get(key).and_then(|e| e.not_before))
            .and_then(|t| t.checked_duration_since(now))
            .filter(|d| !d.is_zero())
    }

    /// Consecutive failures recorded for the object.
    pub fn failures(&self, key: &str) -> u32 {
        self.with(|m| m.get(key).map_or(0, |e| e.failures))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BackoffConfig {
        BackoffConfig { initial: Duration::from_secs(1), max: Duration::from_secs(60), jitter: 0.5 }
    }

    #[test]
    fn delay_doubles_and_is_capped() {
        let c = cfg();
        let plain: Vec<u64> = (1..=8).map(|n| c.delay(n, 0.0).as_secs()).collect();
        assert_eq!(plain, vec![1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(c.delay(1000, 0.0), Duration::from_secs(60));
    }

    #[test]
    fn jitter_adds_at_most_the_configured_fraction() {
        let c = cfg();
        assert_eq!(c.delay(3, 1.0), Duration::from_secs(6));
        assert_eq!(c.delay(3, 0.5), Duration::from_secs(5));
        assert!(c.delay(100, 1.0) <= Duration::from_secs(90));
    }

    #[test]
    fn failures_accumulate_per_object_and_reset_on_success() {
        let b = Backoff::new(cfg());
        let now = Instant::now();
        assert_eq!(b.failed_at("a", now, 0.0), Duration::from_secs(1));
        assert_eq!(b.failed_at("a", now, 0.0), Duration::from_secs(2));
        assert_eq!(b.failed_at("b", now, 0.0), Duration::from_secs(1));
        assert_eq!(b.failures("a"), 2);
        assert_eq!(b.remaining_at("a", now), Some(Duration::from_secs(2)));
        assert_eq!(b.remaining_at("a", now + Duration::from_secs(3)), None);
        b.reset("a");
        assert_eq!(b.failures("a"), 0);
        assert_eq!(b.remaining_at("a", now), None);
        assert_eq!(b.failed_at("a", now, 0.0), Duration::from_secs(1));
    }

    #[test]
    fn requeue_gates_without_counting_a_failure() {
        let b = Backoff::new(cfg());
        b.requeue("a", Duration::from_secs(30));
        assert_eq!(b.failures("a"), 0);
        assert!(b.remaining("a").is_some_and(|d| d > Duration::from_secs(20)));
    }
}
