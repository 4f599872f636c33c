//! What a CloudProfile offers, as the Shoot rules need it: the version to default a partial or
//! missing version to, and the lookups of versions, machine types, images and regions. The
//! lifecycle classification itself (`preview`/`supported`/`deprecated`/`expired`) is
//! `api::helpers::versions`; this module only chooses among offered versions.

use api::core::cloudprofile::{CloudProfileSpec, ExpirableVersion, MachineImage, VersionClassification};
use api::helpers::versions::{VersionState, classify};
use k8s_openapi::jiff::Timestamp;
use semver::Version;

fn parse(v: &str) -> Option<Version> {
    Version::parse(v.trim_start_matches('v')).ok()
}

/// Whether `version` (`1.20.2`) is matched by the partial `wanted` (`1`, `1.20`, `1.20.2`).
fn matches_prefix(version: &Version, wanted: &str) -> bool {
    let parts: Vec<&str> = wanted.trim_start_matches('v').split('.').collect();
    let want = |i: usize, have: u64| parts.get(i).is_none_or(|p| p.parse::<u64>().ok() == Some(have));
    !wanted.is_empty() && parts.len() <= 3 && want(0, version.major) && want(1, version.minor) && want(2, version.patch)
}

/// The version a shoot gets for the (possibly partial or empty) `wanted`: the highest offered,
/// non-expired, non-preview version matching it; for an empty `wanted` only `supported` (or
/// unclassified) versions count, as in the reference system. `None` when nothing fits, which
/// validation then reports.
pub fn default_version(offered: &[ExpirableVersion], wanted: &str, now: Timestamp) -> Option<String> {
    offered
        .iter()
        .filter_map(|v| Some((parse(&v.version)?, v)))
        .filter(|(parsed, v)| {
            let state = classify(offered, &v.version, now).ok();
            let usable = match state {
                Some(VersionState::Supported) => true,
                Some(VersionState::Deprecated) => !wanted.is_empty(),
                _ => false,
            };
            usable && (wanted.is_empty() || matches_prefix(parsed, wanted))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, v)| v.version.clone())
}

/// Whether `wanted` is a full `major.minor.patch` version (a partial one gets defaulted).
pub fn is_full_version(wanted: &str) -> bool {
    parse(wanted).is_some()
}

/// The Kubernetes versions a new shoot may choose from (for error messages).
pub fn offered_kubernetes(profile: &CloudProfileSpec, now: Timestamp) -> Vec<String> {
    let offered = &profile.kubernetes.versions;
    offered
        .iter()
        .filter(|v| !matches!(classify(offered, &v.version, now), Ok(VersionState::Expired) | Err(_)))
        .map(|v| v.version.clone())
        .collect()
}

/// The versions of one machine image as plain expirable versions.
pub fn image_versions(image: &MachineImage) -> Vec<ExpirableVersion> {
    image.versions.iter().map(|v| v.expirable.clone()).collect()
}

/// The machine image a worker pool gets when it names none: the first image of the profile that
/// has a usable version, with that version.
pub fn default_image(profile: &CloudProfileSpec, now: Timestamp) -> Option<(String, String)> {
    profile
        .machine_images
        .iter()
        .find_map(|img| default_version(&image_versions(img), "", now).map(|v| (img.name.clone(), v)))
}

/// Whether a version is a preview (kept for documentation of why defaults skip it).
pub fn is_preview(v: &ExpirableVersion) -> bool {
    v.classification == Some(VersionClassification::Preview)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn v(version: &str, expires: Option<i64>, class: Option<VersionClassification>) -> ExpirableVersion {
        ExpirableVersion {
            version: version.into(),
            expiration_date: expires.map(|s| Time(Timestamp::from_second(s).unwrap())),
            classification: class,
        }
    }

    #[test]
    fn defaults_pick_highest_usable_match() {
        use VersionClassification as C;
        let now = Timestamp::from_second(1_000).unwrap();
        let offered = [
            v("1.21.0", None, Some(C::Preview)),
            v("1.20.4", None, Some(C::Deprecated)),
            v("1.20.2", None, None),
            v("1.20.9", Some(10), Some(C::Supported)),
            v("1.19.7", None, Some(C::Supported)),
        ];
        let cases = [
            ("", Some("1.20.2")),
            ("1", Some("1.20.4")),
            ("1.20", Some("1.20.4")),
            ("1.19", Some("1.19.7")),
            ("1.21", None),
            ("1.18", None),
            ("1.x", None),
            ("1.2.3.4", None),
        ];
        for (wanted, want) in cases {
            assert_eq!(default_version(&offered, wanted, now).as_deref(), want, "{wanted:?}");
        }
        assert!(is_full_version("1.20.2") && !is_full_version("1.20"));
        assert_eq!(
            offered_kubernetes(
                &CloudProfileSpec {
                    kubernetes: api::core::cloudprofile::KubernetesSettings { versions: offered.to_vec() },
                    ..Default::default()
                },
                now
            )
            .len(),
            4
        );
        assert!(is_preview(&offered[0]));
    }
}
