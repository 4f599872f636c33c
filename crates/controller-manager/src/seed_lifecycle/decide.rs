//! Is a seed's gardenlet alive, and what follows if not. Pure: the Lease's last renewal, the
//! Seed's `GardenletReady` condition and the time in; what to write and when to look again out.
//!
//! The rules (as the reference system's seed lifecycle controller): a Seed whose heartbeat Lease
//! was not renewed within the gardenlet grace period becomes `GardenletReady=Unknown` (a new
//! Seed without a Lease gets the grace period from its creation); once it has been `Unknown`
//! for the shoot grace period, the conditions and constraints of the Shoots on it become
//! `Unknown` as well, because nobody reports their health any more.

use api::common::{Condition, ConditionStatus};
use api::core::shoot::ShootStatus;
use api::helpers::conditions::{ConditionUpdate, set_condition};
use api::helpers::constants::conditions::{
    API_SERVER_AVAILABLE, CONTROL_PLANE_HEALTHY, EVERY_NODE_READY, GARDENLET_READY, SYSTEM_COMPONENTS_HEALTHY,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::time::Duration;

/// Reason of `GardenletReady=Unknown` set here.
pub const REASON_SEED_UNKNOWN: &str = "SeedStatusUnknown";
/// Reason of shoot conditions set to `Unknown` here.
pub const REASON_SHOOT_UNKNOWN: &str = "StatusUnknown";
/// Their message.
pub const MESSAGE_SHOOT_UNKNOWN: &str = "Gardenlet stopped sending heartbeats.";
/// Shoot conditions that are always reported (created as `Unknown` when missing).
pub const SHOOT_CONDITIONS: [&str; 5] = [
    API_SERVER_AVAILABLE,
    CONTROL_PLANE_HEALTHY,
    "ObservabilityComponentsHealthy",
    EVERY_NODE_READY,
    SYSTEM_COMPONENTS_HEALTHY,
];

/// What is known about one seed.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub seed: &'a str,
    pub created: Option<Timestamp>,
    /// `spec.renewTime` of the heartbeat Lease, if there is one.
    pub renewed: Option<Timestamp>,
    pub gardenlet_ready: Option<&'a Condition>,
    pub now: Timestamp,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Set `GardenletReady=Unknown` with this message (a no-op write is skipped by the caller).
    pub seed_unknown: Option<String>,
    /// Set the conditions of the seed's shoots to `Unknown`.
    pub shoots_unknown: bool,
    /// When to look again without an event.
    pub requeue_after: Option<Duration>,
}

fn until(from: Timestamp, to: Timestamp) -> Duration {
    Duration::try_from(to.duration_since(from)).unwrap_or_default()
}

fn plus(t: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d).ok().and_then(|d| t.checked_add(d).ok()).unwrap_or(Timestamp::MAX)
}

pub fn decide(facts: &Facts<'_>, gardenlet_grace: Duration, shoot_grace: Duration) -> Decision {
    let last_sign = facts.renewed.or(facts.created).unwrap_or(facts.now);
    let deadline = plus(last_sign, gardenlet_grace);
    if facts.now < deadline {
        return Decision { seed_unknown: None, shoots_unknown: false, requeue_after: Some(until(facts.now, deadline)) };
    }
    let message = match facts.renewed {
        Some(t) => format!(
            "Gardenlet stopped posting seed status: its heartbeat Lease {}/{} was last renewed at {t}, more than {}s ago.",
            crate::seed_lifecycle::SEED_LEASE_NAMESPACE,
            facts.seed,
            gardenlet_grace.as_secs()
        ),
        None => format!(
            "Gardenlet stopped posting seed status: no heartbeat Lease {}/{} within {}s of the seed's creation.",
            crate::seed_lifecycle::SEED_LEASE_NAMESPACE,
            facts.seed,
            gardenlet_grace.as_secs()
        ),
    };
    // Unknown since the condition's transition, or from now on.
    let since = match facts.gardenlet_ready {
        Some(c) if c.status == ConditionStatus::Unknown => c.last_transition_time.0,
        _ => facts.now,
    };
    let shoot_deadline = plus(since, shoot_grace);
    if facts.now < shoot_deadline {
        return Decision {
            seed_unknown: Some(message),
            shoots_unknown: false,
            requeue_after: Some(until(facts.now, shoot_deadline)),
        };
    }
    // Shoots scheduled onto the dead seed later are caught by the next look.
    Decision { seed_unknown: Some(message), shoots_unknown: true, requeue_after: Some(Duration::from_secs(60)) }
}

/// The seed's conditions with `GardenletReady=Unknown`; `None` when already so.
pub fn seed_conditions(current: &[Condition], message: &str, now: Timestamp) -> Option<Vec<Condition>> {
    let mut conditions = current.to_vec();
    let update = ConditionUpdate {
        type_: GARDENLET_READY,
        status: ConditionStatus::Unknown,
        reason: REASON_SEED_UNKNOWN,
        message,
        codes: &[],
    };
    set_condition(&mut conditions, update, &Time(now)).then_some(conditions)
}

/// The shoot's conditions (the standard ones created when missing) and constraints, all
/// `Unknown`; `None` when already so.
pub fn shoot_status(current: Option<&ShootStatus>, now: Timestamp) -> Option<(Vec<Condition>, Vec<Condition>)> {
    let mut conditions = current.map(|s| s.conditions.clone()).unwrap_or_default();
    let mut constraints = current.map(|s| s.constraints.clone()).unwrap_or_default();
    let types: Vec<String> =
        SHOOT_CONDITIONS.iter().map(|t| t.to_string()).chain(conditions.iter().map(|c| c.type_.clone())).collect();
    fn unknown(type_: &str) -> ConditionUpdate<'_> {
        ConditionUpdate {
            type_,
            status: ConditionStatus::Unknown,
            reason: REASON_SHOOT_UNKNOWN,
            message: MESSAGE_SHOOT_UNKNOWN,
            codes: &[],
        }
    }
    let mut changed = false;
    for type_ in &types {
        changed |= set_condition(&mut conditions, unknown(type_), &Time(now));
    }
    let constraint_types: Vec<String> = constraints.iter().map(|c| c.type_.clone()).collect();
    for type_ in &constraint_types {
        changed |= set_condition(&mut constraints, unknown(type_), &Time(now));
    }
    changed.then_some((conditions, constraints))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(90);
    const SHOOT_GRACE: Duration = Duration::from_secs(300);

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_000_000 + s).unwrap()
    }

    fn facts(renewed: Option<i64>, ready: Option<&Condition>, now: i64) -> Facts<'_> {
        Facts { seed: "s", created: Some(at(0)), renewed: renewed.map(at), gardenlet_ready: ready, now: at(now) }
    }

    fn unknown_since(s: i64) -> Condition {
        let mut cs = Vec::new();
        seed_conditions(&[], "x", at(s)).into_iter().for_each(|c| cs = c);
        cs.remove(0)
    }

    #[test]
    fn the_lease_and_the_grace_periods_decide() {
        let since_100 = unknown_since(100);
        let cases: Vec<(&str, Facts<'_>, bool, bool, Option<u64>)> = vec![
            ("renewed recently", facts(Some(50), None, 100), false, false, Some(40)),
            ("renewed exactly at the edge", facts(Some(10), None, 100), true, false, Some(300)),
            ("no lease, young seed", facts(None, None, 30), false, false, Some(60)),
            ("no lease, old seed", facts(None, None, 500), true, false, Some(300)),
            ("unknown, within the shoot grace", facts(Some(0), Some(&since_100), 200), true, false, Some(200)),
            ("unknown for long", facts(Some(0), Some(&since_100), 400), true, true, Some(60)),
        ];
        for (name, f, seed, shoots, requeue) in cases {
            let d = decide(&f, GRACE, SHOOT_GRACE);
            assert_eq!(d.seed_unknown.is_some(), seed, "{name}: {d:?}");
            assert_eq!(d.shoots_unknown, shoots, "{name}: {d:?}");
            assert_eq!(d.requeue_after.map(|r| r.as_secs()), requeue, "{name}: {d:?}");
        }
        let d = decide(&facts(Some(0), None, 100), GRACE, SHOOT_GRACE);
        let msg = d.seed_unknown.unwrap();
        assert!(msg.contains("gardener-system-seed-lease/s") && msg.contains("90s"), "{msg}");
    }

    #[test]
    fn the_seed_condition_is_written_once() {
        let conditions = seed_conditions(&[], "gone", at(0)).unwrap();
        assert_eq!(conditions[0].status, ConditionStatus::Unknown);
        assert_eq!(conditions[0].reason, REASON_SEED_UNKNOWN);
        assert_eq!(seed_conditions(&conditions, "gone", at(10)), None);
    }

    #[test]
    fn every_shoot_condition_and_constraint_becomes_unknown_once() {
        let mut status = ShootStatus::default();
        let ok = ConditionUpdate {
            type_: "HibernationPossible",
            status: ConditionStatus::True,
            reason: "Ok",
            message: "",
            codes: &[],
        };
        set_condition(&mut status.constraints, ok.clone(), &Time(at(0)));
        set_condition(&mut status.conditions, ConditionUpdate { type_: API_SERVER_AVAILABLE, ..ok }, &Time(at(0)));
        let (conditions, constraints) = shoot_status(Some(&status), at(5)).unwrap();
        assert_eq!(conditions.len(), SHOOT_CONDITIONS.len());
        assert!(
            conditions
                .iter()
                .chain(&constraints)
                .all(|c| c.status == ConditionStatus::Unknown && c.message == MESSAGE_SHOOT_UNKNOWN)
        );
        assert_eq!(constraints.len(), 1);
        status.conditions = conditions;
        status.constraints = constraints;
        assert_eq!(shoot_status(Some(&status), at(9)), None);
    }
}
