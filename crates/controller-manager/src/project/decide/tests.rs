use super::*;
use api::core::ProjectSpec;
use api::core::project::ProjectMember;
use k8s_openapi::jiff::Timestamp;

fn subject(kind: &str, name: &str) -> Subject {
    Subject { kind: kind.into(), name: name.into(), ..Default::default() }
}

fn member(kind: &str, name: &str, role: &str) -> ProjectMember {
    ProjectMember { subject: subject(kind, name), role: role.into(), roles: Vec::new() }
}

fn project(members: Vec<ProjectMember>) -> Project {
    let mut p = Project::new("dev", ProjectSpec { members, ..Default::default() });
    p.metadata.uid = Some("uid-1".into());
    p
}

#[test]
fn namespace_is_garden_name_or_the_spec() {
    let mut p = project(vec![]);
    assert_eq!(namespace_name(&p).unwrap(), "garden-dev");
    p.spec.namespace = Some("team-a".into());
    assert_eq!(namespace_name(&p).unwrap(), "team-a");
    p.spec.namespace = Some("Team_A".into());
    let err = namespace_name(&p).unwrap_err().to_string();
    assert!(err.contains("project dev") && err.contains("spec.namespace") && err.contains("Team_A"), "{err}");
}

#[test]
fn the_namespace_is_labelled_and_owned() {
    let p = project(vec![]);
    let ns = desired_namespace(&p, "garden-dev");
    assert_eq!(ns.labels()["project.gardener.cloud/name"], "dev");
    assert_eq!(ns.labels()["gardener.cloud/role"], "project");
    let owner = &ns.owner_references()[0];
    assert_eq!((owner.kind.as_str(), owner.uid.as_str(), owner.controller), ("Project", "uid-1", Some(true)));
    assert!(namespace_up_to_date(&ns, &ns));
    let mut bare = ns.clone();
    bare.metadata.labels = None;
    assert!(!namespace_up_to_date(&bare, &ns));
}

#[test]
fn ownership_reads_the_project_label() {
    let p = project(vec![]);
    assert_eq!(ownership(&p, None), Ownership::Absent);
    let ns = desired_namespace(&p, "garden-dev");
    assert_eq!(ownership(&p, Some(&ns)), Ownership::Ours);
    let other = desired_namespace(&Project::new("other", Default::default()), "garden-dev");
    assert_eq!(ownership(&p, Some(&other)), Ownership::Foreign("project other".into()));
    let plain = Namespace {
        metadata: ObjectMeta { name: Some("garden-dev".into()), ..Default::default() },
        ..Default::default()
    };
    assert!(matches!(ownership(&p, Some(&plain)), Ownership::Foreign(_)));
}

#[test]
fn roles_map_to_cluster_roles_with_sorted_unique_subjects() {
    let mut p = project(vec![
        member("User", "zoe", "admin"),
        member("User", "alice", "viewer"),
        ProjectMember { roles: vec!["uam".into(), "extension:foo".into()], ..member("Group", "ops", "admin") },
        member("User", "zoe", "owner"),
    ]);
    p.spec.owner = Some(subject("User", "zoe"));
    let bindings = desired_role_bindings(&p, "garden-dev").unwrap();
    let summary: Vec<(String, Vec<String>)> = bindings
        .iter()
        .map(|b| {
            assert_eq!(b.role_ref.name, b.name_any());
            assert_eq!(b.namespace().as_deref(), Some("garden-dev"));
            (
                b.name_any(),
                b.subjects.clone().unwrap_or_default().into_iter().map(|s| format!("{}:{}", s.kind, s.name)).collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (CLUSTER_ROLE_MEMBER.into(), vec!["Group:ops".into(), "User:zoe".into()]),
            (CLUSTER_ROLE_UAM.into(), vec!["Group:ops".into()]),
            (CLUSTER_ROLE_VIEWER.into(), vec!["User:alice".into()]),
        ]
    );
    assert!(binding_up_to_date(&bindings[0], &bindings[0]));
    assert!(!binding_up_to_date(&bindings[0], &bindings[1]));
}

#[test]
fn bad_members_name_the_field() {
    let cases = [
        (member("User", "a", "superuser"), "spec.members[0].role"),
        (ProjectMember { roles: vec!["root".into()], ..member("User", "a", "admin") }, "spec.members[0].roles[0]"),
        (member("Robot", "a", "admin"), "spec.members[0].kind"),
        (member("ServiceAccount", "robot", "admin"), "spec.members[0].namespace"),
        (member("User", "", "admin"), "spec.members[0].name"),
    ];
    for (m, field) in cases {
        let err = desired_role_bindings(&project(vec![m]), "ns").unwrap_err().to_string();
        assert!(err.contains(field) && err.contains("project dev"), "{err} does not name {field}");
    }
    let sa = ProjectMember {
        subject: Subject { namespace: Some("garden-dev".into()), ..subject("ServiceAccount", "robot") },
        ..member("", "", "viewer")
    };
    let b = desired_role_bindings(&project(vec![sa]), "ns").unwrap();
    let s = &b[0].subjects.as_ref().unwrap()[0];
    assert_eq!((s.api_group.as_deref(), s.namespace.as_deref()), (None, Some("garden-dev")));
}

#[test]
fn deletion_waits_for_shoots_then_the_namespace() {
    let mut p = project(vec![]);
    p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH));
    let shoots: Vec<String> = (0..12).map(|i| format!("s{i:02}")).collect();
    match deletion_step(&p, &Ownership::Ours, false, &shoots) {
        DeletionStep::BlockedByShoots(msg) => {
            assert!(msg.contains("12 shoot(s): s00, s01") && msg.contains("and 2 more"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(deletion_step(&p, &Ownership::Ours, false, &[]), DeletionStep::DeleteNamespace);
    assert_eq!(deletion_step(&p, &Ownership::Ours, true, &[]), DeletionStep::WaitForNamespace);
    assert_eq!(deletion_step(&p, &Ownership::Absent, false, &[]), DeletionStep::Release);
    assert_eq!(deletion_step(&p, &Ownership::Foreign("x".into()), false, &[]), DeletionStep::Release);
    assert_eq!(phase(&p, false), ProjectPhase::Terminating);
    let live = project(vec![]);
    assert_eq!(phase(&live, false), ProjectPhase::Ready);
    assert_eq!(phase(&live, true), ProjectPhase::Failed);
}
