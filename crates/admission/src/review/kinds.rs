//! Dispatch by resource: which decoding, lookups and rules apply to each kind and operation.

use super::decode::decode;
use super::{Admission, Endpoint, Outcome, Request};
use crate::field::{ErrorList, FieldError, Path};
use crate::shoot::{self, DefaultingContext, ShootContext};
use api::core::Shoot;
use kube::core::admission::Operation;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The resources (plural names) this server has rules for, per endpoint.
pub const MUTATED: &[&str] = &["shoots"];
pub const VALIDATED: &[&str] = &["shoots"];

pub(super) fn decide(adm: &Admission, endpoint: Endpoint, resource: &str, req: &Request<'_>) -> Outcome {
    let result = match (endpoint, resource) {
        (Endpoint::Mutate, "shoots") => mutate(req, |s: &mut Shoot| default_shoot(adm, s)),
        (Endpoint::Validate, "shoots") => validate_shoot(adm, req).map(|()| None),
        _ => Err(ErrorList(vec![FieldError::forbidden(
            Path::new("<request>"),
            format!("this webhook has no {endpoint:?} rules for resource {resource:?}"),
        )])),
    };
    match result {
        Ok(mutated) => Outcome { errors: ErrorList::default(), mutated },
        Err(errors) => Outcome { errors, mutated: None },
    }
}

fn object<T: DeserializeOwned>(value: Option<&serde_json::Value>, what: &str) -> Result<T, ErrorList> {
    match value {
        Some(v) => decode(v),
        None => Err(ErrorList(vec![FieldError::required(Path::new(what), "the request carries no object")])),
    }
}

/// Decodes the new object, applies `f`, and returns the result as JSON (on create and update).
fn mutate<T: DeserializeOwned + Serialize>(
    req: &Request<'_>,
    f: impl FnOnce(&mut T),
) -> Result<Option<serde_json::Value>, ErrorList> {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return Ok(None);
    }
    let mut obj: T = object(req.object.as_ref(), "object")?;
    f(&mut obj);
    Ok(serde_json::to_value(&obj).ok())
}

fn default_shoot(adm: &Admission, s: &mut Shoot) {
    let profile = s.spec.cloud_profile_name().and_then(|n| adm.lookup().cloud_profile(n));
    let seed = s.spec.seed_name.as_deref().and_then(|n| adm.lookup().seed(n));
    let ctx = DefaultingContext {
        profile: profile.as_deref().map(|p| &p.spec),
        seed: seed.as_deref().map(|s| &s.spec),
        now: adm.now(),
    };
    shoot::default_shoot(s, ctx);
}

fn validate_shoot(adm: &Admission, req: &Request<'_>) -> Result<(), ErrorList> {
    let check = |errs: ErrorList| if errs.is_empty() { Ok(()) } else { Err(errs) };
    if req.operation == Operation::Delete {
        let old: Shoot = object(req.old_object.as_ref(), "oldObject")?;
        return check(shoot::validate_delete(&old));
    }
    let new: Shoot = object(req.object.as_ref(), "object")?;
    let profile = new.spec.cloud_profile_name().and_then(|n| adm.lookup().cloud_profile(n));
    let ctx = ShootContext {
        profile: profile.as_deref().map(|p| &p.spec),
        now: adm.now(),
        user: &req.user,
        seed_assigners: &adm.config().seed_assigners,
    };
    match req.operation {
        Operation::Create => check(shoot::validate_create(&new, ctx)),
        Operation::Update => {
            let old: Shoot = object(req.old_object.as_ref(), "oldObject")?;
            if new.spec == old.spec {
                // Metadata or status only (finalizers, the deletion confirmation, operation
                // annotations): nothing the rules judge changed, so nothing is re-judged; a
                // shoot whose profile or version has gone away can still be annotated and
                // deleted.
                return Ok(());
            }
            if new.metadata.deletion_timestamp.is_some() {
                return Err(ErrorList(vec![FieldError::forbidden(
                    Path::new("spec"),
                    "the spec of a shoot that is being deleted cannot be changed",
                )]));
            }
            check(shoot::validate_update(&new, &old, ctx))
        }
        _ => Ok(()),
    }
}
