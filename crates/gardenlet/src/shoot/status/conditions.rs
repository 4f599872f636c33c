//! Pure: the conditions a care run writes, from the previous conditions and what the checks
//! found, with Gardener's `Progressing` step. A failing check first turns a healthy (or new)
//! condition `Progressing`; only when it has been `Progressing` for longer than the threshold
//! does it turn `False`. A condition that is already `False` stays `False` until the check
//! passes; a passing check makes it `True` at once. `lastTransitionTime` moves only when the
//! status changes, `lastUpdateTime` when anything changes ([`set_condition`]), so a care run
//! that finds nothing new changes nothing and writes nothing.

use api::common::{Condition, ConditionStatus};
use api::helpers::conditions::{ConditionUpdate, get_condition, set_condition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::time::Duration;

/// One computed condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub type_: &'static str,
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
}

/// The status a condition gets for `check` after `previous`, at `now`.
pub fn status_after(previous: Option<&Condition>, check: &Check, threshold: Duration, now: &Time) -> ConditionStatus {
    if check.status == ConditionStatus::True {
        return ConditionStatus::True;
    }
    if threshold.is_zero() {
        return check.status;
    }
    match previous.map(|c| c.status) {
        Some(ConditionStatus::False) => ConditionStatus::False,
        Some(ConditionStatus::Progressing) => {
            let since = previous.map(|c| c.last_transition_time.0).unwrap_or(now.0);
            let elapsed = Duration::try_from(now.0.duration_since(since)).unwrap_or_default();
            if elapsed >= threshold { check.status } else { ConditionStatus::Progressing }
        }
        // Healthy, unknown or new: the first failure is Progressing.
        _ => ConditionStatus::Progressing,
    }
}

/// The conditions after a care run, and whether they differ from `previous`.
pub fn next_conditions(
    previous: &[Condition],
    checks: &[Check],
    threshold: Duration,
    now: &Time,
) -> (Vec<Condition>, bool) {
    let mut conditions = previous.to_vec();
    let mut changed = false;
    for check in checks {
        let status = status_after(get_condition(previous, check.type_), check, threshold, now);
        changed |= set_condition(
            &mut conditions,
            ConditionUpdate { type_: check.type_, status, reason: &check.reason, message: &check.message, codes: &[] },
            now,
        );
    }
    (conditions, changed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;
    use k8s_openapi::jiff::Timestamp;

    const MINUTE: Duration = Duration::from_secs(60);

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(1_700_000_000 + secs).unwrap())
    }

    fn check(ok: bool) -> Check {
        Check {
            type_: "ControlPlaneHealthy",
            status: if ok { ConditionStatus::True } else { ConditionStatus::False },
            reason: if ok { "ControlPlaneRunning" } else { "ControlPlaneUnhealthy" }.into(),
            message: if ok { "All fine." } else { "kube-scheduler: missing" }.into(),
        }
    }

    #[test]
    fn a_failure_is_progressing_until_the_threshold_then_false_and_recovers_at_once() {
        let (c, changed) = next_conditions(&[], &[check(true)], MINUTE, &at(0));
        assert!(changed);
        assert_eq!(c[0].status, ConditionStatus::True);
        let (c, changed) = next_conditions(&c, &[check(true)], MINUTE, &at(30));
        assert!(!changed, "nothing new, nothing to write");
        assert_eq!(c[0].last_update_time, at(0));

        let (c, _) = next_conditions(&c, &[check(false)], MINUTE, &at(60));
        assert_eq!((c[0].status, c[0].last_transition_time.clone()), (ConditionStatus::Progressing, at(60)));
        assert_eq!(c[0].message, "kube-scheduler: missing");
        let (c, changed) = next_conditions(&c, &[check(false)], MINUTE, &at(90));
        assert!(!changed, "still within the threshold, same finding");
        assert_eq!(c[0].status, ConditionStatus::Progressing);
        let (c, changed) = next_conditions(&c, &[check(false)], MINUTE, &at(120));
        assert!(changed);
        assert_eq!((c[0].status, c[0].last_transition_time.clone()), (ConditionStatus::False, at(120)));
        let (c, _) = next_conditions(&c, &[check(false)], MINUTE, &at(600));
        assert_eq!(c[0].status, ConditionStatus::False, "False stays False");

        let (c, changed) = next_conditions(&c, &[check(true)], MINUTE, &at(660));
        assert!(changed);
        assert_eq!((c[0].status, c[0].last_transition_time.clone()), (ConditionStatus::True, at(660)));
    }

    #[test]
    fn a_new_condition_starts_progressing_and_no_threshold_means_false_at_once() {
        let (c, _) = next_conditions(&[], &[check(false)], MINUTE, &at(0));
        assert_eq!(c[0].status, ConditionStatus::Progressing);
        let (c, _) = next_conditions(&[], &[check(false)], Duration::ZERO, &at(0));
        assert_eq!(c[0].status, ConditionStatus::False);
    }

    #[test]
    fn a_changed_message_moves_only_the_update_time() {
        let (c, _) = next_conditions(&[], &[check(false)], MINUTE, &at(0));
        let mut other = check(false);
        other.message = "etcd-main: 0/1 ready".into();
        let (c, changed) = next_conditions(&c, &[other], MINUTE, &at(10));
        assert!(changed);
        assert_eq!((c[0].last_transition_time.clone(), c[0].last_update_time.clone()), (at(0), at(10)));
    }
}
