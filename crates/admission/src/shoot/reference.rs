//! Which profile a Shoot is judged against: `spec.cloudProfile {kind, name}` (kind
//! `CloudProfile`, the default, or `NamespacedCloudProfile` in the shoot's namespace) and the
//! older `spec.cloudProfileName`. Defaulting keeps the two fields consistent as Gardener's
//! `SyncCloudProfileFields` does ([`sync`]); validation refuses conflicting fields and a change
//! that leaves the profile's hierarchy ([`validate`], [`validate_change`]). Finding the profile
//! a reference names (refusing an unknown kind or a profile that cannot be resolved) is a
//! lookup, done before these rules run ([`crate::review::profiles`]); its outcome reaches them
//! as values ([`super::ShootContext`]).

use crate::field::{ErrorList, FieldError, Path};
use api::core::ShootSpec;
use api::core::shoot::CloudProfileReference;

/// `spec.cloudProfile.kind` of a cluster-scoped CloudProfile (the default).
pub const CLOUD_PROFILE: &str = "CloudProfile";
/// `spec.cloudProfile.kind` of a NamespacedCloudProfile in the shoot's namespace.
pub const NAMESPACED_CLOUD_PROFILE: &str = "NamespacedCloudProfile";

/// The profile a shoot refers to, with the kind defaulted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileRef {
    pub kind: String,
    pub name: String,
}

impl ProfileRef {
    fn describe(&self) -> String {
        format!("{} {:?}", self.kind, self.name)
    }
}

/// Gardener's `BuildCloudProfileReference`: `spec.cloudProfile` (kind defaulted to
/// `CloudProfile`) when set, else `spec.cloudProfileName`; `None` when neither names one.
pub fn reference(spec: &ShootSpec) -> Option<ProfileRef> {
    match (&spec.cloud_profile, spec.cloud_profile_name.as_deref()) {
        (Some(r), _) => Some(ProfileRef {
            kind: r.kind.clone().filter(|k| !k.is_empty()).unwrap_or_else(|| CLOUD_PROFILE.into()),
            name: r.name.clone(),
        }),
        (None, Some(name)) if !name.is_empty() => Some(ProfileRef { kind: CLOUD_PROFILE.into(), name: name.into() }),
        (None, _) => None,
    }
}

/// The path to report a reference problem at: `spec.cloudProfileName` while that names the
/// profile (a CloudProfile), else `spec.cloudProfile`.
pub fn path(spec: &ShootSpec) -> Path {
    let sp = Path::new("spec");
    let namespaced = reference(spec).is_some_and(|r| r.kind != CLOUD_PROFILE);
    if spec.cloud_profile_name.as_deref().is_some_and(|n| !n.is_empty()) && !namespaced {
        sp.child("cloudProfileName")
    } else {
        sp.child("cloudProfile")
    }
}

/// Defaulting, as Gardener's `SyncCloudProfileFields`: `cloudProfile` from `cloudProfileName`
/// when absent; an empty kind becomes `CloudProfile`; with kind `CloudProfile` an absent
/// `cloudProfileName` is filled in, and with kind `NamespacedCloudProfile` it is removed (the
/// old field only ever names CloudProfiles). Two names that disagree are left for validation to
/// refuse rather than one silently overwriting the other.
pub fn sync(spec: &mut ShootSpec) {
    if spec.cloud_profile.is_none()
        && let Some(name) = spec.cloud_profile_name.clone().filter(|n| !n.is_empty())
    {
        spec.cloud_profile = Some(CloudProfileReference { kind: Some(CLOUD_PROFILE.into()), name });
    }
    let Some(r) = spec.cloud_profile.as_mut() else { return };
    if r.kind.as_deref().is_none_or(str::is_empty) {
        r.kind = Some(CLOUD_PROFILE.into());
    }
    match r.kind.as_deref() {
        Some(CLOUD_PROFILE) if spec.cloud_profile_name.is_none() => spec.cloud_profile_name = Some(r.name.clone()),
        Some(NAMESPACED_CLOUD_PROFILE) => spec.cloud_profile_name = None,
        _ => {}
    }
}

/// The two fields agree: with kind `CloudProfile` a set `cloudProfileName` names the same
/// profile; with kind `NamespacedCloudProfile` it is not set (defaulting removes it).
pub fn validate(spec: &ShootSpec) -> ErrorList {
    let mut errs = ErrorList::default();
    let (Some(r), Some(name)) = (&spec.cloud_profile, spec.cloud_profile_name.as_deref()) else { return errs };
    let p = Path::new("spec").child("cloudProfileName");
    match r.kind.as_deref().filter(|k| !k.is_empty()).unwrap_or(CLOUD_PROFILE) {
        CLOUD_PROFILE if name != r.name => errs.push(FieldError::invalid(
            p,
            name,
            format!("must name the same CloudProfile as spec.cloudProfile.name ({:?})", r.name),
        )),
        NAMESPACED_CLOUD_PROFILE => {
            errs.push(FieldError::forbidden(p, "must not be set when spec.cloudProfile names a NamespacedCloudProfile"))
        }
        _ => {}
    }
    errs
}

/// Gardener's `ValidateCloudProfileChanges`: the reference may change only within one profile
/// hierarchy, that is between a CloudProfile and the NamespacedCloudProfiles whose parent it is
/// (either way, and between two such NamespacedCloudProfiles). `new_root`/`old_root` are the
/// root CloudProfiles of the two references (`None` when not known, which refuses a change).
pub fn validate_change(new: &ShootSpec, old: &ShootSpec, new_root: Option<&str>, old_root: Option<&str>) -> ErrorList {
    let mut errs = ErrorList::default();
    let (Some(n), Some(o)) = (reference(new), reference(old)) else {
        if reference(old).is_some() && reference(new).is_none() {
            errs.push(FieldError::forbidden(path(new), "the profile reference cannot be removed"));
        }
        return errs;
    };
    if n == o {
        return errs;
    }
    let same_tree = matches!((new_root, old_root), (Some(a), Some(b)) if a == b);
    if !same_tree {
        errs.push(FieldError::forbidden(
            path(new),
            format!(
                "the profile may only change between a CloudProfile and the NamespacedCloudProfiles whose parent it is; cannot change from {} to {}",
                o.describe(),
                n.describe()
            ),
        ));
    }
    errs
}

#[cfg(test)]
mod tests;
