use super::*;

fn m(hash: &str, index: u32, serves: bool) -> Machine {
    Machine { name: format!("p-{hash}-{index}"), hash: hash.into(), index, serves, draining_since: None }
}

/// A simulated pool (test code): a created machine serves from the next tick on, a drain ends
/// one tick after it began. Runs the plans until the pool converges and checks at every tick
/// that no more than `desired + surge` machines exist and that at least `desired - unavailable`
/// serve, counting a draining machine as not serving. Returns the ticks and the drained names in
/// order.
fn simulate(desired: u32, start: Vec<Machine>, surge: u32, unavailable: u32) -> (u32, Vec<String>) {
    let mut machines = start;
    let mut drained = Vec::new();
    for tick in 0..100_i64 {
        if converged(desired, "new", &machines) {
            return (tick as u32, drained);
        }
        // Drains that began last tick end now; machines created last tick serve now.
        machines.retain(|x| x.draining_since.is_none_or(|since| since == tick));
        for x in &mut machines {
            x.serves = true;
        }
        let plan = plan(desired, "new", &machines, surge, unavailable);
        for i in plan.create {
            machines.push(m("new", i, false));
        }
        for name in plan.drain {
            let x = machines.iter_mut().find(|x| x.name == name).unwrap();
            x.draining_since = Some(tick);
            drained.push(name);
        }
        let serving = machines.iter().filter(|x| x.serves && x.draining_since.is_none()).count() as u32;
        assert!(machines.len() as u32 <= desired + surge, "tick {tick}: too many machines: {machines:?}");
        assert!(serving + unavailable >= desired, "tick {tick}: only {serving} serve: {machines:?}");
    }
    panic!("did not converge: {machines:?}");
}

#[test]
fn rolling_replacement_creates_before_it_deletes_within_the_limits() {
    for (surge, unavailable) in [(1, 0), (2, 0), (0, 1), (1, 1), (3, 0)] {
        let old = (0..3).map(|i| m("old", i, true)).collect();
        let (ticks, drained) = simulate(3, old, surge, unavailable);
        assert_eq!(drained.len(), 3, "every old machine drained: {drained:?}");
        assert!(drained.iter().all(|n| n.starts_with("p-old-")), "{drained:?}");
        assert!(ticks < 20, "surge {surge} unavailable {unavailable}: {ticks} ticks");
    }
    // The default (surge 1, none unavailable): the highest index goes first, only once a new
    // machine serves.
    let old: Vec<Machine> = (0..2).map(|i| m("old", i, true)).collect();
    let first = plan(2, "new", &old, 1, 0);
    assert_eq!(first, Plan { create: vec![0], drain: vec![] }, "create first, drain nothing yet");
    let mut now = old.clone();
    now.push(m("new", 0, false));
    assert_eq!(plan(2, "new", &now, 1, 0), Plan::default(), "wait for the new machine to serve");
    now[2].serves = true;
    assert_eq!(plan(2, "new", &now, 1, 0), Plan { create: vec![], drain: vec!["p-old-1".into()] });
    let (_, drained) = simulate(2, old, 1, 0);
    assert_eq!(drained, ["p-old-1", "p-old-0"]);
}

#[test]
fn no_machine_is_drained_while_the_new_ones_do_not_serve() {
    let mut machines: Vec<Machine> = (0..2).map(|i| m("old", i, true)).collect();
    machines.push(m("new", 0, false));
    for _ in 0..3 {
        assert!(plan(2, "new", &machines, 1, 0).drain.is_empty());
    }
    // A new machine whose node never became Ready blocks the roll-out, not the pool.
    assert!(plan(2, "new", &machines, 1, 0).create.is_empty(), "surge used up");
}

#[test]
fn a_machine_that_does_not_serve_is_drained_at_once() {
    let machines = vec![m("old", 0, false), m("old", 1, true)];
    let plan = plan(2, "new", &machines, 1, 0);
    assert_eq!(plan.drain, ["p-old-0"], "the broken one goes, the serving one stays");
}

#[test]
fn scale_up_from_nothing_creates_every_machine_at_once() {
    assert_eq!(plan(3, "new", &[], 1, 0), Plan { create: vec![0, 1, 2], drain: vec![] });
    let two = vec![m("new", 0, true), m("new", 1, true)];
    assert_eq!(plan(4, "new", &two, 1, 0).create, [2, 3], "a scale-up is not a roll-out");
}

#[test]
fn scale_down_drains_the_highest_indices() {
    let three: Vec<Machine> = (0..3).map(|i| m("new", i, true)).collect();
    assert_eq!(plan(1, "new", &three, 1, 0).drain, ["p-new-2", "p-new-1"]);
    assert_eq!(plan(0, "new", &three, 1, 0).drain.len(), 3);
    assert!(plan(3, "new", &three, 1, 0).is_empty(), "converged");
    assert!(converged(3, "new", &three));
}

#[test]
fn names_of_draining_machines_are_not_reused() {
    let mut machines = vec![m("new", 0, true), m("new", 1, true)];
    machines[1].draining_since = Some(5);
    assert_eq!(plan(2, "new", &machines, 1, 0).create, [2]);
    assert!(!converged(2, "new", &machines));
}

#[test]
fn a_drain_ends_when_nothing_is_left_or_at_the_timeout() {
    assert_eq!(drain_verdict(0, 100, 100, 30), DrainVerdict::Done);
    assert_eq!(drain_verdict(2, 100, 129, 30), DrainVerdict::Continue);
    assert_eq!(drain_verdict(2, 100, 130, 30), DrainVerdict::TimedOut);
}

#[test]
fn drain_timeouts_are_go_durations_with_the_machine_controllers_default() {
    assert_eq!(drain_timeout_seconds(None), Ok(7200));
    assert_eq!(drain_timeout_seconds(Some("30s")), Ok(30));
    assert_eq!(drain_timeout_seconds(Some("1h30m")), Ok(5400));
    assert!(drain_timeout_seconds(Some("-1s")).is_err());
    assert!(drain_timeout_seconds(Some("soon")).is_err());
}
