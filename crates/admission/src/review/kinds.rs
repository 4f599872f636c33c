//! Dispatch by resource: which decoding, lookups and rules apply to each kind and operation.

use super::decode::decode;
use super::{Admission, Endpoint, Outcome, Request};
use crate::field::{ErrorList, FieldError, Path};
use crate::shoot::{self, DefaultingContext, ShootContext};
use crate::{adminkubeconfigrequest, bastion, cloudprofile, managedseed, project, quota, secretbinding, seed};
use api::authentication::AdminKubeconfigRequest;
use api::core::cloudprofile::CloudProfileSpec;
use api::core::{CloudProfile, Project, SecretBinding, Seed, Shoot};
use api::operations::Bastion;
use api::seedmanagement::ManagedSeed;
use kube::core::admission::Operation;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// The resources (plural names) this server has rules for, per endpoint.
pub const MUTATED: &[&str] = &["shoots", "bastions", "adminkubeconfigrequests"];
pub const VALIDATED: &[&str] = &[
    "shoots",
    "seeds",
    "projects",
    "cloudprofiles",
    "bastions",
    "managedseeds",
    "secretbindings",
    "adminkubeconfigrequests",
];

pub(super) fn decide(adm: &Admission, endpoint: Endpoint, resource: &str, req: &Request<'_>) -> Outcome {
    let result = match (endpoint, resource) {
        (Endpoint::Mutate, "shoots") => mutate(req, |s: &mut Shoot| default_shoot(adm, s)),
        (Endpoint::Validate, "shoots") => validate_shoot(adm, req).map(|()| None),
        (Endpoint::Mutate, "bastions") => mutate_bastion(adm, req),
        (Endpoint::Validate, "bastions") => validate_with(req, |b: &Bastion, old| {
            let shoot = shoot_of(adm, b);
            bastion::validate(b, old, &req.user, shoot.as_deref())
        }),
        (Endpoint::Mutate, "adminkubeconfigrequests") => mutate_admin_kubeconfig_request(req),
        (Endpoint::Validate, "adminkubeconfigrequests") => validate_with(req, |r: &AdminKubeconfigRequest, old| {
            let ns = r.metadata.namespace.as_deref().unwrap_or_default();
            let shoot = adm.lookup().shoot(ns, &r.spec.shoot_ref.name);
            adminkubeconfigrequest::validate(r, old, &req.user, shoot.as_deref())
        }),
        (Endpoint::Validate, "seeds") => validate_with(req, |s: &Seed, old| seed::validate(s, old)),
        (Endpoint::Validate, "projects") => {
            validate_with(req, |p: &Project, old| project::validate(p, old, &adm.lookup().projects()))
        }
        (Endpoint::Validate, "cloudprofiles") => {
            validate_with(req, |p: &CloudProfile, old| cloudprofile::validate(p, old, &adm.lookup().shoots()))
        }
        (Endpoint::Validate, "managedseeds") => validate_with(req, |m: &ManagedSeed, old| {
            let ns = m.metadata.namespace.as_deref().unwrap_or_default();
            let exists = m.spec.shoot.as_ref().is_some_and(|s| adm.lookup().shoot(ns, &s.name).is_some());
            managedseed::validate(m, old, exists)
        }),
        (Endpoint::Validate, "secretbindings") => {
            validate_with(req, |b: &SecretBinding, old| secretbinding::validate(b, old))
        }
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
    let quotas = |old: Option<&Shoot>| match &profile {
        Some(p) => quota_check(adm, &new, old, &p.spec),
        None => ErrorList::default(),
    };
    match req.operation {
        Operation::Create => {
            let mut errs = shoot::validate_create(&new, ctx);
            errs.extend(quotas(None));
            check(errs)
        }
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
            let mut errs = shoot::validate_update(&new, &old, ctx);
            errs.extend(quotas(Some(&old)));
            check(errs)
        }
        _ => Ok(()),
    }
}

/// The Quotas of the shoot's SecretBinding, each with the other shoots in its scope
/// (`Project`: the shoot's namespace; `Secret`: the shoots whose binding refers to the same
/// Secret), judged by [`crate::quota::validate`].
fn quota_check(adm: &Admission, shoot: &Shoot, old: Option<&Shoot>, profile: &CloudProfileSpec) -> ErrorList {
    let lookup = adm.lookup();
    let namespace = shoot.metadata.namespace.clone().unwrap_or_default();
    let name = shoot.metadata.name.clone().unwrap_or_default();
    let Some(binding) = shoot.spec.secret_binding_name.as_deref().and_then(|b| lookup.secret_binding(&namespace, b))
    else {
        return ErrorList::default();
    };
    let secret_of = |b: &SecretBinding| {
        let ns = b.metadata.namespace.clone().unwrap_or_default();
        (b.spec.secret_ref.namespace.clone().unwrap_or(ns), b.spec.secret_ref.name.clone())
    };
    let all = lookup.shoots();
    let others: Vec<&Shoot> = all
        .iter()
        .map(Arc::as_ref)
        .filter(|s| {
            !(s.metadata.namespace.as_deref() == Some(namespace.as_str())
                && s.metadata.name.as_deref() == Some(name.as_str()))
        })
        .collect();
    let quotas: Vec<Arc<api::core::Quota>> = binding
        .spec
        .quotas
        .iter()
        .filter_map(|q| {
            let ns = q.namespace.clone().unwrap_or_else(|| binding.metadata.namespace.clone().unwrap_or_default());
            lookup.quota(&ns, &q.name)
        })
        .collect();
    let scoped: Vec<quota::Scoped<'_>> = quotas
        .iter()
        .map(|q| {
            let in_scope: Vec<&Shoot> = match q.spec.scope.kind.as_str() {
                "Secret" => others
                    .iter()
                    .copied()
                    .filter(|s| {
                        let ns = s.metadata.namespace.as_deref().unwrap_or_default();
                        s.spec
                            .secret_binding_name
                            .as_deref()
                            .and_then(|b| lookup.secret_binding(ns, b))
                            .is_some_and(|b| secret_of(&b) == secret_of(&binding))
                    })
                    .collect(),
                _ => others
                    .iter()
                    .copied()
                    .filter(|s| s.metadata.namespace.as_deref() == Some(namespace.as_str()))
                    .collect(),
            };
            quota::Scoped {
                quota: format!(
                    "{}/{}",
                    q.metadata.namespace.as_deref().unwrap_or_default(),
                    q.metadata.name.as_deref().unwrap_or_default()
                ),
                limits: &q.spec.metrics,
                others: in_scope,
            }
        })
        .collect();
    quota::validate(shoot, old, &scoped, profile)
}

/// Runs `rules` on create and update (with the old object on update).
fn validate_with<T: DeserializeOwned>(
    req: &Request<'_>,
    rules: impl FnOnce(&T, Option<&T>) -> ErrorList,
) -> Result<Option<serde_json::Value>, ErrorList> {
    let old = match req.operation {
        Operation::Create => None,
        Operation::Update => Some(object::<T>(req.old_object.as_ref(), "oldObject")?),
        _ => return Ok(None),
    };
    let new: T = object(req.object.as_ref(), "object")?;
    let errs = rules(&new, old.as_ref());
    if errs.is_empty() { Ok(None) } else { Err(errs) }
}

fn shoot_of(adm: &Admission, b: &Bastion) -> Option<Arc<Shoot>> {
    adm.lookup().shoot(b.metadata.namespace.as_deref().unwrap_or_default(), &b.spec.shoot_ref.name)
}

fn mutate_bastion(adm: &Admission, req: &Request<'_>) -> Result<Option<serde_json::Value>, ErrorList> {
    let old = match req.operation {
        Operation::Update => Some(object::<Bastion>(req.old_object.as_ref(), "oldObject")?),
        _ => None,
    };
    mutate(req, |b: &mut Bastion| {
        let shoot = shoot_of(adm, b);
        bastion::default(b, old.as_ref(), &req.user, shoot.as_deref());
    })
}

fn mutate_admin_kubeconfig_request(req: &Request<'_>) -> Result<Option<serde_json::Value>, ErrorList> {
    let old = match req.operation {
        Operation::Update => Some(object::<AdminKubeconfigRequest>(req.old_object.as_ref(), "oldObject")?),
        _ => None,
    };
    mutate(req, |r: &mut AdminKubeconfigRequest| adminkubeconfigrequest::default(r, old.as_ref(), &req.user))
}
