use super::*;

fn member(id: u64, name: &str, host: &str, learner: bool) -> Member {
    Member {
        id,
        name: name.to_string(),
        peer_urls: vec![format!("https://{host}.etcd-main-peer.ns.svc:2380")],
        client_urls: if name.is_empty() { vec![] } else { vec![format!("https://{host}.etcd-main-peer.ns.svc:2379")] },
        is_learner: learner,
    }
}

fn url(host: &str) -> String {
    format!("https://{host}.etcd-main-peer.ns.svc:2380")
}

#[test]
fn the_first_member_bootstraps_only_when_nobody_answers_and_the_others_wait() {
    assert_eq!(plan(false, true, &url("etcd-main-0"), None), Plan::Bootstrap);
    assert_eq!(plan(false, false, &url("etcd-main-1"), None), Plan::Wait);
    assert_eq!(plan(true, false, &url("etcd-main-1"), None), Plan::DataPresent);
    // The first member's volume is lost while the others run: it joins, never bootstraps anew.
    let running = [member(1, "etcd-main-0", "etcd-main-0", false), member(2, "etcd-main-1", "etcd-main-1", false)];
    assert_eq!(plan(false, true, &url("etcd-main-0"), Some(&running)), Plan::Join);
    assert_eq!(entry(&running, &url("etcd-main-0")), Entry::Remove(1));
}

#[test]
fn a_new_member_joins_as_a_learner_with_the_running_members_and_itself() {
    let running = [member(1, "etcd-main-0", "etcd-main-0", false)];
    assert_eq!(plan(false, false, &url("etcd-main-1"), Some(&running)), Plan::Join);
    assert_eq!(entry(&running, &url("etcd-main-1")), Entry::Add);
    // After the add, the cluster lists the learner without a name yet.
    let after = [running[0].clone(), member(2, "", "etcd-main-1", true)];
    assert_eq!(
        initial_cluster(&after, "etcd-main-1", &url("etcd-main-1")),
        format!("etcd-main-0={},etcd-main-1={}", url("etcd-main-0"), url("etcd-main-1"))
    );
}

#[test]
fn an_added_member_that_never_started_keeps_its_entry_and_others_are_named_by_their_host() {
    // Member 2 was added (no name yet) and member 1 too, before either started.
    let members = [
        member(1, "etcd-main-0", "etcd-main-0", false),
        member(2, "", "etcd-main-1", true),
        member(3, "", "etcd-main-2", true),
    ];
    assert_eq!(plan(false, false, &url("etcd-main-2"), Some(&members)), Plan::Join);
    assert_eq!(entry(&members, &url("etcd-main-2")), Entry::Use(3));
    assert_eq!(
        initial_cluster(&members, "etcd-main-2", &url("etcd-main-2")),
        format!(
            "etcd-main-0={},etcd-main-1={},etcd-main-2={}",
            url("etcd-main-0"),
            url("etcd-main-1"),
            url("etcd-main-2")
        )
    );
}

#[test]
fn a_member_with_data_that_is_still_a_learner_is_promoted() {
    let members = [member(1, "etcd-main-0", "etcd-main-0", false), member(7, "etcd-main-1", "etcd-main-1", true)];
    assert_eq!(plan(true, false, &url("etcd-main-1"), Some(&members)), Plan::Promote { id: 7 });
    let voting = [member(1, "etcd-main-0", "etcd-main-0", false), member(7, "etcd-main-1", "etcd-main-1", false)];
    assert_eq!(plan(true, false, &url("etcd-main-1"), Some(&voting)), Plan::DataPresent);
}
