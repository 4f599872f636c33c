//! NamespacedCloudProfile validation, as Gardener's static validation and its
//! `NamespacedCloudProfileValidator` admission plugin do it, against the parent CloudProfile:
//!
//! * `spec.parent`: kind `CloudProfile`, a name, an existing profile; immutable.
//! * `spec.kubernetes.versions`: only versions the parent offers (a NamespacedCloudProfile
//!   cannot add Kubernetes versions; the merge ignores such entries), each with an
//!   `expirationDate`: overriding the expiration date is all such an entry does.
//! * `spec.machineImages`: a version of a parent image is an override: it needs an
//!   `expirationDate` and may not carry a `classification`, `cri` or `architectures` (those stay
//!   the parent's). A version the parent does not have (of a parent image or of a new image) is
//!   an addition: a semantic version with a `classification`.
//! * Expiration overrides on update: a date in the past is refused unless the entry keeps the
//!   date it already had (Gardener checks this on update only: a new profile may expire a
//!   version for its project at once).
//! * `spec.machineTypes`, `spec.volumeTypes`: names set, unique, and not a name of the parent's
//!   (the parent's would win the merge); one the profile already had may stay when the parent
//!   gains the same name later; their quantities (`cpu`, `gpu`, `memory`, sizes) parse and are
//!   not negative ([`crate::cloudprofile::type_quantities`]): a project's negative machine type
//!   would lower the quota usage of its shoots.
//! * `spec.caBundle`: PEM certificates.
//!
//! Not checked here (Gardener's plugin does): the simulated merge result's full CloudProfile
//! validation (the merge of a valid parent with entries passing these rules is valid), and
//! machine image `updateStrategy` (not part of this API).

use crate::common::immutable;
use crate::field::{ErrorList, FieldError, Path};
use api::core::NamespacedCloudProfile;
use api::core::cloudprofile::{CloudProfileSpec, ExpirableVersion, MachineImage};
use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeSet;

/// The kind `spec.parent` must name.
pub const PARENT_KIND: &str = "CloudProfile";

/// Every rule for a new or updated NamespacedCloudProfile (`old` on update); `parent` is the
/// spec of the CloudProfile `spec.parent` names, when it exists.
pub fn validate(
    ncp: &NamespacedCloudProfile,
    old: Option<&NamespacedCloudProfile>,
    parent: Option<&CloudProfileSpec>,
    now: Timestamp,
) -> ErrorList {
    let mut errs = ErrorList::default();
    let sp = Path::new("spec");
    let spec = &ncp.spec;
    if let Some(old) = old {
        if spec == &old.spec {
            // Metadata only (finalizers, labels): nothing the rules judge changed, and a profile
            // whose parent has gone can still be cleaned up.
            return errs;
        }
        errs.0.extend(immutable(&sp.child("parent"), &spec.parent, &old.spec.parent));
    }
    let pp = sp.child("parent");
    match spec.parent.kind.as_deref() {
        Some(PARENT_KIND) => {}
        other => {
            errs.push(FieldError::invalid(pp.child("kind"), other.unwrap_or_default(), "kind must be CloudProfile"))
        }
    }
    if spec.parent.name.is_empty() {
        errs.push(FieldError::required(pp.child("name"), "must provide a parent name"));
    }
    if let Some(ca) = &spec.ca_bundle {
        errs.0.extend(ca_bundle(ca, &sp.child("caBundle")));
    }
    errs.extend(crate::cloudprofile::type_quantities(&spec.machine_types, &spec.volume_types, &sp));
    let old_spec = old.map(|o| &o.spec);
    let old_merged = old.and_then(|o| o.status.as_ref()).and_then(|s| s.cloud_profile_spec.as_ref());
    let Some(parent) = parent else {
        if !spec.parent.name.is_empty() {
            errs.push(FieldError {
                detail: "parent CloudProfile could not be found".into(),
                ..FieldError::not_found(pp.child("name"), &spec.parent.name)
            });
        }
        return errs;
    };
    let expiry = Expiry { now, updating: old.is_some() };
    if let Some(k8s) = &spec.kubernetes {
        let old_versions = Prior { spec: old_spec, merged: old_merged }.kubernetes_versions();
        errs.extend(kubernetes_overrides(&k8s.versions, &parent.kubernetes.versions, &old_versions, &expiry, &sp));
    }
    errs.extend(machine_images(spec, parent, Prior { spec: old_spec, merged: old_merged }, &expiry, &sp));

    let names_before = |f: fn(&api::core::NamespacedCloudProfileSpec) -> Vec<&str>| old_spec.map(f).unwrap_or_default();
    errs.extend(added_names(
        spec.machine_types.iter().map(|t| t.name.as_str()),
        parent.machine_types.iter().map(|t| t.name.as_str()).collect(),
        names_before(|s| s.machine_types.iter().map(|t| t.name.as_str()).collect()),
        &sp.child("machineTypes"),
        "machine type",
    ));
    errs.extend(added_names(
        spec.volume_types.iter().map(|t| t.name.as_str()),
        parent.volume_types.iter().map(|t| t.name.as_str()).collect(),
        names_before(|s| s.volume_types.iter().map(|t| t.name.as_str()).collect()),
        &sp.child("volumeTypes"),
        "volume type",
    ));
    errs
}

/// The profile before an update: its spec and the merged result in its status.
#[derive(Clone, Copy)]
struct Prior<'a> {
    spec: Option<&'a api::core::NamespacedCloudProfileSpec>,
    merged: Option<&'a CloudProfileSpec>,
}

impl<'a> Prior<'a> {
    fn kubernetes_versions(self) -> Vec<&'a ExpirableVersion> {
        let mut versions: Vec<&ExpirableVersion> = Vec::new();
        versions.extend(self.spec.and_then(|s| s.kubernetes.as_ref()).iter().flat_map(|k| k.versions.iter()));
        versions.extend(self.merged.iter().flat_map(|m| m.kubernetes.versions.iter()));
        versions
    }

    fn image_versions(self, name: &str) -> Vec<&'a ExpirableVersion> {
        let mut versions: Vec<&ExpirableVersion> = Vec::new();
        for list in [self.spec.map(|s| s.machine_images.as_slice()), self.merged.map(|m| m.machine_images.as_slice())] {
            versions.extend(image_versions(list.unwrap_or_default(), name));
        }
        versions
    }
}

/// Whether an override's expiration date in the past is refused: on update only, and not when
/// the entry keeps the date it had before (the old override or the old merged result), which
/// Gardener allows.
struct Expiry {
    now: Timestamp,
    updating: bool,
}

impl Expiry {
    /// An override (of a Kubernetes or machine image version) must set its expiration date, and
    /// a date in the past only where [`Self::refused`] allows it.
    fn check_override(
        &self,
        old_versions: &[&ExpirableVersion],
        v: &ExpirableVersion,
        vp: &Path,
    ) -> Option<FieldError> {
        if v.expiration_date.is_none() {
            Some(FieldError::required(
                vp.child("expirationDate"),
                format!("an override of version {:?} must set its expiration date", v.version),
            ))
        } else if self.refused(old_versions, v) {
            Some(FieldError::invalid(
                vp.child("expirationDate"),
                &v.version,
                format!("expiration date for version {:?} is in the past", v.version),
            ))
        } else {
            None
        }
    }

    fn refused(&self, old_versions: &[&ExpirableVersion], v: &ExpirableVersion) -> bool {
        let past = v.expiration_date.as_ref().is_some_and(|d| d.0 < self.now);
        let kept = old_versions.iter().any(|o| o.version == v.version && o.expiration_date == v.expiration_date);
        self.updating && past && !kept
    }
}

/// `spec.kubernetes.versions`: overrides of the parent's versions, each with an expiration date.
fn kubernetes_overrides(
    versions: &[ExpirableVersion],
    parent_versions: &[ExpirableVersion],
    old_versions: &[&ExpirableVersion],
    expiry: &Expiry,
    sp: &Path,
) -> ErrorList {
    let mut errs = ErrorList::default();
    let kp = sp.child("kubernetes").child("versions");
    let mut seen = BTreeSet::new();
    for (i, v) in versions.iter().enumerate() {
        let vp = kp.index(i);
        if !seen.insert(v.version.as_str()) {
            errs.push(FieldError::duplicate(vp.child("version"), &v.version));
        } else if !parent_versions.iter().any(|p| p.version == v.version) {
            errs.push(FieldError::invalid(
                vp.child("version"),
                &v.version,
                "does not exist in the parent CloudProfile and thus cannot be overridden",
            ));
        } else if let Some(err) = expiry.check_override(old_versions, v, &vp) {
            errs.push(err);
        }
    }
    errs
}

/// `spec.machineImages`: overrides of the parent's versions and added versions and images.
fn machine_images(
    spec: &api::core::NamespacedCloudProfileSpec,
    parent: &CloudProfileSpec,
    prior: Prior<'_>,
    expiry: &Expiry,
    sp: &Path,
) -> ErrorList {
    let mut errs = ErrorList::default();
    let ip = sp.child("machineImages");
    let mut images = BTreeSet::new();
    for (i, image) in spec.machine_images.iter().enumerate() {
        let p = ip.index(i);
        if image.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
            continue;
        }
        if !images.insert(image.name.as_str()) {
            errs.push(FieldError::duplicate(p.child("name"), &image.name));
            continue;
        }
        let in_parent = parent.machine_images.iter().find(|m| m.name == image.name);
        if in_parent.is_none() && image.versions.is_empty() {
            errs.push(FieldError::required(p.child("versions"), "a new machine image needs at least one version"));
        }
        let old_versions = prior.image_versions(&image.name);
        let mut seen = BTreeSet::new();
        for (j, v) in image.versions.iter().enumerate() {
            let vp = p.child("versions").index(j);
            let e = &v.expirable;
            if !seen.insert(e.version.as_str()) {
                errs.push(FieldError::duplicate(vp.child("version"), &e.version));
                continue;
            }
            let overrides = in_parent.is_some_and(|m| m.versions.iter().any(|pv| pv.expirable.version == e.version));
            if overrides {
                errs.extend(image_override(v, &old_versions, expiry, &vp));
            } else {
                errs.extend(image_addition(e, &vp));
            }
        }
    }
    errs
}

/// A version of a parent image: only its expiration date may be set.
fn image_override(
    v: &api::core::cloudprofile::MachineImageVersion,
    old_versions: &[&ExpirableVersion],
    expiry: &Expiry,
    vp: &Path,
) -> ErrorList {
    let mut errs = ErrorList::default();
    let e = &v.expirable;
    for (field, set) in [
        ("classification", e.classification.is_some()),
        ("cri", !v.cri.is_empty()),
        ("architectures", !v.architectures.is_empty()),
    ] {
        if set {
            errs.push(FieldError::forbidden(
                    vp.child(field),
                    format!("must not provide a {field} to a version of the parent's machine image; only its expirationDate can be overridden"),
                ));
        }
    }
    if let Some(err) = expiry.check_override(old_versions, e, vp) {
        errs.push(err);
    }
    errs
}

/// A version the parent does not have: a semantic version with a classification.
fn image_addition(e: &ExpirableVersion, vp: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    if let Err(err) = semver::Version::parse(&e.version) {
        errs.push(FieldError::invalid(vp.child("version"), &e.version, format!("must be a semantic version: {err}")));
    }
    if e.classification.is_none() {
        errs.push(FieldError::required(
                vp.child("classification"),
                format!(
                    "version {:?} is not in the parent CloudProfile: an added version needs a classification (only the parent's versions can be overridden)",
                    e.version
                ),
            ));
    }
    errs
}

/// The versions of image `name` in `images`.
fn image_versions<'a>(images: &'a [MachineImage], name: &str) -> impl Iterator<Item = &'a ExpirableVersion> {
    images.iter().filter(move |m| m.name == name).flat_map(|m| m.versions.iter().map(|v| &v.expirable))
}

/// Added machine or volume types: names set and unique, none the parent's unless the profile
/// had it before (the parent gained the name later).
fn added_names<'a>(
    names: impl Iterator<Item = &'a str>,
    parent: Vec<&str>,
    before: Vec<&str>,
    p: &Path,
    what: &str,
) -> ErrorList {
    let mut errs = ErrorList::default();
    let mut seen = BTreeSet::new();
    for (i, n) in names.enumerate() {
        let np = p.index(i).child("name");
        if n.is_empty() {
            errs.push(FieldError::required(np, ""));
        } else if !seen.insert(n) {
            errs.push(FieldError::duplicate(np, n));
        } else if parent.contains(&n) && !before.contains(&n) {
            errs.push(FieldError::invalid(
                np,
                n,
                format!("the parent CloudProfile already offers a {what} of this name; a NamespacedCloudProfile can only add new ones"),
            ));
        }
    }
    errs
}

/// One or more PEM certificates that parse.
fn ca_bundle(pem: &str, p: &Path) -> Option<FieldError> {
    let mut count = 0;
    for block in x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes()) {
        let ok = block.is_ok_and(|b| b.label == "CERTIFICATE" && b.parse_x509().is_ok());
        if !ok {
            return Some(FieldError::invalid(p.clone(), "<bundle>", "caBundle is not a valid PEM-encoded certificate"));
        }
        count += 1;
    }
    (count == 0).then(|| FieldError::invalid(p.clone(), "<bundle>", "caBundle is not a valid PEM-encoded certificate"))
}

#[cfg(test)]
mod tests;
