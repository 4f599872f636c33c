//! When a Bastion goes. Pure: the Bastion's times, its keep-alive request, what became of its
//! Shoot, and the time in; a heartbeat to record, a deletion, or when to look again out.
//!
//! The rules (as the reference system): a Bastion is deleted when its Shoot is gone, being
//! deleted, or moved to another seed; when its maximum lifetime since creation has passed; and
//! when its heartbeat went silent, that is `status.expirationTimestamp` passed. A user keeps it
//! alive with the annotation `gardener.cloud/operation: keepalive`, which records
//! `status.lastHeartbeatTimestamp` = now and moves the expiration to now + heartbeat timeout
//! (never past the maximum lifetime), and is removed again. (In the reference system the
//! aggregated API server handles the annotation; here the CRD has no such hook, so this
//! controller does.)

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::time::Duration;

/// What became of the Bastion's Shoot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShootState {
    Missing,
    Deleting,
    /// Present, with its `spec.seedName`.
    Present(Option<String>),
}

#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub created: Timestamp,
    pub last_heartbeat: Option<Timestamp>,
    pub expiration: Option<Timestamp>,
    pub keepalive: bool,
    pub seed: Option<&'a str>,
    pub shoot: ShootState,
    pub now: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Delete the Bastion; `reason` is the event's PascalCase reason.
    Delete { reason: &'static str, message: String },
    /// Record these times (when they differ from the status), remove the keep-alive annotation
    /// when asked, and look again after `requeue_after`.
    Keep { last_heartbeat: Timestamp, expiration: Timestamp, remove_keepalive: bool, requeue_after: Duration },
}

fn plus(t: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d).ok().and_then(|d| t.checked_add(d).ok()).unwrap_or(Timestamp::MAX)
}

fn until(from: Timestamp, to: Timestamp) -> Duration {
    Duration::try_from(to.duration_since(from)).unwrap_or_default()
}

pub fn decide(f: &Facts<'_>, max_lifetime: Duration, heartbeat_timeout: Duration) -> Decision {
    let delete = |reason, message: String| Decision::Delete { reason, message };
    match &f.shoot {
        ShootState::Missing => return delete("ShootGone", "its Shoot does not exist".into()),
        ShootState::Deleting => return delete("ShootDeleting", "its Shoot is being deleted".into()),
        ShootState::Present(Some(shoot_seed)) if f.seed.is_some_and(|s| s != shoot_seed) => {
            return delete(
                "ShootMigrated",
                format!("its Shoot moved from seed {} to seed {shoot_seed}", f.seed.unwrap_or_default()),
            );
        }
        ShootState::Present(_) => {}
    }
    let end_of_life = plus(f.created, max_lifetime);
    if f.now >= end_of_life {
        return delete(
            "MaxLifetimeReached",
            format!("it reached its maximum lifetime of {}s (created {})", max_lifetime.as_secs(), f.created),
        );
    }
    let (last_heartbeat, expiration) = if f.keepalive {
        (f.now, plus(f.now, heartbeat_timeout))
    } else {
        let last = f.last_heartbeat.unwrap_or(f.created);
        (last, f.expiration.unwrap_or_else(|| plus(last, heartbeat_timeout)))
    };
    let expiration = expiration.min(end_of_life);
    if f.now >= expiration && !f.keepalive {
        return delete("Expired", format!("no keep-alive since {last_heartbeat}; it expired at {expiration}"));
    }
    Decision::Keep {
        last_heartbeat,
        expiration,
        remove_keepalive: f.keepalive,
        requeue_after: until(f.now, expiration),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIFE: Duration = Duration::from_secs(1000);
    const TIMEOUT: Duration = Duration::from_secs(100);

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(5_000_000 + s).unwrap()
    }

    fn facts(now: i64) -> Facts<'static> {
        Facts {
            created: at(0),
            last_heartbeat: None,
            expiration: None,
            keepalive: false,
            seed: Some("a"),
            shoot: ShootState::Present(Some("a".into())),
            now: at(now),
        }
    }

    fn reason(d: &Decision) -> &'static str {
        match d {
            Decision::Delete { reason, .. } => reason,
            Decision::Keep { .. } => "Keep",
        }
    }

    #[test]
    fn a_new_bastion_lives_for_one_heartbeat_timeout() {
        let d = decide(&facts(10), LIFE, TIMEOUT);
        assert_eq!(
            d,
            Decision::Keep {
                last_heartbeat: at(0),
                expiration: at(100),
                remove_keepalive: false,
                requeue_after: Duration::from_secs(90)
            }
        );
        assert_eq!(reason(&decide(&facts(100), LIFE, TIMEOUT)), "Expired");
    }

    #[test]
    fn keepalive_moves_the_expiration_but_not_past_the_lifetime() {
        let f = Facts { keepalive: true, last_heartbeat: Some(at(0)), expiration: Some(at(100)), ..facts(90) };
        assert_eq!(
            decide(&f, LIFE, TIMEOUT),
            Decision::Keep {
                last_heartbeat: at(90),
                expiration: at(190),
                remove_keepalive: true,
                requeue_after: Duration::from_secs(100)
            }
        );
        let late = Facts { keepalive: true, ..facts(950) };
        match decide(&late, LIFE, TIMEOUT) {
            Decision::Keep { expiration, .. } => assert_eq!(expiration, at(1000)),
            d => panic!("{d:?}"),
        }
        let kept = Facts { last_heartbeat: Some(at(90)), expiration: Some(at(190)), ..facts(150) };
        assert_eq!(reason(&decide(&kept, LIFE, TIMEOUT)), "Keep");
        assert_eq!(reason(&decide(&Facts { now: at(190), ..kept }, LIFE, TIMEOUT)), "Expired");
    }

    #[test]
    fn deletion_reasons_in_order() {
        let cases = [
            (Facts { shoot: ShootState::Missing, ..facts(1) }, "ShootGone"),
            (Facts { shoot: ShootState::Deleting, ..facts(1) }, "ShootDeleting"),
            (Facts { shoot: ShootState::Present(Some("b".into())), ..facts(1) }, "ShootMigrated"),
            (Facts { shoot: ShootState::Present(None), ..facts(1) }, "Keep"),
            (Facts { keepalive: true, ..facts(1000) }, "MaxLifetimeReached"),
            (Facts { expiration: Some(at(5000)), ..facts(999) }, "Keep"),
        ];
        for (f, expected) in cases {
            assert_eq!(reason(&decide(&f, LIFE, TIMEOUT)), expected, "{f:?}");
        }
    }
}
