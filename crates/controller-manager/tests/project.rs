//! The Project controller against a real kube-apiserver (with kube-controller-manager, which
//! deletes namespaces): a project gets its labelled, owned namespace, its members' RoleBindings
//! and the phase Ready; membership changes reach the RoleBindings; a namespace that belongs to
//! someone else fails the project with the field named; and a project with shoots is not
//! deleted until they are gone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::Subject;
use api::core::project::{ProjectMember, ProjectPhase};
use api::core::{Project, ProjectSpec, Shoot};
use controller_manager::project::decide::{CLUSTER_ROLE_MEMBER, CLUSTER_ROLE_VIEWER};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::*;

fn user(name: &str) -> Subject {
    Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "User".into(),
        name: name.into(),
        namespace: None,
    }
}

fn member(kind: &str, name: &str, role: &str) -> ProjectMember {
    ProjectMember { subject: Subject { kind: kind.into(), ..user(name) }, role: role.into(), roles: vec![] }
}

/// Whether `user` (in `group`) may `verb` `resource` in garden-dev, asked of the API server.
async fn allowed(
    client: &kube::Client,
    user: &str,
    group: Option<&str>,
    api_group: &str,
    resource: &str,
    verb: &str,
) -> bool {
    let groups: Vec<&str> = group.into_iter().collect();
    let attributes =
        testenv::access::Attributes { group: api_group, resource, namespace: "garden-dev", ..Default::default() };
    testenv::access::may(client, user, &groups, verb, attributes).await.unwrap()
}

async fn subjects(bindings: &Api<RoleBinding>, name: &str) -> Result<Vec<String>, String> {
    let b = bindings.get_opt(name).await.map_err(|e| e.to_string())?.ok_or(format!("no RoleBinding {name}"))?;
    Ok(b.subjects.unwrap_or_default().into_iter().map(|s| format!("{}:{}", s.kind, s.name)).collect())
}

#[tokio::test]
async fn a_project_gets_its_namespace_and_member_bindings_and_waits_for_its_shoots_when_deleted() {
    let options = testenv::Options {
        controller_manager: true,
        controllers: Some(vec!["namespace".into(), "garbagecollector".into()]),
        ..Default::default()
    };
    let (env, client) = garden_with(options).await;
    let running = start(&env, controller_manager::Config::default()).await;
    let projects: Api<Project> = Api::all(client.clone());
    let namespaces: Api<Namespace> = Api::all(client.clone());

    let spec = ProjectSpec {
        owner: Some(user("alice")),
        members: vec![member("User", "bob", "viewer"), member("Group", "ops", "admin")],
        ..Default::default()
    };
    projects.create(&PostParams::default(), &Project::new("dev", spec)).await.unwrap();

    let project = eventually("project dev to be Ready", || async {
        let p = projects.get("dev").await.map_err(|e| e.to_string())?;
        match p.status.as_ref().and_then(|s| s.phase) {
            Some(ProjectPhase::Ready) => Ok(p),
            other => Err(format!("phase {other:?}")),
        }
    })
    .await;
    assert_eq!(project.spec.namespace.as_deref(), Some("garden-dev"), "the chosen namespace is recorded");
    assert!(project.finalizers().contains(&"gardener".to_string()), "{:?}", project.finalizers());
    let ns = namespaces.get("garden-dev").await.unwrap();
    assert_eq!(ns.labels().get("project.gardener.cloud/name").map(String::as_str), Some("dev"));
    assert_eq!(ns.labels().get("gardener.cloud/role").map(String::as_str), Some("project"));
    assert_eq!(ns.owner_references()[0].uid, project.uid().unwrap());

    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), "garden-dev");
    assert_eq!(subjects(&bindings, CLUSTER_ROLE_MEMBER).await.unwrap(), vec!["Group:ops", "User:alice"]);
    assert_eq!(subjects(&bindings, CLUSTER_ROLE_VIEWER).await.unwrap(), vec!["User:bob"]);
    let viewer = bindings.get(CLUSTER_ROLE_VIEWER).await.unwrap();
    assert_eq!(viewer.role_ref.kind, "ClusterRole");
    assert_eq!(viewer.role_ref.name, CLUSTER_ROLE_VIEWER);

    // InternalSecrets are not for project members (the shoot's client CA is one); the
    // ConfigMaps of their namespace (the shoot's CA bundle is one) are.
    for (user, group) in [("alice", None), ("bob", None), ("carol", Some("ops"))] {
        assert!(!allowed(&client, user, group, "core.gardener.cloud", "internalsecrets", "get").await, "{user}");
        assert!(!allowed(&client, user, group, "core.gardener.cloud", "internalsecrets", "list").await, "{user}");
        assert!(allowed(&client, user, group, "", "configmaps", "get").await, "{user}");
    }

    // bob becomes an admin: the viewer binding goes, the member binding gains him.
    let members = json!({"spec": {"members": [
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob", "role": "admin"},
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "ops", "role": "admin"},
    ]}});
    projects.patch("dev", &PatchParams::default(), &Patch::Merge(&members)).await.unwrap();
    eventually("the RoleBindings to follow the members", || async {
        let member = subjects(&bindings, CLUSTER_ROLE_MEMBER).await?;
        let viewer = bindings.get_opt(CLUSTER_ROLE_VIEWER).await.map_err(|e| e.to_string())?;
        if member == ["Group:ops", "User:alice", "User:bob"] && viewer.is_none() {
            Ok(())
        } else {
            Err(format!("member {member:?}, viewer binding present: {}", viewer.is_some()))
        }
    })
    .await;
    // Someone edits a managed binding: it is put back.
    bindings
        .patch(CLUSTER_ROLE_MEMBER, &PatchParams::default(), &Patch::Merge(&json!({"subjects": []})))
        .await
        .unwrap();
    eventually("the edited binding to be restored", || async {
        let member = subjects(&bindings, CLUSTER_ROLE_MEMBER).await?;
        if member.len() == 3 { Ok(()) } else { Err(format!("{member:?}")) }
    })
    .await;

    // A shoot blocks the deletion.
    create_shoot(&client, &shoot("app", "garden-dev")).await;
    projects.delete("dev", &DeleteParams::default()).await.unwrap();
    eventually("the deletion to be blocked and explained", || async {
        let p = projects.get("dev").await.map_err(|e| e.to_string())?;
        let phase = p.status.as_ref().and_then(|s| s.phase);
        let events = event_notes(&client, "", "dev", "DeletionBlocked").await;
        let explained = events.iter().any(|n| n.contains("1 shoot(s): app"));
        if phase == Some(ProjectPhase::Terminating) && explained {
            Ok(())
        } else {
            Err(format!("phase {phase:?}, events {events:?}"))
        }
    })
    .await;
    let ns = namespaces.get("garden-dev").await.unwrap();
    assert!(ns.metadata.deletion_timestamp.is_none(), "the namespace stays while shoots live in it");

    Api::<Shoot>::namespaced(client.clone(), "garden-dev").delete("app", &DeleteParams::default()).await.unwrap();
    eventually("the project and its namespace to be gone", || async {
        let p = projects.get_opt("dev").await.map_err(|e| e.to_string())?;
        let ns = namespaces.get_opt("garden-dev").await.map_err(|e| e.to_string())?;
        if p.is_none() && ns.is_none() {
            Ok(())
        } else {
            Err(format!("project {:?}, namespace {:?}", p.map(|p| p.status), ns.map(|n| n.status)))
        }
    })
    .await;
    assert!(running.metrics.reconciliations("project") > 0);
    assert_eq!(running.metrics.all_errors("project"), 0, "{}", running.metrics.render());
}

#[tokio::test]
async fn a_namespace_of_someone_else_or_a_bad_member_fails_the_project_naming_the_field() {
    let (env, client) = garden().await;
    namespace(&client, "taken").await;
    let _running = start(&env, controller_manager::Config::default()).await;
    let projects: Api<Project> = Api::all(client.clone());
    let taken = ProjectSpec { namespace: Some("taken".into()), ..Default::default() };
    projects.create(&PostParams::default(), &Project::new("squatter", taken)).await.unwrap();
    let bad_role = ProjectSpec { members: vec![member("User", "eve", "superuser")], ..Default::default() };
    projects.create(&PostParams::default(), &Project::new("odd", bad_role)).await.unwrap();

    for (project, field) in [("squatter", "spec.namespace"), ("odd", "spec.members[0].role")] {
        eventually(&format!("project {project} to fail naming {field}"), || async {
            let p = projects.get(project).await.map_err(|e| e.to_string())?;
            let phase = p.status.as_ref().and_then(|s| s.phase);
            let events = event_notes(&client, "", project, "InvalidProject").await;
            let named = events.iter().any(|n| n.contains(field));
            if phase == Some(ProjectPhase::Failed) && named {
                Ok(())
            } else {
                Err(format!("phase {phase:?}, events {events:?}"))
            }
        })
        .await;
    }
    let ns = Api::<Namespace>::all(client.clone()).get("taken").await.unwrap();
    assert!(ns.labels().get("project.gardener.cloud/name").is_none(), "a foreign namespace is left alone");
}
