//! The decisions about a store's snapshots, as pure functions: which snapshots a restore uses,
//! which ones garbage collection deletes, and whether a full snapshot is due.

use crate::names::{Kind, Snapshot};

/// What a restore applies: a full snapshot, then deltas that continue it without a gap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    pub full: Snapshot,
    pub deltas: Vec<Snapshot>,
    /// The first revision no delta covers, when deltas after it exist (data after the gap is
    /// lost; the restore says so).
    pub gap_at: Option<i64>,
}

impl Chain {
    /// The last revision the chain covers.
    pub fn end(&self) -> i64 {
        self.deltas.last().map_or(self.full.end, |d| d.end)
    }
}

/// The newest full snapshot (by the time it was stored: after a restore to an older state, the
/// store can hold deltas of a history that was lost, with higher revisions), then every delta
/// stored no earlier than it that continues the covered revisions without a gap. A delta may
/// overlap what is covered already (the restore skips revisions it has).
pub fn restore_chain(snapshots: &[Snapshot]) -> Option<Chain> {
    let full = *snapshots.iter().filter(|s| s.kind == Kind::Full).max_by_key(|s| (s.unix, s.end))?;
    let mut candidates: Vec<Snapshot> =
        snapshots.iter().filter(|s| s.kind == Kind::Incr && s.unix >= full.unix).copied().collect();
    candidates.sort_by_key(|s| (s.start, s.end));
    let mut covered = full.end;
    let mut deltas = Vec::new();
    let mut gap_at = None;
    for delta in candidates {
        if delta.end <= covered {
            continue;
        }
        if delta.start > covered + 1 {
            gap_at = Some(covered + 1);
            break;
        }
        covered = delta.end;
        deltas.push(delta);
    }
    Some(Chain { full, deltas, gap_at })
}

/// How old full snapshots are thinned out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Keep the newest `n` full snapshots.
    LimitBased(usize),
    /// etcd-backup-restore's exponential policy: every full snapshot of the last hour, the newest
    /// of each hour of the last day, of each day of the last week, of each week of the last four
    /// weeks; none older.
    Exponential,
}

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;
const WEEK: i64 = 7 * DAY;

/// The snapshots garbage collection deletes at `now`: full snapshots the policy does not keep,
/// and deltas stored before the newest full snapshot (a restore starts from that one, so they
/// are never used again). The newest full snapshot and everything after it are always kept.
pub fn garbage(snapshots: &[Snapshot], policy: Policy, now: i64) -> Vec<Snapshot> {
    let mut fulls: Vec<Snapshot> = snapshots.iter().filter(|s| s.kind == Kind::Full).copied().collect();
    fulls.sort_by_key(|s| std::cmp::Reverse((s.unix, s.end)));
    let Some(newest) = fulls.first().copied() else {
        return Vec::new();
    };
    let mut keep = vec![false; fulls.len()];
    keep[0] = true;
    match policy {
        Policy::LimitBased(n) => keep.iter_mut().take(n.max(1)).for_each(|k| *k = true),
        Policy::Exponential => {
            // Newest first: the first snapshot seen in each bucket is the one kept.
            let mut buckets = std::collections::HashSet::new();
            for (i, s) in fulls.iter().enumerate() {
                let age = now - s.unix;
                let bucket = if age < HOUR {
                    Some((0, s.unix))
                } else if age < DAY {
                    Some((1, s.unix.div_euclid(HOUR)))
                } else if age < WEEK {
                    Some((2, s.unix.div_euclid(DAY)))
                } else if age < 4 * WEEK {
                    Some((3, s.unix.div_euclid(WEEK)))
                } else {
                    None
                };
                if let Some(bucket) = bucket
                    && buckets.insert(bucket)
                {
                    keep[i] = true;
                }
            }
        }
    }
    let mut out: Vec<Snapshot> = fulls.iter().zip(&keep).filter(|(_, k)| !**k).map(|(s, _)| *s).collect();
    out.extend(snapshots.iter().filter(|s| s.kind == Kind::Incr && s.unix < newest.unix));
    out
}

/// Whether a full snapshot is due at `now`: there is none, or the schedule ticked since the
/// newest one (`previous_tick` is the schedule's latest tick at or before `now`).
pub fn full_due(newest_full: Option<i64>, previous_tick: Option<i64>) -> bool {
    match (newest_full, previous_tick) {
        (None, _) => true,
        (Some(full), Some(tick)) => full < tick,
        (Some(_), None) => false,
    }
}

/// Snapshot compaction, as etcd-druid compacts: whether the deltas since the newest full
/// snapshot cover so many revisions (`since_full`) that a restore would replay more than
/// `threshold` of them (one transaction each); then a full snapshot is taken early, and the next
/// restore starts from it. A threshold of 0 never compacts.
pub fn compaction_due(since_full: u64, threshold: u64) -> bool {
    threshold > 0 && since_full >= threshold
}

#[cfg(test)]
mod tests {

    #[test]
    fn compaction_is_due_once_the_deltas_since_the_full_snapshot_reach_the_threshold() {
        assert!(!compaction_due(9_999, 10_000));
        assert!(compaction_due(10_000, 10_000));
        assert!(compaction_due(50_000, 10_000));
        assert!(!compaction_due(1_000_000, 0), "0 turns compaction off");
    }

    use super::*;

    fn full(end: i64, unix: i64) -> Snapshot {
        Snapshot::full(end, unix)
    }
    fn incr(start: i64, end: i64, unix: i64) -> Snapshot {
        Snapshot::incr(start, end, unix)
    }

    #[test]
    fn a_restore_takes_the_newest_full_snapshot_and_the_deltas_that_continue_it() {
        let store =
            [full(10, 100), incr(11, 20, 120), full(25, 200), incr(21, 30, 220), incr(31, 40, 240), incr(41, 41, 260)];
        let chain = restore_chain(&store).unwrap();
        assert_eq!(chain.full, full(25, 200));
        assert_eq!(chain.deltas, vec![incr(21, 30, 220), incr(31, 40, 240), incr(41, 41, 260)]);
        assert_eq!((chain.end(), chain.gap_at), (41, None));
        assert_eq!(restore_chain(&[incr(1, 5, 10)]), None, "no full snapshot, no restore");
    }

    #[test]
    fn a_gap_ends_the_chain_and_is_reported() {
        let chain = restore_chain(&[full(10, 100), incr(11, 20, 120), incr(25, 30, 140)]).unwrap();
        assert_eq!(chain.deltas, vec![incr(11, 20, 120)]);
        assert_eq!(chain.gap_at, Some(21));
        assert_eq!(chain.end(), 20);
    }

    #[test]
    fn deltas_of_a_lost_history_before_the_newest_full_snapshot_are_not_used() {
        // A restore went back to revision 50 after deltas up to 90 had been stored; the store
        // then took a full snapshot at 52 and continued.
        let store = [full(40, 100), incr(41, 90, 150), full(52, 200), incr(53, 60, 220)];
        let chain = restore_chain(&store).unwrap();
        assert_eq!(chain.full, full(52, 200));
        assert_eq!(chain.deltas, vec![incr(53, 60, 220)]);
    }

    #[test]
    fn the_limit_policy_keeps_the_newest_full_snapshots_and_the_deltas_after_the_newest() {
        let store = [full(1, 10), full(2, 20), full(3, 30), incr(4, 5, 31), full(6, 40), incr(7, 8, 41)];
        let mut gone = garbage(&store, Policy::LimitBased(2), 50);
        gone.sort_by_key(|s| s.unix);
        assert_eq!(gone, vec![full(1, 10), full(2, 20), incr(4, 5, 31)]);
        assert_eq!(garbage(&store, Policy::LimitBased(0), 50).len(), 4, "the newest is always kept");
        assert!(garbage(&[incr(1, 2, 3)], Policy::LimitBased(1), 5).is_empty(), "without a full snapshot nothing goes");
    }

    #[test]
    fn the_exponential_policy_thins_out_by_hour_day_and_week() {
        let now = 100 * WEEK;
        let store = [
            full(100, now - 60),           // last hour: kept
            full(99, now - 120),           // last hour: kept
            full(98, now - 2 * HOUR - 10), // same hour as the next: the newer one is kept
            full(97, now - 2 * HOUR - 20), // gone
            full(96, now - 3 * DAY),       // a day of the last week: kept
            full(95, now - 3 * DAY - 1),   // same day: gone (unless the day boundary lies between)
            full(94, now - 2 * WEEK),      // a week of the last four: kept
            full(93, now - 5 * WEEK),      // older than four weeks: gone
        ];
        let gone: Vec<i64> = garbage(&store, Policy::Exponential, now).iter().map(|s| s.end).collect();
        assert!(gone.contains(&97) && gone.contains(&93), "{gone:?}");
        assert!(!gone.iter().any(|r| [100, 99, 98, 96, 94].contains(r)), "{gone:?}");
    }

    #[test]
    fn a_full_snapshot_is_due_without_one_or_after_a_tick() {
        assert!(full_due(None, None));
        assert!(full_due(Some(100), Some(150)));
        assert!(!full_due(Some(150), Some(150)));
        assert!(!full_due(Some(100), None));
    }
}
