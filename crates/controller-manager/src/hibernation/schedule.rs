//! Hibernation schedules parsed once: each `start` (hibernate) and `end` (wake up) is a
//! 5-field cron expression (minute hour day-of-month month day-of-week, as Vixie cron) in the
//! schedule's `location` time zone (IANA name; UTC without one). Times go in and out as
//! `jiff` timestamps, the API's time type; croner and chrono-tz do the calendar work.

use api::core::shoot::settings::HibernationSchedule;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use k8s_openapi::jiff::Timestamp;

/// What a tick of a schedule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Hibernate,
    WakeUp,
}

impl Operation {
    /// The value of `spec.hibernation.enabled` after the tick.
    pub fn enabled(self) -> bool {
        self == Operation::Hibernate
    }
}

/// One cron expression of one schedule.
#[derive(Debug, Clone)]
pub struct Parsed {
    cron: Cron,
    zone: Tz,
    pub operation: Operation,
    /// Where it came from, e.g. `spec.hibernation.schedules[0].start`.
    pub field: String,
}

/// A schedule that cannot be used; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct Invalid {
    pub field: String,
    pub problem: String,
}

/// Parses every schedule; the first bad field is the error.
pub fn parse(schedules: &[HibernationSchedule]) -> Result<Vec<Parsed>, Invalid> {
    let parser = CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).build();
    let mut parsed = Vec::new();
    for (i, schedule) in schedules.iter().enumerate() {
        let base = format!("spec.hibernation.schedules[{i}]");
        let zone = match schedule.location.as_deref() {
            None | Some("") => Tz::UTC,
            Some(name) => name.parse::<Tz>().map_err(|_| Invalid {
                field: format!("{base}.location"),
                problem: format!("{name:?} is not an IANA time zone (for example Europe/Berlin)"),
            })?,
        };
        if schedule.start.is_none() && schedule.end.is_none() {
            return Err(Invalid { field: base, problem: "needs start, end, or both".into() });
        }
        for (part, operation, spec) in
            [("start", Operation::Hibernate, &schedule.start), ("end", Operation::WakeUp, &schedule.end)]
        {
            let Some(spec) = spec else { continue };
            let field = format!("{base}.{part}");
            let cron = parser.parse(spec).map_err(|e| Invalid {
                field: field.clone(),
                problem: format!("{spec:?} is not a 5-field cron expression: {e}"),
            })?;
            parsed.push(Parsed { cron, zone, operation, field });
        }
    }
    Ok(parsed)
}

fn to_zoned(t: Timestamp, zone: Tz) -> Option<DateTime<Tz>> {
    let nanos = u32::try_from(t.subsec_nanosecond()).ok()?;
    DateTime::<Utc>::from_timestamp(t.as_second(), nanos).map(|d| d.with_timezone(&zone))
}

fn from_zoned(d: &DateTime<Tz>) -> Option<Timestamp> {
    Timestamp::new(d.timestamp(), i32::try_from(d.timestamp_subsec_nanos()).ok()?).ok()
}

impl Parsed {
    /// The first tick strictly after `t`.
    pub fn next(&self, t: Timestamp) -> Option<Timestamp> {
        let zoned = to_zoned(t, self.zone)?;
        self.cron.find_next_occurrence(&zoned, false).ok().and_then(|d| from_zoned(&d))
    }

    /// The most recent tick in `(earliest, now]`, if any.
    pub fn previous(&self, earliest: Timestamp, now: Timestamp) -> Option<Timestamp> {
        let zoned = to_zoned(now, self.zone)?;
        let tick = self.cron.find_previous_occurrence(&zoned, true).ok().and_then(|d| from_zoned(&d))?;
        (tick > earliest).then_some(tick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(start: Option<&str>, end: Option<&str>, location: Option<&str>) -> HibernationSchedule {
        HibernationSchedule {
            start: start.map(Into::into),
            end: end.map(Into::into),
            location: location.map(Into::into),
        }
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn ticks_are_evaluated_in_the_location() {
        // 08:00 in Berlin is 06:00 UTC in summer (CEST) and 07:00 UTC in winter (CET).
        let p = parse(&[schedule(None, Some("0 8 * * 1-5"), Some("Europe/Berlin"))]).unwrap();
        assert_eq!(p[0].operation, Operation::WakeUp);
        assert_eq!(p[0].field, "spec.hibernation.schedules[0].end");
        assert_eq!(p[0].next(ts("2026-07-03T12:00:00Z")), Some(ts("2026-07-06T06:00:00Z")), "Friday to Monday");
        assert_eq!(p[0].next(ts("2026-01-05T00:00:00Z")), Some(ts("2026-01-05T07:00:00Z")));
        assert_eq!(
            p[0].previous(ts("2026-07-01T00:00:00Z"), ts("2026-07-04T10:00:00Z")),
            Some(ts("2026-07-03T06:00:00Z"))
        );
        assert_eq!(p[0].previous(ts("2026-07-03T06:00:00Z"), ts("2026-07-04T10:00:00Z")), None, "already handled");
        assert_eq!(
            p[0].previous(ts("2026-07-01T00:00:00Z"), ts("2026-07-03T06:00:00Z")),
            Some(ts("2026-07-03T06:00:00Z")),
            "a tick exactly now counts"
        );
    }

    #[test]
    fn utc_without_location_and_both_ends() {
        let p = parse(&[schedule(Some("30 19 * * *"), Some("0 7 * * *"), None)]).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].operation, Operation::Hibernate);
        assert_eq!(p[0].next(ts("2026-03-01T20:00:00Z")), Some(ts("2026-03-02T19:30:00Z")));
        assert!(p[0].operation.enabled() && !p[1].operation.enabled());
    }

    #[test]
    fn bad_schedules_name_the_field() {
        let cases = [
            (schedule(Some("0 8 * *"), None, None), "spec.hibernation.schedules[0].start"),
            (schedule(Some("0 0 8 * * *"), None, None), "spec.hibernation.schedules[0].start"),
            (schedule(None, Some("61 * * * *"), None), "spec.hibernation.schedules[0].end"),
            (schedule(Some("0 8 * * *"), None, Some("Mars/Olympus")), "spec.hibernation.schedules[0].location"),
            (schedule(None, None, None), "spec.hibernation.schedules[0]"),
        ];
        for (s, field) in cases {
            let err = parse(std::slice::from_ref(&s)).unwrap_err();
            assert_eq!(err.field, field, "{s:?}: {err}");
        }
    }
}
