//! Who uses a protected object, and what to do with its finalizer. Pure.
//!
//! CloudProfiles are used by the Shoots naming them (`spec.cloudProfileName`, or
//! `spec.cloudProfile` of kind `CloudProfile`) and by the NamespacedCloudProfiles whose parent
//! they are, NamespacedCloudProfiles by the Shoots of their namespace naming them, ExposureClasses
//! by the Shoots naming them (`spec.exposureClassName`), SecretBindings by the Shoots of their namespace naming them
//! (`spec.secretBindingName`), credentials Secrets by the SecretBindings whose `secretRef`
//! and the CredentialsBindings whose `credentialsRef` name them, WorkloadIdentities by the
//! CredentialsBindings naming them, Quotas by the bindings of either kind listing them in
//! `quotas`, Seeds by the Shoots on
//! them (`spec.seedName`, or `status.seedName` during a migration), ControllerRegistrations by
//! the ControllerInstallations installing them, ControllerDeployments by the registrations
//! listing them in `deployment.deploymentRefs` and the installations naming them. An object
//! carries the finalizer while it is used; a deletion waits until nothing uses it.

use api::common::ObjectReference;
use api::core::{ControllerInstallation, ControllerRegistration, NamespacedCloudProfile, SecretBinding, Shoot};
use api::helpers::cloudprofile_ref::{ProfileRef, profile_ref};
use api::security::CredentialsBinding;
use kube::ResourceExt;

/// What to do with the finalizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    AddFinalizer,
    RemoveFinalizer,
    /// Deletion requested while in use; the message names the users.
    Blocked(String),
    Nothing,
}

pub fn step(what: &str, has_finalizer: bool, deleting: bool, users: &[String]) -> Step {
    match (users.is_empty(), has_finalizer, deleting) {
        (false, true, true) => {
            let shown: Vec<&str> = users.iter().take(10).map(String::as_str).collect();
            let more = users.len() - shown.len();
            let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
            Step::Blocked(format!(
                "{what} cannot be deleted while it is in use by {}{tail}; it is deleted once nothing uses it",
                shown.join(", ")
            ))
        }
        // Not ours to hold back any more: a deleting object that lost its finalizer is gone.
        (false, false, true) => Step::Nothing,
        (false, false, false) => Step::AddFinalizer,
        (true, true, _) => Step::RemoveFinalizer,
        (false, true, false) | (true, false, _) => Step::Nothing,
    }
}

fn key(namespace: Option<String>, name: String) -> String {
    format!("{}/{name}", namespace.unwrap_or_default())
}

/// The profile a Shoot uses (`api::helpers::cloudprofile_ref`); `None` when it names none.
pub fn profile_of(shoot: &Shoot) -> Option<ProfileRef<'_>> {
    profile_ref(shoot).ok()
}

/// The Shoots for which `uses` holds, as `Shoot <namespace>/<name>`, sorted.
fn shoots_that<'a>(shoots: impl Iterator<Item = &'a Shoot>, uses: impl Fn(&Shoot) -> bool) -> Vec<String> {
    sorted(shoots.filter(|s| uses(s)).map(|s| format!("Shoot {}", key(s.namespace(), s.name_any()))).collect())
}

fn in_namespace_of(shoot: &Shoot, namespace: &str) -> bool {
    shoot.namespace().as_deref() == Some(namespace)
}

/// A CloudProfile is used by the Shoots naming it and by the NamespacedCloudProfiles whose
/// parent it is.
pub fn cloud_profile_users<'a>(
    name: &str,
    shoots: impl Iterator<Item = &'a Shoot>,
    children: impl Iterator<Item = &'a NamespacedCloudProfile>,
) -> Vec<String> {
    let mut users = shoots_that(shoots, |s| profile_of(s) == Some(ProfileRef::Cluster(name)));
    users.extend(
        children
            .filter(|c| c.spec.parent.name == name)
            .map(|c| format!("NamespacedCloudProfile {}", key(c.namespace(), c.name_any()))),
    );
    sorted(users)
}

/// A NamespacedCloudProfile is used by the Shoots of its namespace naming it.
pub fn namespaced_cloud_profile_users<'a>(
    namespace: &str,
    name: &str,
    shoots: impl Iterator<Item = &'a Shoot>,
) -> Vec<String> {
    shoots_that(shoots, |s| profile_of(s) == Some(ProfileRef::Namespaced { namespace, name }))
}

/// An ExposureClass is used by the Shoots naming it in `spec.exposureClassName`.
pub fn exposure_class_users<'a>(name: &str, shoots: impl Iterator<Item = &'a Shoot>) -> Vec<String> {
    shoots_that(shoots, |s| s.spec.exposure_class_name.as_deref() == Some(name))
}

pub fn secret_binding_users<'a>(namespace: &str, name: &str, shoots: impl Iterator<Item = &'a Shoot>) -> Vec<String> {
    shoots_that(shoots, |s| in_namespace_of(s, namespace) && s.spec.secret_binding_name.as_deref() == Some(name))
}

pub fn credentials_binding_users<'a>(
    namespace: &str,
    name: &str,
    shoots: impl Iterator<Item = &'a Shoot>,
) -> Vec<String> {
    shoots_that(shoots, |s| in_namespace_of(s, namespace) && s.spec.credentials_binding_name.as_deref() == Some(name))
}

pub fn seed_users<'a>(name: &str, shoots: impl Iterator<Item = &'a Shoot>) -> Vec<String> {
    shoots_that(shoots, |s| {
        s.spec.seed_name.as_deref() == Some(name)
            || s.status.as_ref().and_then(|st| st.seed_name.as_deref()) == Some(name)
    })
}

pub fn registration_users<'a>(
    name: &str,
    installations: impl Iterator<Item = &'a ControllerInstallation>,
) -> Vec<String> {
    let mut users: Vec<String> = installations
        .filter(|i| i.spec.registration_ref.name == name)
        .map(|i| format!("ControllerInstallation {}", i.name_any()))
        .collect();
    users.sort();
    users
}

/// The ControllerDeployments a registration lists.
pub fn deployments_of(registration: &ControllerRegistration) -> Vec<String> {
    registration.spec.deployment.iter().flat_map(|d| d.deployment_refs.iter().map(|r| r.name.clone())).collect()
}

pub fn deployment_users<'a>(
    name: &str,
    registrations: impl Iterator<Item = &'a ControllerRegistration>,
    installations: impl Iterator<Item = &'a ControllerInstallation>,
) -> Vec<String> {
    let mut users: Vec<String> = registrations
        .filter(|r| deployments_of(r).iter().any(|d| d == name))
        .map(|r| format!("ControllerRegistration {}", r.name_any()))
        .collect();
    users.extend(
        installations
            .filter(|i| i.spec.deployment_ref.as_ref().is_some_and(|d| d.name == name))
            .map(|i| format!("ControllerInstallation {}", i.name_any())),
    );
    users.sort();
    users
}

/// The kind of credentials a binding names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialsKind {
    Secret,
    WorkloadIdentity,
    /// Anything else (admission refuses it; nothing to protect).
    Other,
}

/// What a SecretBinding or CredentialsBinding refers to: its credentials and its Quotas, each
/// as (namespace, name) with the binding's namespace filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingRefs {
    /// The binding as users are reported: `SecretBinding ns/name` or `CredentialsBinding ns/name`.
    pub user: String,
    pub credentials: (CredentialsKind, String, String),
    pub quotas: Vec<(String, String)>,
}

fn in_namespace(r: &ObjectReference, default: &str) -> (String, String) {
    (r.namespace.clone().unwrap_or_else(|| default.to_string()), r.name.clone())
}

impl BindingRefs {
    pub fn of_secret_binding(binding: &SecretBinding) -> Self {
        let ns = binding.namespace().unwrap_or_default();
        let r = &binding.spec.secret_ref;
        Self {
            user: format!("SecretBinding {}", key(binding.namespace(), binding.name_any())),
            credentials: (CredentialsKind::Secret, r.namespace.clone().unwrap_or_else(|| ns.clone()), r.name.clone()),
            quotas: binding.spec.quotas.iter().map(|q| in_namespace(q, &ns)).collect(),
        }
    }

    pub fn of_credentials_binding(binding: &CredentialsBinding) -> Self {
        let ns = binding.namespace().unwrap_or_default();
        let r = &binding.spec.credentials_ref;
        let kind = match (r.api_version.as_deref(), r.kind.as_deref()) {
            (Some("v1") | None, Some("Secret")) => CredentialsKind::Secret,
            (Some("security.gardener.cloud/v1alpha1") | None, Some("WorkloadIdentity")) => {
                CredentialsKind::WorkloadIdentity
            }
            _ => CredentialsKind::Other,
        };
        let (cns, cname) = in_namespace(r, &ns);
        Self {
            user: format!("CredentialsBinding {}", key(binding.namespace(), binding.name_any())),
            credentials: (kind, cns, cname),
            quotas: binding.spec.quotas.iter().map(|q| in_namespace(q, &ns)).collect(),
        }
    }
}

fn sorted(mut users: Vec<String>) -> Vec<String> {
    users.sort();
    users
}

/// The bindings naming the credentials `kind` `namespace/name` (a Secret or a WorkloadIdentity).
pub fn credentials_users<'a>(
    kind: CredentialsKind,
    namespace: &str,
    name: &str,
    bindings: impl Iterator<Item = &'a BindingRefs>,
) -> Vec<String> {
    sorted(
        bindings
            .filter(|b| b.credentials.0 == kind && b.credentials.1 == namespace && b.credentials.2 == name)
            .map(|b| b.user.clone())
            .collect(),
    )
}

/// The bindings listing Quota `namespace/name`.
pub fn quota_users<'a>(namespace: &str, name: &str, bindings: impl Iterator<Item = &'a BindingRefs>) -> Vec<String> {
    sorted(
        bindings
            .filter(|b| b.quotas.iter().any(|(n, q)| n == namespace && q == name))
            .map(|b| b.user.clone())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::common::{ObjectReference, SecretReference};
    use api::core::SecretBindingFields;

    fn shoot(ns: &str, name: &str, profile: &str, binding: Option<&str>) -> Shoot {
        let mut s = Shoot::new(name, Default::default());
        s.metadata.namespace = Some(ns.into());
        s.spec.cloud_profile_name = Some(profile.into());
        s.spec.secret_binding_name = binding.map(Into::into);
        s
    }

    fn binding(ns: &str, name: &str, secret: (&str, Option<&str>), quotas: &[(&str, Option<&str>)]) -> SecretBinding {
        let mut b = SecretBinding::new(
            name,
            SecretBindingFields {
                secret_ref: SecretReference { name: secret.0.into(), namespace: secret.1.map(Into::into) },
                quotas: quotas
                    .iter()
                    .map(|(n, ns)| ObjectReference {
                        name: (*n).into(),
                        namespace: ns.map(Into::into),
                        ..Default::default()
                    })
                    .collect(),
                provider: None,
            },
        );
        b.metadata.namespace = Some(ns.into());
        b
    }

    #[test]
    fn the_finalizer_follows_use_and_deletion_waits() {
        let used = vec!["Shoot a/b".to_string()];
        assert_eq!(step("x", false, false, &used), Step::AddFinalizer);
        assert_eq!(step("x", true, false, &used), Step::Nothing);
        assert_eq!(step("x", true, false, &[]), Step::RemoveFinalizer);
        assert_eq!(step("x", true, true, &[]), Step::RemoveFinalizer);
        assert_eq!(step("x", false, false, &[]), Step::Nothing);
        assert_eq!(step("x", false, true, &used), Step::Nothing);
        match step("CloudProfile local", true, true, &used) {
            Step::Blocked(m) => assert!(m.contains("CloudProfile local") && m.contains("Shoot a/b"), "{m}"),
            s => panic!("{s:?}"),
        }
        let many: Vec<String> = (0..12).map(|i| format!("Shoot a/s{i:02}")).collect();
        match step("x", true, true, &many) {
            Step::Blocked(m) => assert!(m.contains("and 2 more"), "{m}"),
            s => panic!("{s:?}"),
        }
    }

    #[test]
    fn users_are_found_by_reference() {
        let shoots = [
            shoot("p", "one", "local", Some("creds")),
            shoot("p", "two", "aws", Some("other")),
            shoot("q", "three", "local", Some("creds")),
        ];
        assert_eq!(cloud_profile_users("local", shoots.iter(), [].iter()), vec!["Shoot p/one", "Shoot q/three"]);
        // Shoots on a NamespacedCloudProfile use it, not a CloudProfile of the same name; the
        // NamespacedCloudProfile uses its parent.
        let mut on_ncp = shoot("p", "custom", "ignored", None);
        on_ncp.spec.cloud_profile_name = None;
        on_ncp.spec.cloud_profile = Some(api::core::shoot::CloudProfileReference {
            kind: Some("NamespacedCloudProfile".into()),
            name: "local".into(),
        });
        on_ncp.spec.exposure_class_name = Some("internet".into());
        let child: NamespacedCloudProfile = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "local", "namespace": "p"}, "spec": {"parent": {"kind": "CloudProfile", "name": "local"}}
        }))
        .unwrap();
        let with_ncp = [shoots[0].clone(), on_ncp];
        assert_eq!(
            cloud_profile_users("local", with_ncp.iter(), [child].iter()),
            vec!["NamespacedCloudProfile p/local", "Shoot p/one"]
        );
        assert_eq!(namespaced_cloud_profile_users("p", "local", with_ncp.iter()), vec!["Shoot p/custom"]);
        assert!(namespaced_cloud_profile_users("q", "local", with_ncp.iter()).is_empty());
        assert_eq!(exposure_class_users("internet", with_ncp.iter()), vec!["Shoot p/custom"]);
        assert_eq!(secret_binding_users("p", "creds", shoots.iter()), vec!["Shoot p/one"]);
        let mut bindings: Vec<BindingRefs> = [
            binding("p", "creds", ("secret", None), &[("quota", None)]),
            binding("q", "shared", ("secret", Some("p")), &[("quota", Some("p"))]),
            binding("q", "own", ("secret", None), &[]),
        ]
        .iter()
        .map(BindingRefs::of_secret_binding)
        .collect();
        let cb = |name: &str, kind: &str, api_version: &str, quota: &str| -> BindingRefs {
            let b: CredentialsBinding = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "p"},
                "provider": {"type": "local"},
                "credentialsRef": {"apiVersion": api_version, "kind": kind, "name": "secret", "namespace": "p"},
                "quotas": [{"name": quota}]
            }))
            .unwrap();
            BindingRefs::of_credentials_binding(&b)
        };
        bindings.push(cb("cb-secret", "Secret", "v1", "quota"));
        bindings.push(cb("cb-identity", "WorkloadIdentity", "security.gardener.cloud/v1alpha1", "other"));
        bindings.push(cb("cb-odd", "ConfigMap", "v1", "none"));
        let secret = CredentialsKind::Secret;
        assert_eq!(
            credentials_users(secret, "p", "secret", bindings.iter()),
            vec!["CredentialsBinding p/cb-secret", "SecretBinding p/creds", "SecretBinding q/shared"]
        );
        assert_eq!(
            credentials_users(CredentialsKind::WorkloadIdentity, "p", "secret", bindings.iter()),
            vec!["CredentialsBinding p/cb-identity"]
        );
        assert_eq!(
            quota_users("p", "quota", bindings.iter()),
            vec!["CredentialsBinding p/cb-secret", "SecretBinding p/creds", "SecretBinding q/shared"]
        );
        assert_eq!(quota_users("p", "other", bindings.iter()), vec!["CredentialsBinding p/cb-identity"]);
        assert_eq!(credentials_users(secret, "q", "secret", bindings.iter()), vec!["SecretBinding q/own"]);

        let mut migrating = shoot("p", "moving", "local", None);
        migrating.spec.seed_name = Some("target".into());
        migrating.status = Some(serde_json::from_value(serde_json::json!({"seedName": "source"})).unwrap());
        let mut placed = shoot("q", "placed", "local", None);
        placed.spec.seed_name = Some("source".into());
        let on = [migrating, placed];
        assert_eq!(seed_users("source", on.iter()), vec!["Shoot p/moving", "Shoot q/placed"]);
        assert_eq!(seed_users("target", on.iter()), vec!["Shoot p/moving"]);

        let registration: ControllerRegistration = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "provider-local"},
            "spec": {"deployment": {"deploymentRefs": [{"name": "chart"}]}}
        }))
        .unwrap();
        let installation: ControllerInstallation = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "provider-local-seed"},
            "spec": {"registrationRef": {"name": "provider-local"}, "deploymentRef": {"name": "chart"}}
        }))
        .unwrap();
        let (registrations, installations) = ([registration], [installation]);
        assert_eq!(
            registration_users("provider-local", installations.iter()),
            vec!["ControllerInstallation provider-local-seed"]
        );
        assert_eq!(
            deployment_users("chart", registrations.iter(), installations.iter()),
            vec!["ControllerInstallation provider-local-seed", "ControllerRegistration provider-local"]
        );
        assert!(deployment_users("other", registrations.iter(), installations.iter()).is_empty());
    }
}
