//! The objects a shoot refers to, from what the caches hold: the profile spec it uses
//! ([`api::helpers::cloudprofile_ref`]: `spec.cloudProfile` or `spec.cloudProfileName`; a
//! NamespacedCloudProfile stands for its merged `status.cloudProfileSpec`) and the ExposureClass
//! of `spec.exposureClassName`. Pure: the controller looks the named objects up and passes what
//! it found; a missing, unreadable or not yet merged object is a [`Refusal`] naming it.

use super::refusal::Refusal;
use api::core::cloudprofile::CloudProfileSpec;
use api::core::{CloudProfile, ExposureClass, NamespacedCloudProfile, Shoot};
use api::helpers::cloudprofile_ref::{self, ProfileRef};
use kube::core::DeserializeGuard;

/// What the caches hold under the names the shoot uses (`None`: nothing of that name).
#[derive(Clone, Copy, Debug, Default)]
pub struct Found<'a> {
    pub cloud_profile: Option<&'a DeserializeGuard<CloudProfile>>,
    pub namespaced_cloud_profile: Option<&'a DeserializeGuard<NamespacedCloudProfile>>,
    pub exposure_class: Option<&'a DeserializeGuard<ExposureClass>>,
}

/// What the decision needs of the referenced objects.
#[derive(Clone, Copy, Debug)]
pub struct Resolved<'a> {
    pub profile: &'a CloudProfileSpec,
    pub exposure_class: Option<&'a ExposureClass>,
}

/// The ExposureClass name the shoot gives, if any.
pub fn exposure_class_name(shoot: &Shoot) -> Option<&str> {
    shoot.spec.exposure_class_name.as_deref().filter(|n| !n.is_empty())
}

/// Resolves the shoot's references against what was found.
pub fn resolve<'a>(shoot: &Shoot, found: &Found<'a>) -> Result<Resolved<'a>, Refusal> {
    let reference = cloudprofile_ref::profile_ref(shoot)?;
    let what = reference.to_string();
    let profile = match reference {
        ProfileRef::Cluster(_) => readable(found.cloud_profile, &what)?,
        ProfileRef::Namespaced { .. } => None,
    };
    let namespaced = match reference {
        ProfileRef::Namespaced { .. } => readable(found.namespaced_cloud_profile, &what)?,
        ProfileRef::Cluster(_) => None,
    };
    let profile = cloudprofile_ref::resolve(shoot, profile, namespaced)?;
    let exposure_class = match exposure_class_name(shoot) {
        None => None,
        Some(name) => match readable(found.exposure_class, &format!("ExposureClass {name:?}"))? {
            Some(class) => Some(class),
            None => return Err(Refusal::ExposureClassNotFound(name.to_string())),
        },
    };
    Ok(Resolved { profile, exposure_class })
}

/// The object in a cache entry, or a refusal when the entry could not be read as its kind.
fn readable<'a, K>(guard: Option<&'a DeserializeGuard<K>>, what: &str) -> Result<Option<&'a K>, Refusal> {
    match guard.map(|g| &g.0) {
        None => Ok(None),
        Some(Ok(object)) => Ok(Some(object)),
        Some(Err(invalid)) => Err(Refusal::UnreadableReference { what: what.to_string(), error: invalid.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::{profile, shoot};
    use api::core::exposureclass::ExposureClassFields;
    use api::core::shoot::CloudProfileReference;
    use api::core::{NamespacedCloudProfileStatus, SeedSelector};
    use kube::core::error_boundary::InvalidObject;

    fn namespaced(computed: bool) -> NamespacedCloudProfile {
        let mut p = NamespacedCloudProfile::default();
        p.metadata.name = Some("team".into());
        p.metadata.namespace = Some("garden-p".into());
        let mut merged = profile().spec;
        merged.seed_selector = Some(SeedSelector { provider_types: vec!["merged".into()], ..Default::default() });
        p.status = Some(NamespacedCloudProfileStatus {
            cloud_profile_spec: computed.then_some(merged),
            observed_generation: None,
        });
        p
    }

    fn class(name: &str) -> ExposureClass {
        ExposureClass::new(name, ExposureClassFields { handler: "internet-config".into(), scheduling: None })
    }

    fn unreadable<K>() -> DeserializeGuard<K> {
        DeserializeGuard(Err(InvalidObject { error: "missing field `spec`".into(), metadata: Default::default() }))
    }

    fn on_namespaced(mut s: Shoot) -> Shoot {
        s.metadata.namespace = Some("garden-p".into());
        s.spec.cloud_profile_name = None;
        s.spec.cloud_profile =
            Some(CloudProfileReference { kind: Some("NamespacedCloudProfile".into()), name: "team".into() });
        s
    }

    fn with_class(mut s: Shoot, name: &str) -> Shoot {
        s.spec.exposure_class_name = Some(name.into());
        s
    }

    #[test]
    fn table() {
        let cp = DeserializeGuard(Ok(profile()));
        let (computed, pending) = (DeserializeGuard(Ok(namespaced(true))), DeserializeGuard(Ok(namespaced(false))));
        let internet = DeserializeGuard(Ok(class("internet")));
        let (bad_cp, bad_ncp, bad_class) = (unreadable(), unreadable(), unreadable());
        let all = Found {
            cloud_profile: Some(&cp),
            namespaced_cloud_profile: Some(&computed),
            exposure_class: Some(&internet),
        };
        let cluster_shoot = shoot("s");
        let profile_name = cluster_shoot.spec.cloud_profile_name.clone().unwrap_or_default();
        // (case, shoot, found, Ok(provider types of the chosen profile, class) | Err(refusal text))
        type Case<'c> = (&'c str, Shoot, Found<'c>, Result<(Vec<&'c str>, Option<&'c str>), String>);
        let cases: Vec<Case<'_>> = vec![
            ("CloudProfile", shoot("s"), all, Ok((vec![], None))),
            ("NamespacedCloudProfile: its merged spec", on_namespaced(shoot("s")), all, Ok((vec!["merged"], None))),
            (
                "with an ExposureClass",
                with_class(on_namespaced(shoot("s")), "internet"),
                all,
                Ok((vec!["merged"], Some("internet"))),
            ),
            (
                "CloudProfile missing",
                shoot("s"),
                Found { cloud_profile: None, ..all },
                Err(format!("CloudProfile {profile_name:?} does not exist")),
            ),
            (
                "NamespacedCloudProfile missing",
                on_namespaced(shoot("s")),
                Found { namespaced_cloud_profile: None, ..all },
                Err("NamespacedCloudProfile \"garden-p/team\" does not exist".into()),
            ),
            (
                "merged spec not computed yet",
                on_namespaced(shoot("s")),
                Found { namespaced_cloud_profile: Some(&pending), ..all },
                Err("NamespacedCloudProfile \"garden-p/team\" has no merged spec yet (status.cloudProfileSpec is not computed)"
                    .into()),
            ),
            (
                "unreadable CloudProfile",
                shoot("s"),
                Found { cloud_profile: Some(&bad_cp), ..all },
                Err(format!("CloudProfile {profile_name:?} cannot be read: missing field `spec`")),
            ),
            (
                "unreadable NamespacedCloudProfile",
                on_namespaced(shoot("s")),
                Found { namespaced_cloud_profile: Some(&bad_ncp), ..all },
                Err("NamespacedCloudProfile \"garden-p/team\" cannot be read: missing field `spec`".into()),
            ),
            (
                "ExposureClass missing",
                with_class(shoot("s"), "dedicated"),
                Found { exposure_class: None, ..all },
                Err("ExposureClass \"dedicated\" does not exist".into()),
            ),
            (
                "unreadable ExposureClass",
                with_class(shoot("s"), "internet"),
                Found { exposure_class: Some(&bad_class), ..all },
                Err("ExposureClass \"internet\" cannot be read: missing field `spec`".into()),
            ),
            ("an empty class name names none", with_class(shoot("s"), ""), Found { exposure_class: None, ..all }, Ok((vec![], None))),
            (
                "the profile is refused first",
                with_class(shoot("s"), "dedicated"),
                Found { cloud_profile: None, exposure_class: None, ..all },
                Err(format!("CloudProfile {profile_name:?} does not exist")),
            ),
        ];
        for (name, s, found, want) in cases {
            let got = resolve(&s, &found).map(|r| {
                let types =
                    r.profile.seed_selector.as_ref().map(|s| s.provider_types.iter().map(String::as_str).collect());
                (types.unwrap_or_default(), r.exposure_class.and_then(|c| c.metadata.name.as_deref()))
            });
            assert_eq!(got.map_err(|e| e.to_string()), want, "{name}");
        }
    }
}
