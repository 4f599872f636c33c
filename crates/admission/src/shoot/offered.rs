//! The Shoot rules against its CloudProfile: provider type, region and zones, Kubernetes and
//! machine image versions (offered, and not expired unless an update keeps the version it had),
//! machine and volume types.

use super::profile::{image_versions, offered_kubernetes};
use crate::field::{ErrorList, FieldError, Path};
use api::core::Shoot;
use api::core::cloudprofile::{CloudProfileSpec, ExpirableVersion};
use api::core::shoot::provider::Worker;
use api::helpers::versions::{VersionError, VersionState, classify};
use k8s_openapi::jiff::Timestamp;

/// Checks `shoot` against `profile`; `old` is the shoot before an update (`None` on create).
pub fn validate(shoot: &Shoot, old: Option<&Shoot>, profile: &CloudProfileSpec, now: Timestamp) -> ErrorList {
    let mut errs = ErrorList::default();
    let spec = &shoot.spec;
    let sp = Path::new("spec");
    if !spec.provider.type_.is_empty() && spec.provider.type_ != profile.type_ {
        errs.push(FieldError::unsupported(sp.child("provider").child("type"), &spec.provider.type_, &[&profile.type_]));
    }
    let region = profile.regions.iter().find(|r| r.name == spec.region);
    if !profile.regions.is_empty() && region.is_none() && !spec.region.is_empty() {
        let names: Vec<&str> = profile.regions.iter().map(|r| r.name.as_str()).collect();
        errs.push(FieldError::unsupported(sp.child("region"), &spec.region, &names));
    }
    if !spec.kubernetes.version.is_empty() {
        let kept = old.map(|o| o.spec.kubernetes.version.as_str()) == Some(spec.kubernetes.version.as_str());
        let offered = offered_kubernetes(profile, now);
        if let Some(e) = check_version(
            &profile.kubernetes.versions,
            &spec.kubernetes.version,
            kept,
            now,
            &sp.child("kubernetes").child("version"),
            &offered,
        ) {
            errs.push(e);
        }
    }
    for (i, w) in spec.provider.workers.iter().enumerate() {
        let old_worker = old.and_then(|o| o.spec.provider.workers.iter().find(|ow| ow.name == w.name));
        let wp = sp.child("provider").child("workers").index(i);
        errs.extend(validate_worker(w, old_worker, profile, region, &spec.kubernetes.version, now, &wp));
    }
    errs
}

/// A version must be offered; an expired one only when an update keeps it.
fn check_version(
    offered: &[ExpirableVersion],
    version: &str,
    kept: bool,
    now: Timestamp,
    path: &Path,
    supported: &[String],
) -> Option<FieldError> {
    match classify(offered, version, now) {
        Ok(VersionState::Expired) if !kept => Some(FieldError::unsupported(path.clone(), version, supported)),
        Ok(_) => None,
        Err(VersionError::NotOffered(_)) => Some(FieldError::unsupported(path.clone(), version, supported)),
        Err(e @ VersionError::Invalid { .. }) => Some(FieldError::invalid(path.clone(), version, e.to_string())),
    }
}

fn validate_worker(
    w: &Worker,
    old: Option<&Worker>,
    profile: &CloudProfileSpec,
    region: Option<&api::core::cloudprofile::Region>,
    shoot_version: &str,
    now: Timestamp,
    wp: &Path,
) -> ErrorList {
    let mut errs = ErrorList::default();
    let mp = wp.child("machine");
    let usable_types: Vec<&str> =
        profile.machine_types.iter().filter(|t| t.usable != Some(false)).map(|t| t.name.as_str()).collect();
    if !w.machine.type_.is_empty() && !usable_types.contains(&w.machine.type_.as_str()) {
        errs.push(FieldError::unsupported(mp.child("type"), &w.machine.type_, &usable_types));
    }
    if let Some(region) = region {
        let zone_names: Vec<&str> = region.zones.iter().map(|z| z.name.as_str()).collect();
        for (z, zone) in w.zones.iter().enumerate() {
            match region.zones.iter().find(|rz| &rz.name == zone) {
                None if !zone.is_empty() => {
                    errs.push(FieldError::unsupported(wp.child("zones").index(z), zone, &zone_names))
                }
                Some(rz) if rz.unavailable_machine_types.contains(&w.machine.type_) => errs.push(FieldError::invalid(
                    mp.child("type"),
                    &w.machine.type_,
                    format!("machine type is unavailable in zone {zone:?}"),
                )),
                _ => {}
            }
        }
    }
    match &w.machine.image {
        None if !profile.machine_images.is_empty() => {
            errs.push(FieldError::required(
                mp.child("image"),
                "no machine image could be defaulted from the CloudProfile",
            ));
        }
        None => {}
        Some(image) => {
            let ip = mp.child("image");
            match profile.machine_images.iter().find(|i| i.name == image.name) {
                None => {
                    let names: Vec<&str> = profile.machine_images.iter().map(|i| i.name.as_str()).collect();
                    errs.push(FieldError::unsupported(ip.child("name"), &image.name, &names));
                }
                Some(offered) => match &image.version {
                    None => errs.push(FieldError::required(ip.child("version"), "no version could be defaulted")),
                    Some(v) => {
                        let kept = old
                            .and_then(|o| o.machine.image.as_ref())
                            .is_some_and(|oi| oi.name == image.name && oi.version.as_ref() == Some(v));
                        let versions = image_versions(offered);
                        let supported: Vec<String> = versions
                            .iter()
                            .filter(|ev| {
                                !matches!(classify(&versions, &ev.version, now), Ok(VersionState::Expired) | Err(_))
                            })
                            .map(|ev| ev.version.clone())
                            .collect();
                        if let Some(e) = check_version(&versions, v, kept, now, &ip.child("version"), &supported) {
                            errs.push(e);
                        }
                    }
                },
            }
        }
    }
    if let Some(t) = w.volume.as_ref().and_then(|v| v.type_.as_deref()) {
        let names: Vec<&str> =
            profile.volume_types.iter().filter(|v| v.usable != Some(false)).map(|v| v.name.as_str()).collect();
        if !names.contains(&t) {
            errs.push(FieldError::unsupported(wp.child("volume").child("type"), t, &names));
        }
    }
    if let Some(kv) = w.kubernetes.as_ref().and_then(|k| k.version.as_deref()) {
        let parse = |s: &str| semver::Version::parse(s.trim_start_matches('v')).ok();
        match (parse(kv), parse(shoot_version)) {
            (None, _) => errs.push(FieldError::invalid(
                wp.child("kubernetes").child("version"),
                kv,
                "must be a semantic version",
            )),
            (Some(pool), Some(shoot)) if pool > shoot => errs.push(FieldError::forbidden(
                wp.child("kubernetes").child("version"),
                format!("must not be higher than the shoot's version {shoot_version}"),
            )),
            _ => {}
        }
    }
    errs
}
