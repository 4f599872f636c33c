//! The controller's bookkeeping, kept incrementally from the Shoot watch so that a decision never
//! scans the shoots:
//!
//! * how many shoots each seed holds (a shoot counts on `spec.seedName`, and also on
//!   `status.seedName` while it migrates away from there);
//! * *reservations*: placements this process decided but its watch has not shown yet. They count
//!   against the seed exactly like placed shoots, which is what keeps a burst of new shoots from
//!   overbooking a seed before the cache catches up. A reservation ends when the watch shows the
//!   shoot with a seed, when the write fails, or after a timeout (a write whose outcome is
//!   unknown);
//! * the shoots waiting for a seed, to re-queue them when seeds change or capacity frees up;
//! * the retry attempt per waiting shoot, for the backoff.
//!
//! No I/O here; the controller holds it behind a mutex and feeds it watch events.

use crate::decide::ShootCounter;
use api::core::Shoot;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::time::{Duration, Instant};

/// The scheduler name that this scheduler serves (besides an absent one).
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// `namespace/name` of a shoot.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShootKey {
    pub namespace: String,
    pub name: String,
}

impl ShootKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self { namespace: namespace.into(), name: name.into() }
    }

    pub fn of(shoot: &Shoot) -> Self {
        Self::new(shoot.namespace().unwrap_or_default(), shoot.name_any())
    }

    /// The key of an object known only by its metadata (one that could not be read as a Shoot).
    pub fn from_meta(meta: &ObjectMeta) -> Self {
        Self::new(meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
    }
}

impl fmt::Display for ShootKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Whether this scheduler should find a seed for the shoot: no seed yet, not being deleted, and
/// meant for the default scheduler.
pub fn needs_scheduling(shoot: &Shoot) -> bool {
    shoot.spec.seed_name.as_deref().is_none_or(str::is_empty)
        && shoot.metadata.deletion_timestamp.is_none()
        && shoot.spec.scheduler_name.as_deref().is_none_or(|n| n.is_empty() || n == DEFAULT_SCHEDULER_NAME)
}

/// The seeds a shoot occupies: its `spec.seedName`, and its `status.seedName` when different
/// (a migration in progress holds a place on both).
fn occupied(shoot: &Shoot) -> Vec<String> {
    let spec = shoot.spec.seed_name.as_deref().filter(|s| !s.is_empty());
    let status = shoot.status.as_ref().and_then(|s| s.seed_name()).filter(|s| !s.is_empty());
    let mut seeds: Vec<String> = spec.into_iter().map(String::from).collect();
    if let Some(old) = status
        && Some(old) != spec
    {
        seeds.push(old.to_string());
    }
    seeds
}

#[derive(Clone, Debug)]
struct Reservation {
    seed: String,
    since: Instant,
}

/// What the bookkeeping needs to know about one shoot from the watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShootSummary {
    pub key: ShootKey,
    /// The seeds the shoot occupies: `spec.seedName`, and `status.seedName` while migrating.
    pub seeds: Vec<String>,
    /// `spec.seedName` is set.
    pub has_spec_seed: bool,
    /// See [`needs_scheduling`].
    pub waiting: bool,
}

impl ShootSummary {
    pub fn of(shoot: &Shoot) -> Self {
        Self {
            key: ShootKey::of(shoot),
            seeds: occupied(shoot),
            has_spec_seed: shoot.spec.seed_name.as_deref().is_some_and(|s| !s.is_empty()),
            waiting: needs_scheduling(shoot),
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Observed {
    seeds: Vec<String>,
    has_spec_seed: bool,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct SchedulerState {
    observed: HashMap<ShootKey, Observed>,
    counts: HashMap<String, u32>,
    waiting: BTreeSet<ShootKey>,
    reservations: HashMap<ShootKey, Reservation>,
    reserved: HashMap<String, u32>,
    attempts: HashMap<ShootKey, u32>,
    /// Objects listed so far during a re-list, applied at its end.
    relist: Option<Vec<ShootSummary>>,
}

fn add(counts: &mut HashMap<String, u32>, seed: &str, delta: i64) -> bool {
    let entry = counts.entry(seed.to_string()).or_insert(0);
    *entry = (i64::from(*entry) + delta).clamp(0, i64::from(u32::MAX)) as u32;
    if *entry == 0 {
        counts.remove(seed);
    }
    delta < 0
}

impl SchedulerState {
    /// A shoot was added or changed. Returns whether a seed's count went down (capacity freed).
    pub fn apply(&mut self, shoot: ShootSummary) -> bool {
        let ShootSummary { key, seeds, has_spec_seed, waiting } = shoot;
        let freed = self.forget_counts(&key, &seeds);
        for seed in &seeds {
            add(&mut self.counts, seed, 1);
        }
        if has_spec_seed {
            // The watch now counts this shoot on its seed; a reservation would count it twice.
            self.release(&key);
            self.attempts.remove(&key);
        }
        if waiting {
            self.waiting.insert(key.clone());
        } else {
            self.waiting.remove(&key);
        }
        if seeds.is_empty() {
            self.observed.remove(&key);
        } else {
            self.observed.insert(key, Observed { seeds, has_spec_seed });
        }
        freed
    }

    /// A shoot was deleted. Returns whether capacity was freed.
    pub fn delete(&mut self, key: &ShootKey) -> bool {
        let freed = self.forget_counts(key, &[]);
        self.observed.remove(key);
        self.waiting.remove(key);
        self.attempts.remove(key);
        self.release(key);
        freed
    }

    /// Removes the shoot's previous contribution except for seeds in `keep`; true when a seed
    /// lost a shoot.
    fn forget_counts(&mut self, key: &ShootKey, keep: &[String]) -> bool {
        let Some(previous) = self.observed.get(key) else { return false };
        let mut freed = false;
        for seed in &previous.seeds {
            freed |= add(&mut self.counts, seed, -1) && !keep.contains(seed);
        }
        freed
    }

    /// The watch starts listing everything again.
    pub fn relist_started(&mut self) {
        self.relist = Some(Vec::new());
    }

    /// One object of a re-list.
    pub fn relist_object(&mut self, shoot: ShootSummary) {
        match &mut self.relist {
            Some(buffer) => buffer.push(shoot),
            None => {
                self.apply(shoot);
            }
        }
    }

    /// The re-list is complete: it replaces what was known. Returns true (capacity may have
    /// been freed by shoots that disappeared meanwhile).
    pub fn relist_done(&mut self) -> bool {
        let listed = self.relist.take().unwrap_or_default();
        self.observed.clear();
        self.counts.clear();
        self.waiting.clear();
        let present: BTreeSet<ShootKey> = listed.iter().map(|s| s.key.clone()).collect();
        self.attempts.retain(|k, _| present.contains(k));
        let gone: Vec<ShootKey> = self.reservations.keys().filter(|k| !present.contains(*k)).cloned().collect();
        gone.iter().for_each(|k| self.release(k));
        for shoot in listed {
            self.apply(shoot);
        }
        true
    }

    /// Counts `shoot` against `seed` until the watch shows the placement.
    pub fn reserve(&mut self, key: ShootKey, seed: &str, now: Instant) {
        self.release(&key);
        add(&mut self.reserved, seed, 1);
        self.reservations.insert(key, Reservation { seed: seed.to_string(), since: now });
    }

    /// Ends a reservation (the write failed, or the watch shows the shoot placed).
    pub fn release(&mut self, key: &ShootKey) {
        if let Some(r) = self.reservations.remove(key) {
            add(&mut self.reserved, &r.seed, -1);
        }
    }

    /// Drops reservations older than `timeout`; returns how many.
    pub fn expire(&mut self, now: Instant, timeout: Duration) -> usize {
        let old: Vec<ShootKey> = self
            .reservations
            .iter()
            .filter(|(_, r)| now.saturating_duration_since(r.since) >= timeout)
            .map(|(k, _)| k.clone())
            .collect();
        old.iter().for_each(|k| self.release(k));
        old.len()
    }

    /// When the shoot has a reservation: how long until it times out.
    pub fn reserved_for(&self, key: &ShootKey, now: Instant, timeout: Duration) -> Option<Duration> {
        self.reservations.get(key).map(|r| timeout.saturating_sub(now.saturating_duration_since(r.since)))
    }

    /// Whether the watch already shows the shoot with a seed (the object being reconciled may be
    /// older than that).
    pub fn placed(&self, key: &ShootKey) -> bool {
        self.observed.get(key).is_some_and(|o| o.has_spec_seed)
    }

    /// The shoots waiting for a seed.
    pub fn waiting(&self) -> impl Iterator<Item = &ShootKey> {
        self.waiting.iter()
    }

    pub fn waiting_count(&self) -> usize {
        self.waiting.len()
    }

    /// The retry attempt for a waiting shoot (0 for the first retry), counting it.
    pub fn next_attempt(&mut self, key: &ShootKey) -> u32 {
        let attempt = self.attempts.entry(key.clone()).or_insert(0);
        let current = *attempt;
        *attempt = attempt.saturating_add(1);
        current
    }

    /// Forgets the retry attempts of a shoot (it was placed).
    pub fn reset_attempts(&mut self, key: &ShootKey) {
        self.attempts.remove(key);
    }

    /// Shoots on `seed` as the watch shows them, without reservations.
    pub fn observed_on(&self, seed: &str) -> u32 {
        self.counts.get(seed).copied().unwrap_or(0)
    }

    /// How many placements are reserved and not yet shown by the watch.
    pub fn reservation_count(&self) -> usize {
        self.reservations.len()
    }
}

impl ShootCounter for SchedulerState {
    fn shoots_on(&self, seed: &str) -> u32 {
        self.counts.get(seed).copied().unwrap_or(0).saturating_add(self.reserved.get(seed).copied().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::shoot;

    fn placed(name: &str, spec: Option<&str>, status: Option<&str>) -> Shoot {
        let mut s = shoot(name);
        s.spec.seed_name = spec.map(Into::into);
        if let Some(old) = status {
            s.status.get_or_insert_default().seed_name = Some(old.into());
        }
        s
    }

    fn key(name: &str) -> ShootKey {
        ShootKey::new("garden-dev", name)
    }

    #[test]
    fn which_shoots_need_scheduling() {
        let mut other_scheduler = shoot("o");
        other_scheduler.spec.scheduler_name = Some("custom".into());
        let mut default_named = shoot("d");
        default_named.spec.scheduler_name = Some(DEFAULT_SCHEDULER_NAME.into());
        let mut deleting = shoot("x");
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        let cases = [
            ("new shoot", shoot("s"), true),
            ("empty seed name", placed("s", Some(""), None), true),
            ("placed", placed("s", Some("a"), None), false),
            ("deleting", deleting, false),
            ("another scheduler", other_scheduler, false),
            ("named default scheduler", default_named, true),
        ];
        for (name, s, want) in cases {
            assert_eq!(needs_scheduling(&s), want, "{name}");
        }
    }

    #[test]
    fn counts_follow_the_watch() {
        let mut st = SchedulerState::default();
        assert!(!st.apply(ShootSummary::of(&placed("a", Some("s1"), None))));
        st.apply(ShootSummary::of(&placed("b", Some("s1"), None)));
        st.apply(ShootSummary::of(&placed("c", Some("s2"), None)));
        assert_eq!((st.shoots_on("s1"), st.shoots_on("s2")), (2, 1));
        // Migration s1 -> s2: counted on both while in progress.
        assert!(!st.apply(ShootSummary::of(&placed("a", Some("s2"), Some("s1")))));
        assert_eq!((st.shoots_on("s1"), st.shoots_on("s2")), (2, 2));
        // Migration done: s1 frees a place.
        assert!(st.apply(ShootSummary::of(&placed("a", Some("s2"), Some("s2")))));
        assert_eq!((st.shoots_on("s1"), st.shoots_on("s2")), (1, 2));
        assert!(st.delete(&key("c")));
        assert_eq!(st.shoots_on("s2"), 1);
        // Re-applying an unchanged shoot changes nothing.
        assert!(!st.apply(ShootSummary::of(&placed("b", Some("s1"), None))));
        assert_eq!(st.shoots_on("s1"), 1);
    }

    #[test]
    fn reservations_count_until_the_watch_confirms() {
        let (mut st, t0) = (SchedulerState::default(), Instant::now());
        st.apply(ShootSummary::of(&shoot("n")));
        assert_eq!(st.waiting().cloned().collect::<Vec<_>>(), vec![key("n")]);
        st.reserve(key("n"), "s1", t0);
        assert_eq!(st.shoots_on("s1"), 1);
        assert_eq!(st.observed_on("s1"), 0);
        // An older object without the seed does not end the reservation.
        st.apply(ShootSummary::of(&shoot("n")));
        assert_eq!(st.shoots_on("s1"), 1);
        // The watch shows the placement: counted once, no longer waiting.
        st.apply(ShootSummary::of(&placed("n", Some("s1"), None)));
        assert_eq!((st.shoots_on("s1"), st.reservation_count(), st.waiting_count()), (1, 0, 0));
        assert!(st.placed(&key("n")));
    }

    #[test]
    fn failed_and_stale_reservations_are_released() {
        let (mut st, t0) = (SchedulerState::default(), Instant::now());
        st.reserve(key("a"), "s1", t0);
        st.reserve(key("b"), "s1", t0 + Duration::from_secs(50));
        st.release(&key("a"));
        assert_eq!(st.shoots_on("s1"), 1);
        let timeout = Duration::from_secs(60);
        assert_eq!(st.reserved_for(&key("b"), t0 + Duration::from_secs(80), timeout), Some(Duration::from_secs(30)));
        assert_eq!(st.expire(t0 + Duration::from_secs(100), timeout), 0);
        assert_eq!(st.expire(t0 + Duration::from_secs(110), timeout), 1);
        assert_eq!(st.shoots_on("s1"), 0);
        // Deleting a shoot releases its reservation too.
        st.reserve(key("c"), "s2", t0);
        st.delete(&key("c"));
        assert_eq!(st.shoots_on("s2"), 0);
    }

    #[test]
    fn relist_replaces_everything_known() {
        let (mut st, t0) = (SchedulerState::default(), Instant::now());
        st.apply(ShootSummary::of(&placed("gone", Some("s1"), None)));
        st.apply(ShootSummary::of(&shoot("waiting-gone")));
        st.reserve(key("vanished"), "s1", t0);
        st.reserve(key("kept"), "s2", t0);
        st.relist_started();
        st.relist_object(ShootSummary::of(&placed("a", Some("s2"), None)));
        st.relist_object(ShootSummary::of(&shoot("kept")));
        // Until the re-list is complete the old view stays.
        assert_eq!(st.shoots_on("s1"), 2);
        assert!(st.relist_done());
        assert_eq!((st.shoots_on("s1"), st.shoots_on("s2")), (0, 2));
        assert_eq!(st.waiting().cloned().collect::<Vec<_>>(), vec![key("kept")]);
    }

    #[test]
    fn attempts_count_up_and_reset() {
        let mut st = SchedulerState::default();
        assert_eq!((st.next_attempt(&key("a")), st.next_attempt(&key("a")), st.next_attempt(&key("a"))), (0, 1, 2));
        st.reset_attempts(&key("a"));
        assert_eq!(st.next_attempt(&key("a")), 0);
        st.apply(ShootSummary::of(&placed("a", Some("s"), None)));
        assert_eq!(st.next_attempt(&key("a")), 0, "placement resets the attempts");
    }
}
