//! Shoot admission: defaulting ([`defaults`]) and validation on create, update and delete. The
//! rules are split by what they need: the shoot alone ([`spec`]), its CloudProfile
//! ([`offered`]), the previous object and the requester ([`update`]).

pub mod defaults;
pub mod offered;
pub mod profile;
pub mod spec;
pub mod update;

pub use defaults::{DefaultingContext, default_shoot};
pub use update::validate_delete;

use crate::field::{ErrorList, FieldError, Path};
use crate::identity::{Identities, UserInfo};
use api::core::Shoot;
use api::core::cloudprofile::CloudProfileSpec;
use k8s_openapi::jiff::Timestamp;

/// What validation may look at besides the shoot.
#[derive(Clone, Copy, Debug)]
pub struct ShootContext<'a> {
    /// The CloudProfile the shoot names; `None` when it does not exist.
    pub profile: Option<&'a CloudProfileSpec>,
    pub now: Timestamp,
    pub user: &'a UserInfo,
    /// Who may set or change `spec.seedName`.
    pub seed_assigners: &'a Identities,
}

fn against_profile(shoot: &Shoot, old: Option<&Shoot>, ctx: ShootContext<'_>) -> ErrorList {
    match (ctx.profile, shoot.spec.cloud_profile_name()) {
        (Some(profile), _) => offered::validate(shoot, old, profile, ctx.now),
        (None, Some(name)) if !name.is_empty() => {
            ErrorList(vec![FieldError::not_found(Path::new("spec").child("cloudProfileName"), name)])
        }
        // A missing name is already reported as required.
        (None, _) => ErrorList::default(),
    }
}

/// Every rule for a new shoot.
pub fn validate_create(shoot: &Shoot, ctx: ShootContext<'_>) -> ErrorList {
    let mut errs = spec::validate(shoot);
    errs.extend(against_profile(shoot, None, ctx));
    errs.extend(update::validate_seed_name(shoot, None, ctx.user, ctx.seed_assigners));
    errs
}

/// Every rule for an update from `old` to `new`.
pub fn validate_update(new: &Shoot, old: &Shoot, ctx: ShootContext<'_>) -> ErrorList {
    let mut errs = spec::validate(new);
    errs.extend(update::validate_immutable(new, old));
    errs.extend(against_profile(new, Some(old), ctx));
    errs.extend(update::validate_seed_name(new, Some(old), ctx.user, ctx.seed_assigners));
    errs
}

#[cfg(test)]
mod tests;
