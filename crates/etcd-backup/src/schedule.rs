//! The full snapshot schedule: a 5-field cron expression in UTC.

use chrono::{DateTime, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    text: String,
}

impl Schedule {
    pub fn parse(text: &str) -> Result<Self, String> {
        let parser = CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).build();
        let cron = parser.parse(text).map_err(|e| format!("{text:?} is not a 5-field cron expression: {e}"))?;
        Ok(Self { cron, text: text.to_string() })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The latest tick at or before `now` (seconds since the epoch).
    pub fn previous(&self, now: i64) -> Option<i64> {
        let at = DateTime::<Utc>::from_timestamp(now, 0)?;
        self.cron.find_previous_occurrence(&at, true).ok().map(|d| d.timestamp())
    }

    /// The first tick after `now`.
    pub fn next(&self, now: i64) -> Option<i64> {
        let at = DateTime::<Utc>::from_timestamp(now, 0)?;
        self.cron.find_next_occurrence(&at, false).ok().map(|d| d.timestamp())
    }
}

/// Now, in seconds since the epoch.
pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Sets `timer` to the schedule's next tick and returns that tick (seconds since the epoch);
/// without a schedule, to a time that never comes.
pub fn arm(schedule: Option<&Schedule>, timer: std::pin::Pin<&mut tokio::time::Sleep>) -> i64 {
    let now = now_unix();
    let next = schedule.and_then(|s| s.next(now)).unwrap_or(i64::MAX);
    // At most a year ahead: tokio's timers are bounded, and a timer that ends early only re-arms.
    let wait = u64::try_from(next.saturating_sub(now)).unwrap_or(0).clamp(1, 365 * 86_400);
    timer.reset(tokio::time::Instant::now() + std::time::Duration::from_secs(wait));
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_before_and_after_a_time() {
        let daily = Schedule::parse("30 2 * * *").unwrap();
        let t = 1_764_300_000; // 2025-11-28T03:20:00Z
        assert_eq!(daily.previous(t), Some(t - 50 * 60));
        assert_eq!(daily.next(t), Some(t - 50 * 60 + 86_400));
        assert!(Schedule::parse("every day").is_err());
        assert!(Schedule::parse("0 0 0 * * *").is_err(), "no seconds field");
    }
}
