//! Shoot admission: defaulting ([`defaults`]) and validation on create, update and delete. The
//! fate of every spec field is one table ([`contract`]): honoured, or refused with the reason. The
//! rules are split by what they need: the shoot alone ([`spec`]), its profile reference
//! ([`mod@reference`]), its CloudProfile ([`offered`]), the previous object and the requester
//! ([`update`]).

pub mod apiserver;
pub mod components;
pub mod contract;
pub mod defaults;
pub mod force_deletion;
pub mod kubelet;
pub mod offered;
pub mod operation;
pub mod profile;
pub mod reference;
pub mod spec;
pub mod update;

pub use defaults::{DefaultingContext, default_shoot};
pub use update::validate_delete;

use crate::field::{ErrorList, FieldError, Path};
use crate::identity::{Identities, UserInfo};
use api::core::cloudprofile::CloudProfileSpec;
use api::core::{ExposureClass, Shoot};
use k8s_openapi::jiff::Timestamp;

/// What validation may look at besides the shoot.
#[derive(Clone, Copy, Debug)]
pub struct ShootContext<'a> {
    /// The spec of the profile the shoot refers to: a CloudProfile's, or a
    /// NamespacedCloudProfile's `status.cloudProfileSpec` ([`crate::review::profiles::resolve`]); `None` when
    /// the shoot names none or it could not be resolved.
    pub profile: Option<&'a CloudProfileSpec>,
    /// Why the profile reference could not be resolved (reported instead of the rules against
    /// the profile).
    pub profile_error: Option<&'a FieldError>,
    /// The root CloudProfiles of the new and of the old reference ([`crate::review::profiles::root_of`]),
    /// for an update that changes the reference.
    pub profile_roots: (Option<&'a str>, Option<&'a str>),
    /// The ExposureClass `spec.exposureClassName` names, when it exists.
    pub exposure_class: Option<&'a ExposureClass>,
    pub now: Timestamp,
    pub user: &'a UserInfo,
    /// Who may set or change `spec.seedName`.
    pub seed_assigners: &'a Identities,
}

impl<'a> ShootContext<'a> {
    /// A context with `profile` resolved and nothing else known (tests, benchmarks).
    pub fn with_profile(
        profile: Option<&'a CloudProfileSpec>,
        now: Timestamp,
        user: &'a UserInfo,
        seed_assigners: &'a Identities,
    ) -> Self {
        Self {
            profile,
            profile_error: None,
            profile_roots: (None, None),
            exposure_class: None,
            now,
            user,
            seed_assigners,
        }
    }
}

fn against_profile(shoot: &Shoot, old: Option<&Shoot>, ctx: ShootContext<'_>) -> ErrorList {
    let mut errs = reference::validate(&shoot.spec);
    match (ctx.profile_error, ctx.profile) {
        (Some(e), _) => errs.push(e.clone()),
        (None, Some(profile)) => errs.extend(offered::validate(shoot, old, profile, ctx.now)),
        // A missing name is already reported as required.
        (None, None) => {}
    }
    errs
}

/// A new shoot's `spec.exposureClassName` names an existing ExposureClass (it is immutable, so
/// only a create can set it).
fn exposure_class(shoot: &Shoot, ctx: ShootContext<'_>) -> Option<FieldError> {
    let name = shoot.spec.exposure_class_name.as_deref()?;
    ctx.exposure_class.is_none().then(|| FieldError {
        detail: "no such ExposureClass".into(),
        ..FieldError::not_found(Path::new("spec").child("exposureClassName"), name)
    })
}

/// Adds the contract's refusals of fields no rule before it has reported: a more specific rule
/// (IPVS, a setting the version lacks) says better why than the table's general reason.
fn add_contract(errs: &mut ErrorList, contract: ErrorList) {
    let fresh: Vec<FieldError> = contract.0.into_iter().filter(|c| !errs.0.iter().any(|e| e.path == c.path)).collect();
    errs.0.extend(fresh);
}

/// Every rule for a new shoot.
pub fn validate_create(shoot: &Shoot, ctx: ShootContext<'_>) -> ErrorList {
    let mut errs = spec::validate(shoot);
    errs.extend(components::validate(shoot));
    errs.extend(kubelet::validate(shoot));
    errs.extend(apiserver::validate(shoot));
    add_contract(&mut errs, contract::validate(shoot, None));
    errs.extend(against_profile(shoot, None, ctx));
    errs.0.extend(exposure_class(shoot, ctx));
    errs.extend(update::validate_seed_name(shoot, None, ctx.user, ctx.seed_assigners));
    errs
}

/// Every rule for an update from `old` to `new`.
pub fn validate_update(new: &Shoot, old: &Shoot, ctx: ShootContext<'_>) -> ErrorList {
    let mut errs = spec::validate(new);
    errs.extend(components::validate(new));
    errs.extend(kubelet::validate(new));
    errs.extend(components::validate_update(new, old));
    errs.extend(apiserver::validate(new));
    errs.extend(apiserver::validate_update(new, old));
    add_contract(&mut errs, contract::validate(new, Some(old)));
    errs.extend(update::validate_immutable(new, old));
    errs.extend(reference::validate_change(&new.spec, &old.spec, ctx.profile_roots.0, ctx.profile_roots.1));
    errs.extend(against_profile(new, Some(old), ctx));
    errs.extend(update::validate_seed_name(new, Some(old), ctx.user, ctx.seed_assigners));
    errs.extend(force_deletion::validate(new, Some(old)));
    errs
}

/// The rules on a shoot's annotations, judged on every create and update whatever else
/// changes (a metadata-only update skips the spec rules): the operation annotation
/// ([`operation`]) and the force-deletion confirmation ([`force_deletion`]).
pub fn validate_annotations(new: &Shoot, old: Option<&Shoot>, requester: operation::Requester<'_>) -> ErrorList {
    let mut errs = operation::validate(new, old, requester);
    errs.extend(force_deletion::validate(new, old));
    errs
}

#[cfg(test)]
mod tests;
