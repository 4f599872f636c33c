//! Which profile spec a Shoot uses, in one place for every component (admission, scheduler,
//! gardenlet, maintenance). Pure: callers look the named object up in their own cache.
//!
//! A Shoot names its profile by `spec.cloudProfile {kind, name}` (kind `CloudProfile`, the
//! default, or `NamespacedCloudProfile` in the shoot's own namespace) or by the older
//! `spec.cloudProfileName` (always a CloudProfile); `spec.cloudProfile` wins when both are set,
//! as in Gardener's `BuildCloudProfileReference`. A NamespacedCloudProfile stands for its
//! `status.cloudProfileSpec` (the parent merged with the project's additions, written by the
//! controller-manager); until that is computed the profile cannot be used.
//!
//! Typical use: [`profile_ref`], look the named object up, then [`resolve`].

use crate::core::cloudprofile::CloudProfileSpec;
use crate::core::{CloudProfile, NamespacedCloudProfile, Shoot};
use kube::api::ObjectMeta;
use std::fmt;

/// `spec.cloudProfile.kind` of a cluster-scoped CloudProfile (the default).
pub const KIND_CLOUD_PROFILE: &str = "CloudProfile";
/// `spec.cloudProfile.kind` of a NamespacedCloudProfile in the shoot's namespace.
pub const KIND_NAMESPACED_CLOUD_PROFILE: &str = "NamespacedCloudProfile";

/// The profile object a Shoot names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProfileRef<'a> {
    /// A cluster-scoped CloudProfile.
    Cluster(&'a str),
    /// A NamespacedCloudProfile in the shoot's namespace.
    Namespaced { namespace: &'a str, name: &'a str },
}

impl fmt::Display for ProfileRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cluster(name) => write!(f, "{KIND_CLOUD_PROFILE} {name:?}"),
            Self::Namespaced { namespace, name } => write!(f, "{KIND_NAMESPACED_CLOUD_PROFILE} \"{namespace}/{name}\""),
        }
    }
}

/// Why a Shoot's profile spec cannot be determined. The messages name the object concerned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProfileRefError {
    #[error("the shoot names no CloudProfile (spec.cloudProfileName or spec.cloudProfile)")]
    NoProfile,
    #[error(
        "spec.cloudProfile.kind {kind:?} (name {name:?}) is not supported; use CloudProfile or NamespacedCloudProfile"
    )]
    UnsupportedKind { kind: String, name: String },
    #[error("the shoot has no namespace to find NamespacedCloudProfile {name:?} in")]
    NoNamespace { name: String },
    #[error("CloudProfile {0:?} does not exist")]
    CloudProfileNotFound(String),
    #[error("NamespacedCloudProfile \"{namespace}/{name}\" does not exist")]
    NamespacedCloudProfileNotFound { namespace: String, name: String },
    #[error(
        "NamespacedCloudProfile \"{namespace}/{name}\" has no merged spec yet (status.cloudProfileSpec is not computed)"
    )]
    NotComputed { namespace: String, name: String },
}

impl ProfileRefError {
    /// A stable PascalCase name for events and metric labels.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NoProfile => "NoCloudProfile",
            Self::UnsupportedKind { .. } => "UnsupportedCloudProfileKind",
            Self::NoNamespace { .. } => "NoNamespace",
            Self::CloudProfileNotFound(_) => "CloudProfileNotFound",
            Self::NamespacedCloudProfileNotFound { .. } => "NamespacedCloudProfileNotFound",
            Self::NotComputed { .. } => "NamespacedCloudProfileNotComputed",
        }
    }

    /// Whether the error may go away without a change of the Shoot (the object appears, or its
    /// merged spec is computed): callers requeue rather than give up.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::CloudProfileNotFound(_) | Self::NamespacedCloudProfileNotFound { .. } | Self::NotComputed { .. }
        )
    }

    fn not_found(r: ProfileRef<'_>) -> Self {
        match r {
            ProfileRef::Cluster(name) => Self::CloudProfileNotFound(name.to_string()),
            ProfileRef::Namespaced { namespace, name } => {
                Self::NamespacedCloudProfileNotFound { namespace: namespace.to_string(), name: name.to_string() }
            }
        }
    }
}

/// The profile `shoot` names: `spec.cloudProfile` (kind defaulted to CloudProfile) when set,
/// else `spec.cloudProfileName`.
pub fn profile_ref(shoot: &Shoot) -> Result<ProfileRef<'_>, ProfileRefError> {
    let spec = &shoot.spec;
    match (&spec.cloud_profile, spec.cloud_profile_name.as_deref()) {
        (Some(r), _) if !r.name.is_empty() => match r.kind.as_deref().filter(|k| !k.is_empty()) {
            None | Some(KIND_CLOUD_PROFILE) => Ok(ProfileRef::Cluster(&r.name)),
            Some(KIND_NAMESPACED_CLOUD_PROFILE) => {
                let namespace = shoot
                    .metadata
                    .namespace
                    .as_deref()
                    .filter(|n| !n.is_empty())
                    .ok_or_else(|| ProfileRefError::NoNamespace { name: r.name.clone() })?;
                Ok(ProfileRef::Namespaced { namespace, name: &r.name })
            }
            Some(other) => Err(ProfileRefError::UnsupportedKind { kind: other.to_string(), name: r.name.clone() }),
        },
        (_, Some(name)) if !name.is_empty() => Ok(ProfileRef::Cluster(name)),
        _ => Err(ProfileRefError::NoProfile),
    }
}

/// The merged spec of a NamespacedCloudProfile, or [`ProfileRefError::NotComputed`].
pub fn merged_spec(ncp: &NamespacedCloudProfile) -> Result<&CloudProfileSpec, ProfileRefError> {
    ncp.status.as_ref().and_then(|s| s.cloud_profile_spec.as_ref()).ok_or_else(|| ProfileRefError::NotComputed {
        namespace: ncp.metadata.namespace.clone().unwrap_or_default(),
        name: ncp.metadata.name.clone().unwrap_or_default(),
    })
}

/// The spec `shoot` uses, given the candidates its caller looked up for [`profile_ref`]'s
/// answer (`None` when the lookup found nothing). A candidate of the other kind is ignored.
pub fn resolve<'a>(
    shoot: &Shoot,
    cloud_profile: Option<&'a CloudProfile>,
    namespaced: Option<&'a NamespacedCloudProfile>,
) -> Result<&'a CloudProfileSpec, ProfileRefError> {
    let r = profile_ref(shoot)?;
    match r {
        ProfileRef::Cluster(_) => cloud_profile.map(|p| &p.spec).ok_or_else(|| ProfileRefError::not_found(r)),
        ProfileRef::Namespaced { .. } => merged_spec(namespaced.ok_or_else(|| ProfileRefError::not_found(r))?),
    }
}

/// A NamespacedCloudProfile presented as a CloudProfile, as Gardener presents it to
/// extensions (the `Cluster` resource) and its own code: the NamespacedCloudProfile's metadata
/// (name, namespace, labels, ...) with the merged spec. Server-managed metadata (uid,
/// resourceVersion, managedFields, owner references, finalizers) is dropped: the object is a
/// view, never written back.
pub fn as_cloud_profile(ncp: &NamespacedCloudProfile) -> Result<CloudProfile, ProfileRefError> {
    let spec = merged_spec(ncp)?.clone();
    let m = &ncp.metadata;
    let metadata = ObjectMeta {
        name: m.name.clone(),
        namespace: m.namespace.clone(),
        labels: m.labels.clone(),
        annotations: m.annotations.clone(),
        generation: m.generation,
        creation_timestamp: m.creation_timestamp.clone(),
        ..ObjectMeta::default()
    };
    Ok(CloudProfile { metadata, spec })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report
    use super::*;
    use crate::core::namespacedcloudprofile::NamespacedCloudProfileStatus;
    use crate::core::shoot::CloudProfileReference;

    fn shoot(namespace: Option<&str>, name_field: Option<&str>, reference: Option<(Option<&str>, &str)>) -> Shoot {
        let mut s = Shoot::default();
        s.metadata.name = Some("s".into());
        s.metadata.namespace = namespace.map(Into::into);
        s.spec.cloud_profile_name = name_field.map(Into::into);
        s.spec.cloud_profile =
            reference.map(|(kind, name)| CloudProfileReference { kind: kind.map(Into::into), name: name.into() });
        s
    }

    fn cp(name: &str, region: &str) -> CloudProfile {
        let mut p = CloudProfile::default();
        p.metadata.name = Some(name.into());
        p.spec.regions = vec![serde_json::from_value(serde_json::json!({"name": region})).unwrap()];
        p
    }

    fn ncp(name: &str, merged: Option<&CloudProfile>) -> NamespacedCloudProfile {
        let mut p = NamespacedCloudProfile::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("garden-p".into());
        p.metadata.uid = Some("uid-1".into());
        p.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
        p.status = Some(NamespacedCloudProfileStatus {
            cloud_profile_spec: merged.map(|c| c.spec.clone()),
            observed_generation: None,
        });
        p
    }

    #[test]
    fn profile_ref_table() {
        let ns = Some("garden-p");
        let nk = Some(KIND_NAMESPACED_CLOUD_PROFILE);
        let cases: Vec<(&str, Shoot, Result<ProfileRef<'static>, ProfileRefError>)> = vec![
            ("old field", shoot(ns, Some("local"), None), Ok(ProfileRef::Cluster("local"))),
            ("reference without kind", shoot(ns, None, Some((None, "local"))), Ok(ProfileRef::Cluster("local"))),
            ("reference with empty kind", shoot(ns, None, Some((Some(""), "local"))), Ok(ProfileRef::Cluster("local"))),
            (
                "reference kind CloudProfile",
                shoot(ns, None, Some((Some("CloudProfile"), "a"))),
                Ok(ProfileRef::Cluster("a")),
            ),
            (
                "namespaced",
                shoot(ns, None, Some((nk, "mine"))),
                Ok(ProfileRef::Namespaced { namespace: "garden-p", name: "mine" }),
            ),
            (
                "reference wins over the old field",
                shoot(ns, Some("local"), Some((nk, "mine"))),
                Ok(ProfileRef::Namespaced { namespace: "garden-p", name: "mine" }),
            ),
            ("empty reference falls back", shoot(ns, Some("local"), Some((nk, ""))), Ok(ProfileRef::Cluster("local"))),
            ("nothing", shoot(ns, None, None), Err(ProfileRefError::NoProfile)),
            ("empty names", shoot(ns, Some(""), Some((None, ""))), Err(ProfileRefError::NoProfile)),
            (
                "unknown kind",
                shoot(ns, None, Some((Some("Other"), "x"))),
                Err(ProfileRefError::UnsupportedKind { kind: "Other".into(), name: "x".into() }),
            ),
            (
                "namespaced without namespace",
                shoot(None, None, Some((nk, "mine"))),
                Err(ProfileRefError::NoNamespace { name: "mine".into() }),
            ),
        ];
        for (what, s, want) in cases {
            assert_eq!(profile_ref(&s), want, "{what}");
        }
    }

    #[test]
    fn resolve_table() {
        let parent = cp("local", "parent-region");
        let merged = cp("local", "merged-region");
        let computed = ncp("mine", Some(&merged));
        let pending = ncp("mine", None);
        let ns = Some("garden-p");
        let nk = Some(KIND_NAMESPACED_CLOUD_PROFILE);
        let on_cluster = shoot(ns, Some("local"), None);
        let on_namespaced = shoot(ns, None, Some((nk, "mine")));
        let region = |r: Result<&CloudProfileSpec, ProfileRefError>| r.map(|s| s.regions[0].name.clone());

        assert_eq!(region(resolve(&on_cluster, Some(&parent), Some(&computed))), Ok("parent-region".into()));
        assert_eq!(region(resolve(&on_namespaced, Some(&parent), Some(&computed))), Ok("merged-region".into()));
        assert_eq!(
            region(resolve(&on_cluster, None, Some(&computed))),
            Err(ProfileRefError::CloudProfileNotFound("local".into()))
        );
        let missing = resolve(&on_namespaced, Some(&parent), None).unwrap_err();
        assert_eq!(missing.to_string(), "NamespacedCloudProfile \"garden-p/mine\" does not exist");
        assert!(missing.is_transient());
        let not_computed = resolve(&on_namespaced, Some(&parent), Some(&pending)).unwrap_err();
        assert_eq!(
            not_computed.to_string(),
            "NamespacedCloudProfile \"garden-p/mine\" has no merged spec yet (status.cloudProfileSpec is not computed)"
        );
        assert_eq!(not_computed.reason(), "NamespacedCloudProfileNotComputed");
        assert!(!ProfileRefError::NoProfile.is_transient());
    }

    #[test]
    fn merged_spec_needs_a_status() {
        let mut p = ncp("mine", None);
        p.status = None;
        assert_eq!(
            merged_spec(&p),
            Err(ProfileRefError::NotComputed { namespace: "garden-p".into(), name: "mine".into() })
        );
    }

    #[test]
    fn presented_as_cloud_profile() {
        let merged = cp("local", "merged-region");
        let p = as_cloud_profile(&ncp("mine", Some(&merged))).unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("mine"));
        assert_eq!(p.metadata.namespace.as_deref(), Some("garden-p"));
        assert_eq!(p.metadata.uid, None, "a view carries no server identity");
        assert_eq!(p.metadata.labels, ncp("mine", None).metadata.labels);
        assert_eq!(p.spec, merged.spec);
        assert!(as_cloud_profile(&ncp("mine", None)).is_err());
    }

    #[test]
    fn display_names_the_object() {
        assert_eq!(ProfileRef::Cluster("a").to_string(), "CloudProfile \"a\"");
        assert_eq!(
            ProfileRef::Namespaced { namespace: "garden-p", name: "b" }.to_string(),
            "NamespacedCloudProfile \"garden-p/b\""
        );
    }
}
