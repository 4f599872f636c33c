use super::*;
use LastOperationState as S;
use LastOperationType as T;
use PendingReplicaReason as R;
use api::common::ConditionStatus;
use api::helpers::conditions::get_condition;
use api::seedmanagement::ManagedSeedSetSpec;
use k8s_openapi::jiff::Timestamp;

const REV: &str = "s-new";

fn shoot(state: LastOperationState) -> ShootFacts {
    ShootFacts {
        deleting: false,
        generation_observed: true,
        last_operation: Some((T::Create, state)),
        healthy: true,
        revision: Some(REV.into()),
    }
}

/// A replica that is ready at the update revision.
fn ready(ordinal: i32) -> Replica {
    Replica {
        ordinal,
        shoot: Some(shoot(S::Succeeded)),
        managed_seed: Some(ManagedSeedFacts {
            revision: Some(REV.into()),
            priority: DEFAULT_PRIORITY,
            ..Default::default()
        }),
        seed_ready: Some(true),
        scheduled_shoots: 0,
    }
}

fn facts(wanted: i32, replicas: Vec<Replica>) -> Facts {
    Facts {
        deleting: false,
        replicas_wanted: wanted,
        partition: 0,
        update_revision: REV.into(),
        next_replica_number: replicas.iter().map(|r| r.ordinal + 1).max().unwrap_or(0),
        replicas,
    }
}

fn step(f: &Facts) -> (Step, Option<(i32, PendingReplicaReason)>) {
    let d = decide(f);
    (d.step, d.pending)
}

type Change = fn(&mut Replica);

#[test]
fn phases_from_least_to_most_advanced() {
    let cases: Vec<(Change, Phase, bool)> = vec![
        (|_| {}, Phase::Registered, true),
        (|r| r.seed_ready = Some(false), Phase::Registered, false),
        (|r| r.shoot.as_mut().unwrap().healthy = false, Phase::Registered, false),
        (|r| r.seed_ready = None, Phase::ManagedSeedPreparing, false),
        (|r| r.managed_seed = None, Phase::ShootReconciled, false),
        (|r| r.shoot.as_mut().unwrap().generation_observed = false, Phase::ShootReconciling, false),
        (
            |r| r.shoot.as_mut().unwrap().last_operation = Some((T::Reconcile, S::Processing)),
            Phase::ShootReconciling,
            false,
        ),
        (
            |r| r.shoot.as_mut().unwrap().last_operation = Some((T::Create, S::Error)),
            Phase::ShootReconcileFailed,
            false,
        ),
        (|r| r.shoot.as_mut().unwrap().last_operation = None, Phase::ShootReconciling, false),
        (|r| r.shoot.as_mut().unwrap().deleting = true, Phase::ShootDeleting, false),
        (
            |r| {
                let s = r.shoot.as_mut().unwrap();
                s.deleting = true;
                s.last_operation = Some((T::Delete, S::Error));
            },
            Phase::ShootDeleteFailed,
            false,
        ),
        (|r| r.managed_seed.as_mut().unwrap().deleting = true, Phase::ManagedSeedDeleting, false),
        (|r| r.shoot = None, Phase::ShootMissing, false),
    ];
    for (i, (change, phase, is_ready)) in cases.into_iter().enumerate() {
        let mut r = ready(0);
        change(&mut r);
        assert_eq!((r.phase(), r.ready()), (phase, is_ready), "case {i}: {r:?}");
    }
    assert!(Phase::ShootReconciled < Phase::Registered && Phase::ShootMissing < Phase::ShootReconcileFailed);
}

#[test]
fn scale_out_one_replica_at_a_time_shoot_first() {
    // 0 -> 2: the Shoot of ordinal 0 first.
    let d = decide(&facts(2, vec![]));
    assert_eq!((d.step, d.pending, d.next_replica_number), (Step::CreateShoot(0), Some((0, R::ShootReconciling)), 1));
    // Its Shoot reconciles: wait.
    let mut r0 = ready(0);
    r0.managed_seed = None;
    r0.seed_ready = None;
    r0.shoot = Some(shoot(S::Processing));
    assert_eq!(step(&facts(2, vec![r0.clone()])), (Step::Wait, Some((0, R::ShootReconciling))));
    // Succeeded: the ManagedSeed.
    r0.shoot = Some(shoot(S::Succeeded));
    assert_eq!(step(&facts(2, vec![r0.clone()])), (Step::CreateManagedSeed(0), Some((0, R::ManagedSeedPreparing))));
    // No Seed yet, then a Seed not ready, then an unhealthy Shoot: wait, saying which.
    r0.managed_seed = ready(0).managed_seed;
    assert_eq!(step(&facts(2, vec![r0.clone()])), (Step::Wait, Some((0, R::ManagedSeedPreparing))));
    r0.seed_ready = Some(false);
    assert_eq!(step(&facts(2, vec![r0.clone()])), (Step::Wait, Some((0, R::SeedNotReady))));
    r0.seed_ready = Some(true);
    r0.shoot.as_mut().unwrap().healthy = false;
    assert_eq!(step(&facts(2, vec![r0.clone()])), (Step::Wait, Some((0, R::ShootNotHealthy))));
    // Ready: the next ordinal.
    let d = decide(&facts(2, vec![ready(0)]));
    assert_eq!((d.step, d.next_replica_number), (Step::CreateShoot(1), 2));
    // Done.
    assert_eq!(step(&facts(2, vec![ready(0), ready(1)])), (Step::Wait, None));
}

#[test]
fn ordinals_are_never_reused() {
    // Replica 1 was removed, 0 and 2 remain; status says 3 was next: the new one is 3.
    let mut f = facts(3, vec![ready(0), ready(2)]);
    assert_eq!(step(&f), (Step::CreateShoot(3), Some((3, R::ShootReconciling))));
    // A recorded number ahead of the replicas wins; one behind them does not.
    f.next_replica_number = 7;
    assert_eq!(decide(&f).step, Step::CreateShoot(7));
    f.next_replica_number = 0;
    assert_eq!(decide(&f).step, Step::CreateShoot(3));
    assert_eq!(decide(&f).next_replica_number, 4);
}

#[test]
fn a_failed_or_missing_shoot_is_waited_for_or_recreated() {
    let mut r = ready(1);
    r.shoot = Some(shoot(S::Error));
    assert_eq!(step(&facts(3, vec![ready(0), r.clone()])), (Step::Wait, Some((1, R::ShootReconcileFailed))));
    r.shoot = None;
    assert_eq!(step(&facts(2, vec![ready(0), r])), (Step::CreateShoot(1), Some((1, R::ShootReconciling))));
}

#[test]
fn scale_in_removes_the_managed_seed_then_the_shoot_of_the_highest_ordinal() {
    let f = facts(1, vec![ready(0), ready(1)]);
    assert_eq!(step(&f), (Step::DeleteManagedSeed(1), Some((1, R::ManagedSeedDeleting))));
    let mut leaving = ready(1);
    leaving.managed_seed.as_mut().unwrap().deleting = true;
    assert_eq!(step(&facts(1, vec![ready(0), leaving.clone()])), (Step::Wait, Some((1, R::ManagedSeedDeleting))));
    leaving.managed_seed = None;
    leaving.seed_ready = None;
    assert_eq!(step(&facts(1, vec![ready(0), leaving.clone()])), (Step::DeleteShoot(1), Some((1, R::ShootDeleting))));
    leaving.shoot.as_mut().unwrap().deleting = true;
    assert_eq!(step(&facts(1, vec![ready(0), leaving.clone()])), (Step::Wait, Some((1, R::ShootDeleting))));
    leaving.shoot.as_mut().unwrap().last_operation = Some((T::Delete, S::Error));
    assert_eq!(step(&facts(1, vec![ready(0), leaving])), (Step::Wait, Some((1, R::ShootDeleteFailed))));
}

#[test]
fn scale_in_picks_empty_unprotected_replicas_by_gep13_priorities() {
    let with = |ordinal, change: fn(&mut Replica)| {
        let mut r = ready(ordinal);
        change(&mut r);
        r
    };
    let pick = |rs: Vec<Replica>| pick_to_delete(&rs).map(|r| r.ordinal);
    // Equal replicas: the highest ordinal.
    assert_eq!(pick(vec![ready(0), ready(1), ready(2)]), Some(2));
    // A seed hosting shoots or a protected ManagedSeed is never picked.
    assert_eq!(pick(vec![ready(0), ready(1), with(2, |r| r.scheduled_shoots = 1)]), Some(1));
    assert_eq!(pick(vec![ready(0), with(1, |r| r.managed_seed.as_mut().unwrap().protected = true)]), Some(0));
    assert_eq!(pick(vec![with(0, |r| r.scheduled_shoots = 4)]), None);
    // A not-ready seed before a ready one; the lower priority before the higher.
    assert_eq!(pick(vec![ready(0), with(1, |r| r.seed_ready = Some(false)), ready(2)]), Some(1));
    assert_eq!(pick(vec![with(0, |r| r.managed_seed.as_mut().unwrap().priority = 1), ready(1)]), Some(0));
    // The least advanced first: a replica still being created goes before a registered one.
    assert_eq!(pick(vec![ready(0), with(1, |r| r.shoot.as_mut().unwrap().last_operation = None), ready(2)]), Some(1));
    // The phase outranks the seed's readiness and the priority.
    let unready_low = with(0, |r| {
        r.seed_ready = Some(false);
        r.managed_seed.as_mut().unwrap().priority = 0;
    });
    assert_eq!(pick(vec![unready_low, with(1, |r| r.managed_seed = None)]), Some(1));
}

#[test]
fn a_blocked_scale_in_says_why_and_does_nothing() {
    let mut busy = ready(1);
    busy.scheduled_shoots = 2;
    let mut busy0 = ready(0);
    busy0.scheduled_shoots = 1;
    let d = decide(&facts(1, vec![busy0, busy]));
    assert_eq!((d.step, d.pending), (Step::Wait, None));
    assert!(d.blocked.unwrap().contains("1 replica(s) must go"));
}

#[test]
fn a_replica_already_leaving_is_finished_first() {
    // Replica 0's ManagedSeed is going (an earlier scale-in); 2 would be the next pick.
    let mut leaving = ready(0);
    leaving.managed_seed.as_mut().unwrap().deleting = true;
    leaving.scheduled_shoots = 1;
    assert_eq!(step(&facts(1, vec![leaving, ready(1), ready(2)])), (Step::Wait, Some((0, R::ManagedSeedDeleting))));
}

#[test]
fn a_not_ready_replica_holds_scale_out_and_updates() {
    let mut sick = ready(0);
    sick.seed_ready = Some(false);
    assert_eq!(step(&facts(3, vec![sick.clone(), ready(1)])), (Step::Wait, Some((0, R::SeedNotReady))));
    let mut old = ready(1);
    old.shoot.as_mut().unwrap().revision = Some("s-old".into());
    assert_eq!(step(&facts(2, vec![sick, old])), (Step::Wait, Some((0, R::SeedNotReady))));
}

#[test]
fn rolling_update_descends_from_the_highest_ordinal_at_or_above_the_partition() {
    let old = |ordinal| {
        let mut r = ready(ordinal);
        r.shoot.as_mut().unwrap().revision = Some("s-old".into());
        r.managed_seed.as_mut().unwrap().revision = Some("s-old".into());
        r
    };
    let mut f = facts(3, vec![old(0), old(1), old(2)]);
    assert_eq!(step(&f), (Step::Update(2), Some((2, R::ShootReconciling))));
    f.replicas[2] = ready(2);
    assert_eq!(decide(&f).step, Step::Update(1));
    // The updated replica must be ready again before its predecessor is touched.
    f.replicas[2].shoot.as_mut().unwrap().generation_observed = false;
    assert_eq!(step(&f), (Step::Wait, Some((2, R::ShootReconciling))));
    // A partition keeps lower ordinals at their revision.
    f.replicas[2] = ready(2);
    f.partition = 2;
    assert_eq!(step(&f), (Step::Wait, None));
    f.partition = 1;
    assert_eq!(decide(&f).step, Step::Update(1));
    // Beyond every ordinal: nothing is updated.
    f.partition = 9;
    f.replicas[2] = old(2);
    assert_eq!(decide(&f).step, Step::Wait);
}

#[test]
fn deleting_the_set_removes_replicas_in_descending_order_managed_seed_first() {
    let mut f = facts(2, vec![ready(0), ready(1)]);
    f.deleting = true;
    assert_eq!(step(&f), (Step::DeleteManagedSeed(1), Some((1, R::ManagedSeedDeleting))));
    f.replicas[1].managed_seed = None;
    assert_eq!(step(&f), (Step::DeleteShoot(1), Some((1, R::ShootDeleting))));
    f.replicas.pop();
    assert_eq!(decide(&f).step, Step::DeleteManagedSeed(0));
    // Even a replica that hosts shoots goes: the set's owner asked for it.
    f.replicas[0].scheduled_shoots = 3;
    assert_eq!(decide(&f).step, Step::DeleteManagedSeed(0));
    f.replicas.clear();
    assert_eq!(step(&f), (Step::RemoveFinalizer, None));
}

fn at(s: i64) -> Time {
    Time(Timestamp::from_second(1_700_000_000 + s).unwrap())
}

fn set_with(status: Option<ManagedSeedSetStatus>) -> ManagedSeedSet {
    let mut s = ManagedSeedSet::new("s", ManagedSeedSetSpec::default());
    s.metadata.generation = Some(4);
    s.status = status;
    s
}

#[test]
fn status_counts_revisions_and_keeps_since() {
    let mut old = ready(1);
    old.shoot.as_mut().unwrap().revision = Some("s-old".into());
    old.managed_seed.as_mut().unwrap().revision = Some("s-old".into());
    let f = facts(2, vec![ready(0), old]);
    let d = decide(&f);
    assert_eq!(d.step, Step::Update(1));
    let prior = ManagedSeedSetStatus { current_revision: "s-old".into(), ..Default::default() };
    let st = status(&set_with(Some(prior)), &f, &d, &at(10));
    assert_eq!((st.observed_generation, st.replicas, st.ready_replicas, st.next_replica_number), (4, 2, 2, 2));
    assert_eq!((st.current_revision.as_str(), st.update_revision.as_str()), ("s-old", REV));
    assert_eq!((st.current_replicas, st.updated_replicas), (1, 1));
    let p = st.pending_replica.clone().unwrap();
    assert_eq!((p.name.as_str(), p.reason, p.since.clone()), ("s-1", R::ShootReconciling, at(10)));
    let c = get_condition(&st.conditions, CONDITION_REPLICAS_READY).unwrap();
    assert_eq!((c.status, c.reason.as_str()), (ConditionStatus::False, "ShootReconciling"));

    // The same pending replica and reason later: `since` and the condition stay, so an
    // unchanged situation writes nothing.
    let again = status(&set_with(Some(st.clone())), &f, &d, &at(99));
    assert_eq!(again, st);

    // All at the update revision: it becomes the current one.
    let f = facts(2, vec![ready(0), ready(1)]);
    let d = decide(&f);
    let done = status(&set_with(Some(st)), &f, &d, &at(20));
    assert_eq!((done.current_revision.as_str(), done.current_replicas, done.updated_replicas), (REV, 2, 2));
    assert_eq!(done.pending_replica, None);
    let c = get_condition(&done.conditions, CONDITION_REPLICAS_READY).unwrap();
    assert_eq!((c.status, c.reason.as_str()), (ConditionStatus::True, "AllReplicasReady"));
}

#[test]
fn status_of_a_blocked_scale_in_and_of_a_new_set() {
    let mut busy = ready(0);
    busy.scheduled_shoots = 1;
    let f = facts(0, vec![busy]);
    let st = status(&set_with(None), &f, &decide(&f), &at(0));
    let c = get_condition(&st.conditions, CONDITION_REPLICAS_READY).unwrap();
    assert_eq!((c.status, c.reason.as_str()), (ConditionStatus::False, "ScaleInBlocked"));
    assert_eq!(st.current_revision, REV, "a new set starts at its update revision");

    let f = facts(0, vec![]);
    let st = status(&set_with(None), &f, &decide(&f), &at(0));
    assert_eq!((st.replicas, st.ready_replicas, st.pending_replica.is_none()), (0, 0, true));
    assert_eq!(get_condition(&st.conditions, CONDITION_REPLICAS_READY).unwrap().status, ConditionStatus::True);
}

#[test]
fn replica_names_and_ordinals() {
    assert_eq!(replica_name("s", 3), "s-3");
    let cases = [
        ("s-0", Some(0)),
        ("s-12", Some(12)),
        ("s-01", None),
        ("s-", None),
        ("s-x", None),
        ("s-1-2", None),
        ("t-1", None),
        ("s1", None),
        ("s-s-1", None),
    ];
    for (name, want) in cases {
        assert_eq!(ordinal("s", name), want, "{name}");
    }
    assert_eq!(ordinal("s-s", "s-s-1"), Some(1));
}
