//! The Shoot rules that compare with the previous object or look at who asks: immutable fields,
//! Kubernetes version changes, who may set or change `spec.seedName`, and the deletion
//! confirmation.

use crate::common::{immutable, immutable_str};
use crate::field::{ErrorList, FieldError, Path};
use crate::identity::{Identities, UserInfo};
use api::core::Shoot;
use api::helpers::constants::ANNOTATION_CONFIRM_DELETION;

/// Fields that never change after creation (or, for optional ones, once set).
pub fn validate_immutable(new: &Shoot, old: &Shoot) -> ErrorList {
    let mut errs = ErrorList::default();
    let sp = Path::new("spec");
    let (n, o) = (&new.spec, &old.spec);
    errs.0.extend(immutable_str(&sp.child("region"), Some(&n.region), Some(&o.region)));
    errs.0.extend(immutable_str(&sp.child("provider").child("type"), Some(&n.provider.type_), Some(&o.provider.type_)));
    // The profile reference may change within its hierarchy: `reference::validate_change`.
    errs.0.extend(immutable_str(&sp.child("schedulerName"), n.scheduler_name.as_deref(), o.scheduler_name.as_deref()));
    errs.0.extend(immutable_str(
        &sp.child("exposureClassName"),
        n.exposure_class_name.as_deref(),
        o.exposure_class_name.as_deref(),
    ));
    // Optional fields: immutable once set (setting an absent one is allowed).
    let once = |path: Path, new: Option<&str>, old: Option<&str>| old.and_then(|_| immutable_str(&path, new, old));
    // The one change allowed: moving from a SecretBinding to a CredentialsBinding (Gardener's
    // migration path), which unsets secretBindingName and sets credentialsBindingName at once.
    let migrating =
        n.secret_binding_name.is_none() && n.credentials_binding_name.as_deref().is_some_and(|c| !c.is_empty());
    if !migrating {
        errs.0.extend(once(
            sp.child("secretBindingName"),
            n.secret_binding_name.as_deref(),
            o.secret_binding_name.as_deref(),
        ));
    }
    errs.0.extend(once(
        sp.child("credentialsBindingName"),
        n.credentials_binding_name.as_deref(),
        o.credentials_binding_name.as_deref(),
    ));
    let domain = |s: &Shoot| s.spec.dns.as_ref().and_then(|d| d.domain.clone());
    errs.0.extend(once(sp.child("dns").child("domain"), domain(new).as_deref(), domain(old).as_deref()));
    let np = sp.child("networking");
    let (nn, on) = (n.networking.clone().unwrap_or_default(), o.networking.clone().unwrap_or_default());
    for (field, new_v, old_v) in [
        ("type", &nn.type_, &on.type_),
        ("pods", &nn.pods, &on.pods),
        ("services", &nn.services, &on.services),
        ("nodes", &nn.nodes, &on.nodes),
    ] {
        errs.0.extend(once(np.child(field), new_v.as_deref(), old_v.as_deref()));
    }
    if !on.ip_families.is_empty() {
        errs.0.extend(immutable(&np.child("ipFamilies"), &nn.ip_families, &on.ip_families));
    }
    errs.extend(validate_version_change(&n.kubernetes.version, &o.kubernetes.version));
    errs
}

/// No downgrade, and at most one minor version per update (the versioning policy).
fn validate_version_change(new: &str, old: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    let parse = |s: &str| semver::Version::parse(s.trim_start_matches('v')).ok();
    let (Some(n), Some(o)) = (parse(new), parse(old)) else { return errs };
    let p = Path::new("spec").child("kubernetes").child("version");
    if n < o {
        errs.push(FieldError::forbidden(
            p,
            format!("kubernetes version downgrade from {old} to {new} is not supported"),
        ));
    } else if n.major != o.major || n.minor > o.minor + 1 {
        errs.push(FieldError::forbidden(
            p,
            format!("kubernetes version upgrade from {old} to {new} skips a minor version; update one minor version at a time"),
        ));
    }
    errs
}

/// Who may set `spec.seedName`: only the configured scheduler/operator identities, on create and
/// on update; a change from one seed to another (a control plane migration) additionally only
/// when no migration is still in flight (`status.seedName` equals the old `spec.seedName`).
/// Removing the seed name is never allowed.
pub fn validate_seed_name(new: &Shoot, old: Option<&Shoot>, user: &UserInfo, allowed: &Identities) -> ErrorList {
    let mut errs = ErrorList::default();
    let p = Path::new("spec").child("seedName");
    let old_seed = old.and_then(|o| o.spec.seed_name.as_deref());
    let new_seed = new.spec.seed_name.as_deref();
    if new_seed == old_seed {
        return errs;
    }
    let Some(target) = new_seed else {
        errs.push(FieldError::forbidden(p, "spec.seedName cannot be removed once set"));
        return errs;
    };
    if !allowed.contains(user) {
        errs.push(FieldError::forbidden(
            p,
            format!("user {:?} may not set spec.seedName; only the scheduler assigns seeds and only operators migrate shoots", user.username),
        ));
        return errs;
    }
    if let (Some(from), Some(o)) = (old_seed, old) {
        let status_seed = o.status.as_ref().and_then(|s| s.seed_name());
        if status_seed.is_some_and(|s| s != from) {
            errs.push(FieldError::forbidden(
                p,
                format!("cannot change the seed to {target:?} while a migration to {from:?} is still in progress"),
            ));
        }
    }
    errs
}

/// A shoot is only deleted when it carries `confirmation.gardener.cloud/deletion: "true"`.
/// A shoot can be deleted once it is annotated with the deletion confirmation and no ManagedSeed
/// (`registered_by`, its name) registers it as a seed: deleting the shoot would take the seed and
/// the control planes it runs with it (Gardener's ManagedSeedShoot admission).
pub fn validate_delete(old: &Shoot, registered_by: Option<&str>) -> ErrorList {
    let mut errs = ErrorList::default();
    if let Some(managed_seed) = registered_by {
        errs.push(FieldError::forbidden(
            Path::new("metadata").child("name"),
            format!("shoot is registered as a seed by ManagedSeed {managed_seed}; delete the ManagedSeed first"),
        ));
    }
    let confirmed =
        old.metadata.annotations.as_ref().and_then(|a| a.get(ANNOTATION_CONFIRM_DELETION)).is_some_and(|v| v == "true");
    if !confirmed {
        errs.push(FieldError::forbidden(
            Path::new("metadata").child("annotations").key(ANNOTATION_CONFIRM_DELETION),
            format!("shoot must be annotated with {ANNOTATION_CONFIRM_DELETION}=true before it can be deleted"),
        ));
    }
    errs
}
