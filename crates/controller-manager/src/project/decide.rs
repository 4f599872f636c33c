//! What a Project should have: its namespace (name, labels, owner), one RoleBinding per project
//! role that members hold, and what a deletion may do next. Pure: values in, values out.

use api::common::Subject;
use api::core::Project;
use api::core::project::ProjectPhase;
use api::helpers::constants::{LABEL_PROJECT_NAME, LABEL_ROLE, PROJECT_NAMESPACE_PREFIX, ROLE_PROJECT};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject as RbacSubject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};
use std::collections::BTreeMap;

/// The ClusterRole (and RoleBinding name) for each project role. The ClusterRoles themselves
/// are part of the deployment (docs/controller-manager.md lists their rules).
pub const CLUSTER_ROLE_MEMBER: &str = "gardener.cloud:system:project-member";
pub const CLUSTER_ROLE_VIEWER: &str = "gardener.cloud:system:project-viewer";
pub const CLUSTER_ROLE_UAM: &str = "gardener.cloud:system:project-uam";
pub const CLUSTER_ROLE_SA_MANAGER: &str = "gardener.cloud:system:project-serviceaccountmanager";

/// Every RoleBinding the controller manages, by name, so stale ones can be removed.
pub const MANAGED_BINDINGS: [&str; 4] =
    [CLUSTER_ROLE_MEMBER, CLUSTER_ROLE_VIEWER, CLUSTER_ROLE_UAM, CLUSTER_ROLE_SA_MANAGER];

/// A Project that cannot be acted on as it is; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("project {project}: {field}: {problem}")]
    Field { project: String, field: String, problem: String },
}

fn invalid(project: &Project, field: impl Into<String>, problem: impl Into<String>) -> Invalid {
    Invalid::Field { project: project.name_any(), field: field.into(), problem: problem.into() }
}

/// The project's namespace: `spec.namespace`, or `garden-<name>`.
pub fn namespace_name(project: &Project) -> Result<String, Invalid> {
    let (name, field) = match &project.spec.namespace {
        Some(ns) => (ns.clone(), "spec.namespace"),
        None => (format!("{PROJECT_NAMESPACE_PREFIX}{}", project.name_any()), "metadata.name"),
    };
    if !is_dns_label(&name) {
        return Err(invalid(
            project,
            field,
            format!("namespace {name:?} is not a DNS label (at most 63 lowercase letters, digits and '-')"),
        ));
    }
    Ok(name)
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whose the namespace is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    Absent,
    Ours,
    /// Exists but belongs to someone else (the value says whom, for the message).
    Foreign(String),
}

pub fn ownership(project: &Project, namespace: Option<&Namespace>) -> Ownership {
    let Some(ns) = namespace else { return Ownership::Absent };
    match ns.labels().get(LABEL_PROJECT_NAME) {
        Some(p) if *p == project.name_any() => Ownership::Ours,
        Some(p) => Ownership::Foreign(format!("project {p}")),
        None => Ownership::Foreign("no project (it is not labelled project.gardener.cloud/name)".into()),
    }
}

fn owner_reference(project: &Project) -> Option<OwnerReference> {
    let mut owner = project.controller_owner_ref(&())?;
    owner.block_owner_deletion = Some(true);
    Some(owner)
}

/// The fields of the namespace the controller owns: its project labels and owner reference.
pub fn desired_namespace(project: &Project, name: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([
                (LABEL_PROJECT_NAME.to_string(), project.name_any()),
                (LABEL_ROLE.to_string(), ROLE_PROJECT.to_string()),
            ])),
            owner_references: owner_reference(project).map(|o| vec![o]),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Whether the live namespace already carries everything of `desired`.
pub fn namespace_up_to_date(live: &Namespace, desired: &Namespace) -> bool {
    let labels = live.labels();
    let has_labels = desired.labels().iter().all(|(k, v)| labels.get(k) == Some(v));
    let owners = live.owner_references();
    let has_owner = desired.owner_references().iter().all(|o| owners.iter().any(|l| l.uid == o.uid));
    has_labels && has_owner
}

fn cluster_role_for(role: &str) -> Result<Option<&'static str>, ()> {
    match role {
        "owner" | "admin" => Ok(Some(CLUSTER_ROLE_MEMBER)),
        "viewer" => Ok(Some(CLUSTER_ROLE_VIEWER)),
        "uam" => Ok(Some(CLUSTER_ROLE_UAM)),
        "serviceaccountmanager" => Ok(Some(CLUSTER_ROLE_SA_MANAGER)),
        // Extension roles are bound by their extensions, not here.
        r if r.starts_with("extension:") => Ok(None),
        _ => Err(()),
    }
}

fn rbac_subject(project: &Project, subject: &Subject, field: &str) -> Result<RbacSubject, Invalid> {
    if subject.name.is_empty() {
        return Err(invalid(project, format!("{field}.name"), "must not be empty"));
    }
    let (api_group, namespace) = match subject.kind.as_str() {
        "User" | "Group" => (Some("rbac.authorization.k8s.io".to_string()), None),
        "ServiceAccount" => match &subject.namespace {
            Some(ns) if !ns.is_empty() => (None, Some(ns.clone())),
            _ => return Err(invalid(project, format!("{field}.namespace"), "a ServiceAccount needs its namespace")),
        },
        other => {
            return Err(invalid(
                project,
                format!("{field}.kind"),
                format!("{other:?} is not one of User, Group, ServiceAccount"),
            ));
        }
    };
    Ok(RbacSubject { api_group, kind: subject.kind.clone(), name: subject.name.clone(), namespace })
}

/// One RoleBinding per ClusterRole that at least one member's role maps to; `spec.owner` counts
/// as a member with the `owner` role. Subjects are sorted and unique, so equal inputs give
/// equal bindings (and no write).
pub fn desired_role_bindings(project: &Project, namespace: &str) -> Result<Vec<RoleBinding>, Invalid> {
    let mut subjects: BTreeMap<&'static str, Vec<RbacSubject>> = BTreeMap::new();
    if let Some(owner) = &project.spec.owner {
        subjects.entry(CLUSTER_ROLE_MEMBER).or_default().push(rbac_subject(project, owner, "spec.owner")?);
    }
    for (i, member) in project.spec.members.iter().enumerate() {
        let subject = rbac_subject(project, &member.subject, &format!("spec.members[{i}]"))?;
        for (j, role) in member.all_roles().enumerate() {
            let field =
                if j == 0 { format!("spec.members[{i}].role") } else { format!("spec.members[{i}].roles[{}]", j - 1) };
            let cluster_role = cluster_role_for(role).map_err(|()| {
                invalid(
                    project,
                    field,
                    format!(
                        "unknown role {role:?} (owner, admin, viewer, uam, serviceaccountmanager or extension:<name>)"
                    ),
                )
            })?;
            if let Some(cluster_role) = cluster_role {
                subjects.entry(cluster_role).or_default().push(subject.clone());
            }
        }
    }
    let owner = owner_reference(project);
    Ok(subjects
        .into_iter()
        .map(|(cluster_role, mut subjects)| {
            subjects.sort_by(|a, b| (&a.kind, &a.namespace, &a.name).cmp(&(&b.kind, &b.namespace, &b.name)));
            subjects.dedup();
            RoleBinding {
                metadata: ObjectMeta {
                    name: Some(cluster_role.into()),
                    namespace: Some(namespace.into()),
                    labels: Some(BTreeMap::from([(LABEL_PROJECT_NAME.to_string(), project.name_any())])),
                    owner_references: owner.clone().map(|o| vec![o]),
                    ..Default::default()
                },
                role_ref: RoleRef {
                    api_group: "rbac.authorization.k8s.io".into(),
                    kind: "ClusterRole".into(),
                    name: cluster_role.into(),
                },
                subjects: Some(subjects),
            }
        })
        .collect())
}

/// Whether a live RoleBinding already says what `desired` says.
pub fn binding_up_to_date(live: &RoleBinding, desired: &RoleBinding) -> bool {
    live.role_ref == desired.role_ref
        && live.subjects == desired.subjects
        && desired.labels().iter().all(|(k, v)| live.labels().get(k) == Some(v))
}

/// The next step of a project's deletion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeletionStep {
    /// Shoots still live in the namespace; the message names them.
    BlockedByShoots(String),
    /// Delete the project's namespace (and wait for it to be gone).
    DeleteNamespace,
    /// The namespace is being deleted; wait.
    WaitForNamespace,
    /// Nothing left: remove the finalizer.
    Release,
}

pub fn deletion_step(
    project: &Project,
    ownership: &Ownership,
    namespace_deleting: bool,
    shoots: &[String],
) -> DeletionStep {
    if !shoots.is_empty() {
        let mut names = shoots.to_vec();
        names.sort();
        let shown: Vec<&str> = names.iter().take(10).map(String::as_str).collect();
        let more = names.len().saturating_sub(shown.len());
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        return DeletionStep::BlockedByShoots(format!(
            "project {} cannot be deleted while its namespace still has {} shoot(s): {}{tail}; delete them first",
            project.name_any(),
            names.len(),
            shown.join(", ")
        ));
    }
    match ownership {
        Ownership::Ours if namespace_deleting => DeletionStep::WaitForNamespace,
        Ownership::Ours => DeletionStep::DeleteNamespace,
        Ownership::Absent | Ownership::Foreign(_) => DeletionStep::Release,
    }
}

/// The phase the status should show.
pub fn phase(project: &Project, failed: bool) -> ProjectPhase {
    if project.meta().deletion_timestamp.is_some() {
        ProjectPhase::Terminating
    } else if failed {
        ProjectPhase::Failed
    } else {
        ProjectPhase::Ready
    }
}

#[cfg(test)]
mod tests;
