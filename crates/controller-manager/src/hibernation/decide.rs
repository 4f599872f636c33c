//! Whether a schedule tick is due for a shoot, and when the next one comes. Pure.
//!
//! As the reference system: the ticks considered lie after the last trigger
//! (`status.lastHibernationTriggerTime`, or the shoot's creation), after now minus the trigger
//! deadline (when configured), and at most 7 days back. Of those, the most recent tick of any
//! schedule wins; so a tick missed while the controller was down is applied when it comes back,
//! unless a later tick (of the other kind) superseded it or the deadline passed. The next look
//! is at the next tick of any schedule, plus 100 ms against clock skew.

use super::schedule::{Operation, Parsed};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::time::Duration;

const LOOK_BACK: SignedDuration = SignedDuration::from_hours(7 * 24);
const NEXT_DELTA: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub struct Facts {
    pub created: Timestamp,
    pub last_trigger: Option<Timestamp>,
    pub now: Timestamp,
    pub trigger_deadline: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The tick to apply now: its operation, its time and the field of its schedule.
    pub due: Option<(Operation, Timestamp, String)>,
    /// When to look again (the next tick).
    pub requeue_after: Option<Duration>,
}

pub fn decide(schedules: &[Parsed], f: &Facts) -> Decision {
    let mut earliest = f.last_trigger.unwrap_or(f.created);
    if let Some(deadline) = f.trigger_deadline.and_then(|d| SignedDuration::try_from(d).ok())
        && let Ok(cutoff) = f.now.checked_sub(deadline)
    {
        earliest = earliest.max(cutoff);
    }
    if let Ok(week_ago) = f.now.checked_sub(LOOK_BACK) {
        earliest = earliest.max(week_ago);
    }
    let due = schedules
        .iter()
        .filter_map(|s| s.previous(earliest, f.now).map(|t| (s.operation, t, s.field.clone())))
        .max_by_key(|(_, t, _)| *t);
    let requeue_after = schedules
        .iter()
        .filter_map(|s| s.next(f.now))
        .min()
        .map(|next| Duration::try_from(next.duration_since(f.now)).unwrap_or_default() + NEXT_DELTA);
    Decision { due, requeue_after }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hibernation::schedule::parse;
    use api::core::shoot::settings::HibernationSchedule;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    /// Weekdays: hibernate 19:00, wake up 07:00 (UTC).
    fn office_hours() -> Vec<Parsed> {
        parse(&[HibernationSchedule {
            start: Some("0 19 * * 1-5".into()),
            end: Some("0 7 * * 1-5".into()),
            location: None,
        }])
        .unwrap()
    }

    fn facts(created: &str, last: Option<&str>, now: &str, deadline: Option<u64>) -> Facts {
        Facts {
            created: ts(created),
            last_trigger: last.map(ts),
            now: ts(now),
            trigger_deadline: deadline.map(Duration::from_secs),
        }
    }

    #[test]
    fn the_most_recent_tick_since_the_last_trigger_wins() {
        // 2026-07-06 is a Monday.
        type Case = (&'static str, Facts, Option<(Operation, &'static str)>);
        let cases: Vec<Case> = vec![
            ("new shoot, before any tick", facts("2026-07-06T08:00:00Z", None, "2026-07-06T12:00:00Z", None), None),
            (
                "a tick exactly now",
                facts("2026-07-06T08:00:00Z", None, "2026-07-06T19:00:00Z", None),
                Some((Operation::Hibernate, "2026-07-06T19:00:00Z")),
            ),
            (
                "already handled",
                facts("2026-07-06T08:00:00Z", Some("2026-07-06T19:00:01Z"), "2026-07-06T23:00:00Z", None),
                None,
            ),
            (
                "missed while down: the latest missed tick",
                facts("2026-07-01T00:00:00Z", Some("2026-07-06T07:00:05Z"), "2026-07-07T09:00:00Z", None),
                Some((Operation::WakeUp, "2026-07-07T07:00:00Z")),
            ),
            (
                "missed while down, within the deadline",
                facts("2026-07-01T00:00:00Z", Some("2026-07-06T07:00:05Z"), "2026-07-06T20:30:00Z", Some(7200)),
                Some((Operation::Hibernate, "2026-07-06T19:00:00Z")),
            ),
            (
                "missed while down, past the deadline",
                facts("2026-07-01T00:00:00Z", Some("2026-07-06T07:00:05Z"), "2026-07-06T22:00:00Z", Some(7200)),
                None,
            ),
            (
                "never triggered, created long ago: looks back 7 days only",
                facts("2020-01-01T00:00:00Z", None, "2026-07-11T12:00:00Z", None),
                Some((Operation::Hibernate, "2026-07-10T19:00:00Z")),
            ),
        ];
        for (name, f, expected) in cases {
            let d = decide(&office_hours(), &f);
            let got = d.due.as_ref().map(|(op, t, _)| (*op, *t));
            assert_eq!(got, expected.map(|(op, t)| (op, ts(t))), "{name}");
        }
    }

    #[test]
    fn the_next_look_is_at_the_next_tick() {
        let d = decide(&office_hours(), &facts("2026-07-06T08:00:00Z", None, "2026-07-06T18:00:00Z", None));
        assert_eq!(d.requeue_after, Some(Duration::from_secs(3600) + NEXT_DELTA));
        let friday_night = decide(&office_hours(), &facts("2026-07-06T08:00:00Z", None, "2026-07-10T20:00:00Z", None));
        assert_eq!(friday_night.requeue_after, Some(Duration::from_secs(59 * 3600) + NEXT_DELTA), "Monday 07:00");
        let d = decide(&office_hours(), &facts("2026-07-06T08:00:00Z", None, "2026-07-06T19:00:00Z", None));
        assert_eq!(d.due.map(|(_, _, field)| field).as_deref(), Some("spec.hibernation.schedules[0].start"));
    }
}
