//! The profile a Shoot refers to, looked up before the Shoot rules run: [`resolve`] finds the
//! profile's spec (a NamespacedCloudProfile's `status.cloudProfileSpec`, the parent merged with
//! its additions) and [`root_of`] the root of a reference's hierarchy; the rules receive both as
//! values ([`crate::shoot::ShootContext`]).

use super::lookup::Lookup;
use crate::field::FieldError;
use crate::shoot::reference::{CLOUD_PROFILE, NAMESPACED_CLOUD_PROFILE, ProfileRef, path, reference};
use api::core::cloudprofile::CloudProfileSpec;
use api::core::{CloudProfile, NamespacedCloudProfile, ShootSpec};
use std::sync::Arc;

/// The profile a shoot resolved to.
#[derive(Clone, Debug)]
pub enum Profile {
    Cloud(Arc<CloudProfile>),
    /// A NamespacedCloudProfile whose status has been computed.
    Namespaced(Arc<NamespacedCloudProfile>),
}

impl Profile {
    /// The spec the shoot is judged against: the CloudProfile's, or the NamespacedCloudProfile's
    /// `status.cloudProfileSpec` (always present: [`resolve`] refuses one without it).
    pub fn spec(&self) -> Option<&CloudProfileSpec> {
        match self {
            Self::Cloud(p) => Some(&p.spec),
            Self::Namespaced(p) => p.status.as_ref().and_then(|s| s.cloud_profile_spec.as_ref()),
        }
    }

    /// The CloudProfile at the root of the hierarchy: the profile itself, or the parent.
    pub fn root(&self) -> &str {
        match self {
            Self::Cloud(p) => p.metadata.name.as_deref().unwrap_or_default(),
            Self::Namespaced(p) => &p.spec.parent.name,
        }
    }
}

/// Finds the profile `spec` refers to (a NamespacedCloudProfile in `namespace`). `Ok(None)` when
/// the shoot names none (validation reports that as required); an error, at the field the user
/// wrote, when the kind is unknown, the profile does not exist, or a NamespacedCloudProfile's
/// status has not been computed yet.
pub fn resolve(lookup: &dyn Lookup, namespace: &str, spec: &ShootSpec) -> Result<Option<Profile>, FieldError> {
    let Some(r) = reference(spec) else { return Ok(None) };
    let p = path(spec);
    if r.name.is_empty() {
        return Ok(None);
    }
    match r.kind.as_str() {
        CLOUD_PROFILE => lookup
            .cloud_profile(&r.name)
            .map(|cp| Some(Profile::Cloud(cp)))
            .ok_or_else(|| FieldError::not_found(p, &r.name)),
        NAMESPACED_CLOUD_PROFILE => {
            let ncp = lookup.namespaced_cloud_profile(namespace, &r.name).ok_or_else(|| FieldError {
                detail: format!("no NamespacedCloudProfile {:?} in namespace {namespace:?}", r.name),
                ..FieldError::not_found(p.clone(), &r.name)
            })?;
            let computed = ncp.status.as_ref().and_then(|s| s.cloud_profile_spec.as_ref()).is_some();
            if !computed {
                return Err(FieldError::invalid(
                    p,
                    &r.name,
                    format!(
                        "NamespacedCloudProfile {namespace}/{} has no status.cloudProfileSpec yet (its controller has not merged it with the parent); retry shortly",
                        r.name
                    ),
                ));
            }
            Ok(Some(Profile::Namespaced(ncp)))
        }
        other => Err(FieldError::unsupported(p.child("kind"), other, &[CLOUD_PROFILE, NAMESPACED_CLOUD_PROFILE])),
    }
}

/// The root CloudProfile of a reference as far as the lookup knows it (for the change rule).
pub fn root_of(lookup: &dyn Lookup, namespace: &str, r: &ProfileRef) -> Option<String> {
    match r.kind.as_str() {
        CLOUD_PROFILE => Some(r.name.clone()),
        NAMESPACED_CLOUD_PROFILE => {
            lookup.namespaced_cloud_profile(namespace, &r.name).map(|p| p.spec.parent.name.clone())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
