//! Dispatch by resource: which decoding, lookups and rules apply to each kind and operation.

use super::decode::decode;
use super::profiles::{self, Profile};
use super::{Admission, Endpoint, Outcome, Request, quotas};
use crate::field::{ErrorList, FieldError, Path};
use crate::shoot::reference;
use crate::shoot::{self, DefaultingContext, ShootContext};
use crate::{
    adminkubeconfigrequest, bastion, cloudprofile, credentialsbinding, exposureclass, extensions, internalsecret,
    managedseed, managedseedset, namespacedcloudprofile, project, secretbinding, seed, workloadidentity,
};
use api::authentication::AdminKubeconfigRequest;
use api::core::{
    CloudProfile, ExposureClass, InternalSecret, NamespacedCloudProfile, Project, SecretBinding, Seed, Shoot,
};
use api::operations::Bastion;
use api::security::{CredentialsBinding, WorkloadIdentity};
use api::seedmanagement::{ManagedSeed, ManagedSeedSet};
use kube::ResourceExt;
use kube::core::admission::Operation;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// The resources (plural names) this server has rules for, per endpoint.
pub const MUTATED: &[&str] = &["shoots", "bastions", "adminkubeconfigrequests", "internalsecrets"];
pub const VALIDATED: &[&str] = &[
    "shoots",
    "seeds",
    "projects",
    "cloudprofiles",
    "namespacedcloudprofiles",
    "bastions",
    "managedseeds",
    "managedseedsets",
    "secretbindings",
    "credentialsbindings",
    "workloadidentities",
    "exposureclasses",
    "internalsecrets",
    "adminkubeconfigrequests",
    // core/v1: the Pod Security Standards (crate::podsecurity), not a Gardener kind.
    "pods",
];

/// The resources with no rules but SeedRestriction's (judged on CREATE by seeds only).
pub fn restricted_only() -> impl Iterator<Item = (&'static str, &'static str)> {
    crate::seedrestriction::RESOURCES.iter().copied().filter(|(_, r)| !VALIDATED.contains(r))
}

/// SeedRestriction: a seed's create of an object that is not its seed's is refused (403).
fn seed_restriction(adm: &Admission, resource: &str, req: &Request<'_>) -> Option<Outcome> {
    if req.operation != Operation::Create || !crate::seedrestriction::RESOURCES.iter().any(|(_, r)| *r == resource) {
        return None;
    }
    let seed = crate::seedrestriction::seed_of(&req.user)?;
    let object = req.object.as_ref()?;
    let errors = crate::seedrestriction::admit(adm.graph(), seed, resource, object);
    if errors.is_empty() {
        return None;
    }
    Some(Outcome { errors, mutated: None, summary: Some(crate::seedrestriction::summary(seed, resource, object)) })
}

pub(super) fn decide(adm: &Admission, endpoint: Endpoint, resource: &str, req: &Request<'_>) -> Outcome {
    if endpoint == Endpoint::Validate
        && let Some(refused) = seed_restriction(adm, resource, req)
    {
        return refused;
    }
    if (endpoint, resource) == (Endpoint::Validate, "pods") {
        return super::pods::validate(adm, req);
    }
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
        (Endpoint::Validate, "seeds") => validate_with(req, |s: &Seed, old| {
            let mut errs = seed::validate(s, old);
            errs.extend(extensions::validate_seed(&s.spec, old.map(|o| &o.spec), &registered(adm)));
            errs
        }),
        (Endpoint::Validate, "projects") => {
            validate_with(req, |p: &Project, old| project::validate(p, old, &adm.lookup().projects()))
        }
        (Endpoint::Validate, "cloudprofiles") => validate_with(req, |p: &CloudProfile, old| {
            let lookup = adm.lookup();
            cloudprofile::validate_in_hierarchy(p, old, &lookup.shoots(), |s| {
                let ns = s.metadata.namespace.as_deref().unwrap_or_default();
                reference::reference(&s.spec).and_then(|r| profiles::root_of(lookup, ns, &r))
            })
        }),
        (Endpoint::Validate, "managedseeds") => validate_with(req, |m: &ManagedSeed, old| {
            let ns = m.metadata.namespace.as_deref().unwrap_or_default();
            let lookup = adm.lookup();
            let shoot_name = m.spec.shoot.as_ref().map(|s| s.name.as_str());
            let other_for_shoot = lookup
                .managed_seeds()
                .into_iter()
                .find(|o| {
                    o.namespace().as_deref() == Some(ns)
                        && o.name_any() != m.name_any()
                        && o.spec.shoot.as_ref().map(|s| s.name.as_str()) == shoot_name
                })
                .map(|o| format!("{ns}/{}", o.name_any()));
            let garden = managedseed::Garden {
                shoot_exists: shoot_name.is_some_and(|s| lookup.shoot(ns, s).is_some()),
                seed_exists: lookup.seed(&m.name_any()).is_some(),
                other_for_shoot,
            };
            managedseed::validate(m, old, &garden)
        }),
        (Endpoint::Validate, "managedseedsets") => {
            validate_with(req, |s: &ManagedSeedSet, old| managedseedset::validate(s, old))
        }
        (Endpoint::Validate, "secretbindings") => {
            validate_with(req, |b: &SecretBinding, old| secretbinding::validate(b, old))
        }
        (Endpoint::Validate, "credentialsbindings") => validate_with(req, |b: &CredentialsBinding, old| {
            credentialsbinding::validate(b, old, |ns, name| adm.lookup().quota(ns, name).is_some())
        }),
        (Endpoint::Validate, "workloadidentities") => {
            validate_with(req, |w: &WorkloadIdentity, old| workloadidentity::validate(w, old))
        }
        (Endpoint::Validate, "namespacedcloudprofiles") => validate_with(req, |p: &NamespacedCloudProfile, old| {
            let parent = adm.lookup().cloud_profile(&p.spec.parent.name);
            namespacedcloudprofile::validate(p, old, parent.as_deref().map(|c| &c.spec), adm.now())
        }),
        (Endpoint::Validate, "exposureclasses") => {
            validate_with(req, |e: &ExposureClass, old| exposureclass::validate(e, old))
        }
        (Endpoint::Mutate, "internalsecrets") => mutate(req, internalsecret::default),
        (Endpoint::Validate, "internalsecrets") => {
            validate_with(req, |s: &InternalSecret, old| internalsecret::validate(s, old))
        }
        (Endpoint::Validate, r) if restricted_only().any(|(_, only)| only == r) => Ok(None),
        _ => Err(ErrorList(vec![FieldError::forbidden(
            Path::new("<request>"),
            format!("this webhook has no {endpoint:?} rules for resource {resource:?}"),
        )])),
    };
    match result {
        Ok(mutated) => Outcome { mutated, ..Default::default() },
        Err(errors) => Outcome { errors, ..Default::default() },
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
    let namespace = s.metadata.namespace.clone().unwrap_or_default();
    // The profile as the shoot will refer to it once the reference fields are synchronised (a
    // profile that cannot be resolved leaves the profile defaults out; validation refuses it).
    let mut synced = s.spec.clone();
    reference::sync(&mut synced);
    let profile = profiles::resolve(adm.lookup(), &namespace, &synced).ok().flatten();
    let seed = s.spec.seed_name.as_deref().and_then(|n| adm.lookup().seed(n));
    let ctx = DefaultingContext {
        profile: profile.as_ref().and_then(Profile::spec),
        seed: seed.as_deref().map(|s| &s.spec),
        now: adm.now(),
    };
    shoot::default_shoot(s, ctx);
    // The seed labels gardenlets select their shoots by, in step with the seed names.
    api::helpers::seed_labels::sync(s);
}

/// Whether an update changes what the Shoot rules judge: the spec, with the profile reference
/// synchronised on both sides (the mutating webhook adds `spec.cloudProfile` to a shoot stored
/// before it did; that alone is no change).
fn spec_changed(new: &Shoot, old: &Shoot) -> bool {
    let (mut n, mut o) = (new.spec.clone(), old.spec.clone());
    reference::sync(&mut n);
    reference::sync(&mut o);
    n != o
}

fn validate_shoot(adm: &Admission, req: &Request<'_>) -> Result<(), ErrorList> {
    let check = |errs: ErrorList| if errs.is_empty() { Ok(()) } else { Err(errs) };
    if req.operation == Operation::Delete {
        let old: Shoot = object(req.old_object.as_ref(), "oldObject")?;
        let registered_by = adm.lookup().managed_seeds().into_iter().find(|m| {
            m.metadata.namespace == old.metadata.namespace
                && m.spec.shoot.as_ref().is_some_and(|s| Some(&s.name) == old.metadata.name.as_ref())
        });
        let registered_by = registered_by.map(|m| format!("{}/{}", m.namespace().unwrap_or_default(), m.name_any()));
        return check(shoot::validate_delete(&old, registered_by.as_deref()));
    }
    let new: Shoot = object(req.object.as_ref(), "object")?;
    let old: Option<Shoot> = match req.operation {
        Operation::Create => None,
        Operation::Update => Some(object(req.old_object.as_ref(), "oldObject")?),
        _ => return Ok(()),
    };
    // An operation request or a force-deletion confirmation is judged when it is made,
    // whatever else changes.
    let requester = shoot::operation::Requester { user: &req.user, operators: &adm.config().seed_assigners };
    let operation_errors = shoot::validate_annotations(&new, old.as_ref(), requester);
    if !operation_errors.is_empty() {
        return Err(operation_errors);
    }
    if let Some(old) = &old {
        if new.spec == old.spec || (new.metadata.deletion_timestamp.is_none() && !spec_changed(&new, old)) {
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
    }
    let lookup = adm.lookup();
    let namespace = new.metadata.namespace.clone().unwrap_or_default();
    let resolved = profiles::resolve(lookup, &namespace, &new.spec);
    let (profile, profile_error) = match &resolved {
        Ok(p) => (p.as_ref(), None),
        Err(e) => (None, Some(e)),
    };
    let spec = profile.and_then(Profile::spec);
    // The hierarchies of the two references, for an update that changes the reference.
    let old_root = old
        .as_ref()
        .and_then(|o| reference::reference(&o.spec))
        .and_then(|r| profiles::root_of(lookup, &namespace, &r));
    let new_root = match profile {
        Some(p) => Some(p.root().to_string()),
        None => reference::reference(&new.spec).and_then(|r| profiles::root_of(lookup, &namespace, &r)),
    };
    let exposure = new.spec.exposure_class_name.as_deref().and_then(|n| lookup.exposure_class(n));
    let ctx = ShootContext {
        profile: spec,
        profile_error,
        profile_roots: (new_root.as_deref(), old_root.as_deref()),
        exposure_class: exposure.as_deref(),
        now: adm.now(),
        user: &req.user,
        seed_assigners: &adm.config().seed_assigners,
    };
    let mut errs = match &old {
        None => shoot::validate_create(&new, ctx),
        Some(old) => shoot::validate_update(&new, old, ctx),
    };
    if let Some(spec) = spec {
        errs.extend(quotas::check(lookup, &new, old.as_ref(), spec));
    }
    errs.extend(extensions::validate_shoot(&new.spec, old.as_ref().map(|o| &o.spec), &registered(adm)));
    check(errs)
}

/// What the garden's ControllerRegistrations serve.
fn registered(adm: &Admission) -> extensions::Registered {
    let registrations = adm.lookup().controller_registrations();
    extensions::Registered::new(registrations.iter().map(|r| r.as_ref()))
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
