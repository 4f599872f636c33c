//! Condition bookkeeping shared by every controller: `lastTransitionTime` moves only when the
//! status changes, `lastUpdateTime` whenever anything about the condition changes, and
//! nothing moves when nothing changed (so an unchanged status causes no write).

use crate::common::{Condition, ConditionStatus, ErrorCode};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The desired content of one condition.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionUpdate<'a> {
    pub type_: &'a str,
    pub status: ConditionStatus,
    pub reason: &'a str,
    pub message: &'a str,
    pub codes: &'a [ErrorCode],
}

/// The condition of the given type, if present.
pub fn get_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// True when the condition of the given type is present with status `True`.
pub fn is_condition_true(conditions: &[Condition], type_: &str) -> bool {
    get_condition(conditions, type_).is_some_and(|c| c.status == ConditionStatus::True)
}

/// Sets a condition, adding it when missing. Returns whether anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, update: ConditionUpdate<'_>, now: &Time) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == update.type_) {
        None => {
            conditions.push(Condition {
                type_: update.type_.to_string(),
                status: update.status,
                last_transition_time: now.clone(),
                last_update_time: now.clone(),
                reason: update.reason.to_string(),
                message: update.message.to_string(),
                codes: update.codes.to_vec(),
            });
            true
        }
        Some(existing) => {
            let unchanged = existing.status == update.status
                && existing.reason == update.reason
                && existing.message == update.message
                && existing.codes == update.codes;
            if unchanged {
                return false;
            }
            if existing.status != update.status {
                existing.last_transition_time = now.clone();
            }
            existing.status = update.status;
            existing.reason = update.reason.to_string();
            existing.message = update.message.to_string();
            existing.codes = update.codes.to_vec();
            existing.last_update_time = now.clone();
            true
        }
    }
}

/// Removes the condition of the given type. Returns whether it was present.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).unwrap())
    }

    fn update(status: ConditionStatus, message: &str) -> ConditionUpdate<'_> {
        ConditionUpdate { type_: "Ready", status, reason: "R", message, codes: &[] }
    }

    #[test]
    fn new_condition_sets_both_times() {
        let mut cs = Vec::new();
        assert!(set_condition(&mut cs, update(ConditionStatus::True, "ok"), &at(10)));
        assert_eq!(cs[0].last_transition_time, at(10));
        assert_eq!(cs[0].last_update_time, at(10));
    }

    #[test]
    fn unchanged_condition_is_not_touched() {
        let mut cs = Vec::new();
        set_condition(&mut cs, update(ConditionStatus::True, "ok"), &at(10));
        assert!(!set_condition(&mut cs, update(ConditionStatus::True, "ok"), &at(20)));
        assert_eq!(cs[0].last_update_time, at(10));
    }

    #[test]
    fn message_change_moves_only_update_time() {
        let mut cs = Vec::new();
        set_condition(&mut cs, update(ConditionStatus::True, "ok"), &at(10));
        assert!(set_condition(&mut cs, update(ConditionStatus::True, "still ok"), &at(20)));
        assert_eq!(cs[0].last_transition_time, at(10));
        assert_eq!(cs[0].last_update_time, at(20));
    }

    #[test]
    fn status_change_moves_transition_time() {
        let mut cs = Vec::new();
        set_condition(&mut cs, update(ConditionStatus::True, "ok"), &at(10));
        assert!(set_condition(&mut cs, update(ConditionStatus::False, "broken"), &at(30)));
        assert_eq!(cs[0].last_transition_time, at(30));
        assert!(!is_condition_true(&cs, "Ready"));
        assert!(remove_condition(&mut cs, "Ready"));
        assert!(cs.is_empty());
    }

    #[test]
    fn codes_are_part_of_the_content() {
        let mut cs = Vec::new();
        set_condition(&mut cs, update(ConditionStatus::False, "x"), &at(10));
        let codes = [ErrorCode::InfraUnauthorized];
        let u = ConditionUpdate { codes: &codes, ..update(ConditionStatus::False, "x") };
        assert!(set_condition(&mut cs, u, &at(11)));
        assert_eq!(cs[0].codes, codes);
    }
}
