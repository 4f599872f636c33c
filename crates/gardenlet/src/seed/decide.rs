//! What the Seed's status should say: capacity and allocatable shoots, the `GardenletReady`
//! and (for a seed with a backup configuration) `BackupBucketsReady` conditions, the observed
//! generation and the gardenlet identity.

use api::common::{ConditionStatus, Gardener};
use api::core::SeedStatus;
use api::helpers::conditions::{ConditionUpdate, set_condition};
use api::helpers::constants::conditions::{BACKUP_BUCKETS_READY, GARDENLET_READY};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Inputs of [`desired_status`].
#[derive(Debug, Clone)]
pub struct SeedFacts<'a> {
    pub generation: Option<i64>,
    pub capacity_shoots: i64,
    pub reserved_shoots: i64,
    pub gardener: &'a Gardener,
    /// The seed's backup bucket: `None` without a backup configuration, else whether it is
    /// ready or why not.
    pub backup: Option<Result<(), String>>,
}

/// The status gardenlet wants, starting from the current one; `None` when the current status
/// already says everything (so nothing is written).
pub fn desired_status(current: Option<&SeedStatus>, facts: &SeedFacts<'_>, now: &Time) -> Option<SeedStatus> {
    let mut status = current.cloned().unwrap_or_default();
    status.capacity.insert("shoots".into(), Quantity(facts.capacity_shoots.to_string()));
    let allocatable = (facts.capacity_shoots - facts.reserved_shoots).max(0);
    status.allocatable.insert("shoots".into(), Quantity(allocatable.to_string()));
    status.observed_generation = facts.generation;
    status.gardener = Some(facts.gardener.clone());
    set_condition(
        &mut status.conditions,
        ConditionUpdate {
            type_: GARDENLET_READY,
            status: ConditionStatus::True,
            reason: "GardenletReady",
            message: "Gardenlet is posting ready status.",
            codes: &[],
        },
        now,
    );
    if let Some(backup) = &facts.backup {
        let (condition_status, reason, message) = match backup {
            Ok(()) => {
                (ConditionStatus::True, "BackupBucketsAvailable", "The seed's backup bucket is ready.".to_string())
            }
            Err(why) => {
                (ConditionStatus::False, "BackupBucketsError", format!("The seed's backup bucket is not ready: {why}"))
            }
        };
        set_condition(
            &mut status.conditions,
            ConditionUpdate {
                type_: BACKUP_BUCKETS_READY,
                status: condition_status,
                reason,
                message: &message,
                codes: &[],
            },
            now,
        );
    } else {
        status.conditions.retain(|c| c.type_ != BACKUP_BUCKETS_READY);
    }
    (Some(&status) != current).then_some(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn facts(gardener: &Gardener) -> SeedFacts<'_> {
        SeedFacts { generation: Some(2), capacity_shoots: 250, reserved_shoots: 10, gardener, backup: None }
    }

    fn at(s: i64) -> Time {
        Time(Timestamp::from_second(s).unwrap())
    }

    #[test]
    fn first_status_has_capacity_allocatable_and_ready() {
        let g = Gardener { id: "x".into(), name: "gardenlet-0".into(), version: "0.1.0".into() };
        let s = desired_status(None, &facts(&g), &at(1)).unwrap();
        assert_eq!(s.capacity["shoots"], Quantity("250".into()));
        assert_eq!(s.allocatable["shoots"], Quantity("240".into()));
        assert_eq!(s.observed_generation, Some(2));
        assert_eq!(s.conditions[0].type_, "GardenletReady");
        assert_eq!(s.conditions[0].status, ConditionStatus::True);
    }

    #[test]
    fn an_unchanged_seed_needs_no_write() {
        let g = Gardener::default();
        let s = desired_status(None, &facts(&g), &at(1)).unwrap();
        assert_eq!(desired_status(Some(&s), &facts(&g), &at(99)), None);
        let mut grown = facts(&g);
        grown.capacity_shoots = 300;
        let s2 = desired_status(Some(&s), &grown, &at(99)).unwrap();
        assert_eq!(s2.allocatable["shoots"], Quantity("290".into()));
        assert_eq!(s2.conditions[0].last_update_time, at(1), "the condition did not change");
    }

    #[test]
    fn a_seed_with_backup_reports_its_bucket() {
        let g = Gardener::default();
        let bucket = |b: Result<(), String>| SeedFacts { backup: Some(b), ..facts(&g) };
        let pending =
            desired_status(None, &bucket(Err("last operation is Reconcile Processing".into())), &at(1)).unwrap();
        let c = pending.conditions.iter().find(|c| c.type_ == "BackupBucketsReady").unwrap();
        assert_eq!((c.status, c.reason.as_str()), (ConditionStatus::False, "BackupBucketsError"));
        assert!(c.message.contains("Reconcile Processing"), "{}", c.message);
        let ready = desired_status(Some(&pending), &bucket(Ok(())), &at(2)).unwrap();
        let c = ready.conditions.iter().find(|c| c.type_ == "BackupBucketsReady").unwrap();
        assert_eq!(c.status, ConditionStatus::True);
        assert_eq!(desired_status(Some(&ready), &bucket(Ok(())), &at(3)), None, "nothing new to write");
        let without = desired_status(Some(&ready), &facts(&g), &at(4)).unwrap();
        assert!(without.conditions.iter().all(|c| c.type_ != "BackupBucketsReady"), "no backup, no condition");
    }

    #[test]
    fn a_condition_reported_false_elsewhere_is_set_back_to_true() {
        let g = Gardener::default();
        let mut s = desired_status(None, &facts(&g), &at(1)).unwrap();
        s.conditions[0].status = ConditionStatus::Unknown;
        let fixed = desired_status(Some(&s), &facts(&g), &at(5)).unwrap();
        assert_eq!(fixed.conditions[0].status, ConditionStatus::True);
        assert_eq!(fixed.conditions[0].last_transition_time, at(5));
    }
}
