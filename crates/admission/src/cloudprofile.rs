//! CloudProfile validation: versions are semantic versions and unique, names unique, the
//! quantities of machine and volume types non-negative quantities; on update no Kubernetes or
//! machine image version may be removed while a Shoot still uses it.

use crate::common::non_negative_quantity;
use crate::field::{ErrorList, FieldError, Path};
use api::core::cloudprofile::{ExpirableVersion, MachineType, MachineTypeStorage, VolumeType};
use api::core::{CloudProfile, Shoot};
use kube::ResourceExt;
use std::collections::BTreeSet;

fn versions(list: &[ExpirableVersion], p: &Path, errs: &mut ErrorList) {
    let mut seen = BTreeSet::new();
    for (i, v) in list.iter().enumerate() {
        let vp = p.index(i).child("version");
        match semver::Version::parse(&v.version) {
            Err(e) => errs.push(FieldError::invalid(vp, &v.version, format!("must be a semantic version: {e}"))),
            Ok(parsed) if !seen.insert(parsed.clone()) => errs.push(FieldError::duplicate(vp, &v.version)),
            Ok(_) => {}
        }
    }
}

fn unique_names<'a>(names: impl Iterator<Item = &'a str>, p: &Path, field: &str, errs: &mut ErrorList) {
    let mut seen = BTreeSet::new();
    for (i, n) in names.enumerate() {
        if n.is_empty() {
            errs.push(FieldError::required(p.index(i).child(field), ""));
        } else if !seen.insert(n) {
            errs.push(FieldError::duplicate(p.index(i).child(field), n));
        }
    }
}

/// The quantities of machine types (`cpu`, `gpu`, `memory`, `storage` or its `size` and
/// `minSize`) and volume types (`minSize`) under `sp`: each parses and is not negative (quota
/// accounting multiplies them; a negative one would lower a shoot's usage). Shared with
/// NamespacedCloudProfiles, whose added types are merged into what shoots use.
pub fn type_quantities(machine_types: &[MachineType], volume_types: &[VolumeType], sp: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    let mut check = |path: Path, value: &str| {
        if let Err(e) = non_negative_quantity(&path, value) {
            errs.push(e);
        }
    };
    for (i, t) in machine_types.iter().enumerate() {
        let tp = sp.child("machineTypes").index(i);
        for (name, q) in [("cpu", &t.cpu), ("gpu", &t.gpu), ("memory", &t.memory)] {
            check(tp.child(name), &q.0);
        }
        match &t.storage {
            None => {}
            Some(MachineTypeStorage::Size(q)) => check(tp.child("storage"), &q.0),
            Some(MachineTypeStorage::Volume(v)) => {
                for (name, q) in [("size", &v.size), ("minSize", &v.min_size)] {
                    if let Some(q) = q {
                        check(tp.child("storage").child(name), &q.0);
                    }
                }
            }
        }
    }
    for (i, t) in volume_types.iter().enumerate() {
        if let Some(q) = &t.min_size {
            check(sp.child("volumeTypes").index(i).child("minSize"), &q.0);
        }
    }
    errs
}

/// Every rule; on update (`old`), `shoots` are the shoots of the whole garden, of which those
/// naming this profile directly count (see [`validate_in_hierarchy`] for shoots on its
/// NamespacedCloudProfiles).
pub fn validate<S: AsRef<Shoot>>(profile: &CloudProfile, old: Option<&CloudProfile>, shoots: &[S]) -> ErrorList {
    let direct = |s: &Shoot| {
        crate::shoot::reference::reference(&s.spec)
            .filter(|r| r.kind == crate::shoot::reference::CLOUD_PROFILE)
            .map(|r| r.name)
    };
    validate_in_hierarchy(profile, old, shoots, direct)
}

/// [`validate`] where a shoot uses this profile when `root_of` (the root CloudProfile of the
/// shoot's reference: the profile itself, or a NamespacedCloudProfile's parent) names it; the
/// versions of a parent are in use by the shoots of its NamespacedCloudProfiles too.
pub fn validate_in_hierarchy<S: AsRef<Shoot>>(
    profile: &CloudProfile,
    old: Option<&CloudProfile>,
    shoots: &[S],
    root_of: impl Fn(&Shoot) -> Option<String>,
) -> ErrorList {
    let mut errs = ErrorList::default();
    let sp = Path::new("spec");
    let spec = &profile.spec;
    if spec.type_.is_empty() {
        errs.push(FieldError::required(sp.child("type"), ""));
    }
    if spec.kubernetes.versions.is_empty() {
        errs.push(FieldError::required(sp.child("kubernetes").child("versions"), "must offer at least one version"));
    }
    versions(&spec.kubernetes.versions, &sp.child("kubernetes").child("versions"), &mut errs);
    let ip = sp.child("machineImages");
    unique_names(spec.machine_images.iter().map(|i| i.name.as_str()), &ip, "name", &mut errs);
    for (i, img) in spec.machine_images.iter().enumerate() {
        let list: Vec<ExpirableVersion> = img.versions.iter().map(|v| v.expirable.clone()).collect();
        versions(&list, &ip.index(i).child("versions"), &mut errs);
    }
    unique_names(spec.machine_types.iter().map(|t| t.name.as_str()), &sp.child("machineTypes"), "name", &mut errs);
    unique_names(spec.volume_types.iter().map(|t| t.name.as_str()), &sp.child("volumeTypes"), "name", &mut errs);
    errs.extend(type_quantities(&spec.machine_types, &spec.volume_types, &sp));
    unique_names(spec.regions.iter().map(|r| r.name.as_str()), &sp.child("regions"), "name", &mut errs);
    for (i, r) in spec.regions.iter().enumerate() {
        unique_names(
            r.zones.iter().map(|z| z.name.as_str()),
            &sp.child("regions").index(i).child("zones"),
            "name",
            &mut errs,
        );
    }
    if let Some(old) = old {
        errs.extend(removed_in_use(profile, old, shoots, root_of));
    }
    errs
}

/// Versions present in `old` but not in `new` that a shoot of this profile still uses.
fn removed_in_use<S: AsRef<Shoot>>(
    new: &CloudProfile,
    old: &CloudProfile,
    shoots: &[S],
    root_of: impl Fn(&Shoot) -> Option<String>,
) -> ErrorList {
    let mut errs = ErrorList::default();
    let name = new.name_any();
    let users: Vec<&Shoot> =
        shoots.iter().map(AsRef::as_ref).filter(|s| root_of(s).as_deref() == Some(name.as_str())).collect();
    let kept: BTreeSet<&str> = new.spec.kubernetes.versions.iter().map(|v| v.version.as_str()).collect();
    for v in &old.spec.kubernetes.versions {
        if kept.contains(v.version.as_str()) {
            continue;
        }
        let using = |s: &Shoot| {
            s.spec.kubernetes.version == v.version
                || s.spec
                    .provider
                    .workers
                    .iter()
                    .any(|w| w.kubernetes.as_ref().and_then(|k| k.version.as_deref()) == Some(&v.version))
        };
        if let Some(s) = users.iter().find(|s| using(s)) {
            errs.push(FieldError::forbidden(
                Path::new("spec").child("kubernetes").child("versions"),
                format!("unable to delete Kubernetes version {:?} from CloudProfile {name:?}: it is still in use by shoot {}/{}", v.version, s.namespace().unwrap_or_default(), s.name_any()),
            ));
        }
    }
    for img in &old.spec.machine_images {
        let new_img = new.spec.machine_images.iter().find(|i| i.name == img.name);
        for v in &img.versions {
            let version = &v.expirable.version;
            if new_img.is_some_and(|n| n.versions.iter().any(|nv| &nv.expirable.version == version)) {
                continue;
            }
            let using = |s: &Shoot| {
                s.spec.provider.workers.iter().any(|w| {
                    w.machine.image.as_ref().is_some_and(|i| i.name == img.name && i.version.as_ref() == Some(version))
                })
            };
            if let Some(s) = users.iter().find(|s| using(s)) {
                errs.push(FieldError::forbidden(
                    Path::new("spec").child("machineImages"),
                    format!("unable to delete machine image version {}:{version} from CloudProfile {name:?}: it is still in use by shoot {}/{}", img.name, s.namespace().unwrap_or_default(), s.name_any()),
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use api::core::cloudprofile::MachineTypeStorageVolume;
    use api::core::shoot::provider::ShootMachineImage;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use std::sync::Arc;

    #[test]
    fn rules() {
        let ok = fixtures::cloud_profile();
        assert!(validate::<Arc<Shoot>>(&ok, None, &[]).is_empty(), "{}", validate::<Arc<Shoot>>(&ok, None, &[]));
        type Mutation = fn(&mut CloudProfile);
        let cases: Vec<(&str, Mutation, &str)> = vec![
            ("no type", |p| p.spec.type_ = String::new(), "spec.type: Required value"),
            ("no versions", |p| p.spec.kubernetes.versions.clear(), "spec.kubernetes.versions: Required value"),
            (
                "bad version",
                |p| p.spec.kubernetes.versions[0].version = "1.20".into(),
                "spec.kubernetes.versions[0].version: Invalid value: \"1.20\"",
            ),
            (
                "dup version",
                |p| p.spec.kubernetes.versions[1].version = "1.21.0".into(),
                "spec.kubernetes.versions[1].version: Duplicate value: \"1.21.0\"",
            ),
            (
                "dup machine type",
                |p| p.spec.machine_types[1].name = "local".into(),
                "spec.machineTypes[1].name: Duplicate value: \"local\"",
            ),
            (
                "bad image version",
                |p| p.spec.machine_images[0].versions[0].expirable.version = "x".into(),
                "spec.machineImages[0].versions[0].version: Invalid value: \"x\"",
            ),
            (
                "negative machine cpu",
                |p| p.spec.machine_types[1].cpu = Quantity("-8".into()),
                "spec.machineTypes[1].cpu: Invalid value: \"-8\": must be a non-negative quantity",
            ),
            (
                "unparsable machine memory",
                |p| p.spec.machine_types[0].memory = Quantity("4 GB".into()),
                "spec.machineTypes[0].memory: Invalid value: \"4 GB\": must be a quantity (for example 100Mi)",
            ),
            (
                "negative machine storage",
                |p| p.spec.machine_types[0].storage = Some(MachineTypeStorage::Size(Quantity("-1Pi".into()))),
                "spec.machineTypes[0].storage: Invalid value: \"-1Pi\": must be a non-negative quantity",
            ),
            (
                "negative machine storage minSize",
                |p| {
                    p.spec.machine_types[0].storage = Some(MachineTypeStorage::Volume(MachineTypeStorageVolume {
                        min_size: Some(Quantity("-1Gi".into())),
                        ..Default::default()
                    }))
                },
                "spec.machineTypes[0].storage.minSize: Invalid value: \"-1Gi\": must be a non-negative quantity",
            ),
            (
                "negative volume type minSize",
                |p| p.spec.volume_types[0].min_size = Some(Quantity("-20Gi".into())),
                "spec.volumeTypes[0].minSize: Invalid value: \"-20Gi\": must be a non-negative quantity",
            ),
        ];
        for (name, mutate, want) in cases {
            let mut p = fixtures::cloud_profile();
            mutate(&mut p);
            let errs = validate::<Arc<Shoot>>(&p, None, &[]);
            assert!(errs.iter().any(|e| e.to_string().starts_with(want)), "{name}: want {want:?}, got {errs}");
        }
    }

    #[test]
    fn used_versions_cannot_be_removed() {
        let old = fixtures::cloud_profile();
        let mut shoot = fixtures::shoot();
        shoot.spec.provider.workers[0].machine.image =
            Some(ShootMachineImage { name: "local".into(), version: Some("1.0.0".into()), provider_config: None });
        let shoots = vec![Arc::new(shoot)];
        let mut new = fixtures::cloud_profile();
        new.spec.kubernetes.versions.retain(|v| v.version != "1.20.2");
        new.spec.machine_images[0].versions.retain(|v| v.expirable.version != "1.0.0");
        let errs = validate(&new, Some(&old), &shoots);
        assert!(errs.to_string().contains("spec.kubernetes.versions: Forbidden: unable to delete Kubernetes version \"1.20.2\" from CloudProfile \"local\": it is still in use by shoot garden-dev/demo"), "{errs}");
        assert!(
            errs.to_string()
                .contains("spec.machineImages: Forbidden: unable to delete machine image version local:1.0.0"),
            "{errs}"
        );
        // Unused versions go freely; shoots of other profiles do not count.
        let mut unused = fixtures::cloud_profile();
        unused.spec.kubernetes.versions.retain(|v| v.version != "1.21.0");
        assert!(validate(&unused, Some(&old), &shoots).is_empty());
        let mut other = fixtures::shoot();
        other.spec.cloud_profile_name = Some("other".into());
        assert!(validate(&new, Some(&old), &[Arc::new(other)]).is_empty());
        // A shoot on a NamespacedCloudProfile of this parent uses the parent's versions.
        let mut child = fixtures::shoot();
        child.spec.cloud_profile_name = None;
        child.spec.cloud_profile = Some(api::core::shoot::CloudProfileReference {
            kind: Some("NamespacedCloudProfile".into()),
            name: "team".into(),
        });
        let child = [Arc::new(child)];
        assert!(validate(&new, Some(&old), &child).is_empty(), "without knowing the child's parent");
        let errs = validate_in_hierarchy(&new, Some(&old), &child, |_| Some("local".into()));
        assert!(errs.to_string().contains("unable to delete Kubernetes version \"1.20.2\""), "{errs}");
    }
}
