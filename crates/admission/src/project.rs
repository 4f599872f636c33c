//! Project validation: name, members and roles, and namespace ownership (a namespace belongs
//! to at most one Project); the namespace and creator are immutable once set.

use crate::common::{dns_label, immutable, immutable_str};
use crate::field::{ErrorList, FieldError, Path};
use api::core::Project;
use api::helpers::names::project_namespace;
use kube::ResourceExt;
use std::collections::BTreeSet;

/// Longest project name (it is part of every technical ID of the project's shoots).
pub const MAX_PROJECT_NAME: usize = 10;
const ROLES: &[&str] = &["owner", "admin", "viewer", "uam", "serviceaccountmanager"];
const SUBJECT_KINDS: &[&str] = &["User", "Group", "ServiceAccount"];

/// The namespace a project owns: `spec.namespace`, else `garden-<name>`.
pub fn namespace_of(p: &Project) -> String {
    p.spec.namespace.clone().unwrap_or_else(|| project_namespace(&p.name_any()))
}

/// Every rule; `others` are the existing projects (the project itself may be among them).
pub fn validate<P: AsRef<Project>>(project: &Project, old: Option<&Project>, others: &[P]) -> ErrorList {
    let mut errs = ErrorList::default();
    let name = project.name_any();
    errs.0.extend(dns_label(&Path::new("metadata").child("name"), &name, MAX_PROJECT_NAME));
    let sp = Path::new("spec");
    if let Some(ns) = &project.spec.namespace {
        errs.0.extend(dns_label(&sp.child("namespace"), ns, 63));
    }
    let wanted = namespace_of(project);
    if let Some(owner) = others.iter().map(AsRef::as_ref).find(|o| o.name_any() != name && namespace_of(o) == wanted) {
        errs.push(FieldError::forbidden(
            sp.child("namespace"),
            format!("namespace {wanted:?} already belongs to project {:?}", owner.name_any()),
        ));
    }
    let mut subjects = BTreeSet::new();
    for (i, m) in project.spec.members.iter().enumerate() {
        let mp = sp.child("members").index(i);
        if !SUBJECT_KINDS.contains(&m.subject.kind.as_str()) {
            errs.push(FieldError::unsupported(mp.child("kind"), &m.subject.kind, SUBJECT_KINDS));
        }
        if m.subject.name.is_empty() {
            errs.push(FieldError::required(mp.child("name"), ""));
        }
        let key = (m.subject.kind.clone(), m.subject.name.clone(), m.subject.namespace.clone());
        if !subjects.insert(key) {
            errs.push(FieldError::duplicate(mp.child("name"), &m.subject.name));
        }
        let mut roles = BTreeSet::new();
        for (j, role) in m.all_roles().enumerate() {
            let rp = if j == 0 { mp.child("role") } else { mp.child("roles").index(j - 1) };
            let extension = role.strip_prefix("extension:").is_some_and(crate::common::is_dns_label);
            if !ROLES.contains(&role) && !extension {
                errs.push(FieldError::unsupported(rp, role, &[ROLES, &["extension:<name>"]].concat()));
            } else if !roles.insert(role) {
                errs.push(FieldError::duplicate(rp, role));
            }
        }
    }
    if let Some(old) = old {
        if old.spec.namespace.is_some() {
            errs.0.extend(immutable_str(
                &sp.child("namespace"),
                project.spec.namespace.as_deref(),
                old.spec.namespace.as_deref(),
            ));
        }
        if old.spec.created_by.is_some() {
            errs.0.extend(immutable(&sp.child("createdBy"), &project.spec.created_by, &old.spec.created_by));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::common::Subject;
    use api::core::ProjectSpec;
    use api::core::project::ProjectMember;

    fn member(kind: &str, name: &str, role: &str) -> ProjectMember {
        ProjectMember {
            subject: Subject { kind: kind.into(), name: name.into(), api_group: None, namespace: None },
            role: role.into(),
            roles: vec![],
        }
    }

    fn project(name: &str, ns: Option<&str>) -> Project {
        Project::new(
            name,
            ProjectSpec {
                namespace: ns.map(Into::into),
                members: vec![member("User", "alice", "admin")],
                ..Default::default()
            },
        )
    }

    type Mutation = fn(&mut Project);

    #[test]
    fn rules() {
        let others =
            vec![std::sync::Arc::new(project("core", Some("garden-core"))), std::sync::Arc::new(project("dev", None))];
        let cases: Vec<(&str, Mutation, Option<&str>)> = vec![
            ("valid", |_| {}, None),
            (
                "name too long",
                |p| p.metadata.name = Some("a-long-project".into()),
                Some("metadata.name: Invalid value: \"a-long-project\": must be no more than 10"),
            ),
            (
                "namespace taken",
                |p| p.spec.namespace = Some("garden-core".into()),
                Some("spec.namespace: Forbidden: namespace \"garden-core\" already belongs to project \"core\""),
            ),
            (
                "default namespace taken",
                |p| p.spec.namespace = Some("garden-dev".into()),
                Some("spec.namespace: Forbidden: namespace \"garden-dev\" already belongs to project \"dev\""),
            ),
            (
                "bad role",
                |p| p.spec.members[0].role = "god".into(),
                Some("spec.members[0].role: Unsupported value: \"god\""),
            ),
            (
                "duplicate role",
                |p| p.spec.members[0].roles = vec!["admin".into()],
                Some("spec.members[0].roles[0]: Duplicate value: \"admin\""),
            ),
            ("extension role", |p| p.spec.members[0].roles = vec!["extension:foo".into()], None),
            (
                "bad kind",
                |p| p.spec.members[0].subject.kind = "Robot".into(),
                Some("spec.members[0].kind: Unsupported value: \"Robot\""),
            ),
            (
                "duplicate member",
                |p| {
                    let m = p.spec.members[0].clone();
                    p.spec.members.push(m)
                },
                Some("spec.members[1].name: Duplicate value: \"alice\""),
            ),
        ];
        for (name, mutate, want) in cases {
            let mut p = project("new", None);
            mutate(&mut p);
            let errs = validate(&p, None, &others);
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(w) => assert!(errs.iter().any(|e| e.to_string().starts_with(w)), "{name}: want {w:?}, got {errs}"),
            }
        }
        // A project is not in conflict with itself, and its namespace is immutable once set.
        let core = project("core", Some("garden-core"));
        assert!(validate(&core, Some(&core), &others).is_empty());
        let moved = project("core", Some("garden-other"));
        assert!(
            validate(&moved, Some(&core), &others)
                .to_string()
                .contains("spec.namespace: Invalid value: \"garden-other\": field is immutable")
        );
    }
}
