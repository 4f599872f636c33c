//! Kubernetes version lifecycle from a CloudProfile (the versioning GEP): a version is
//! `preview`, `supported` or `deprecated` as classified, `expired` once its `expirationDate`
//! has passed (whatever its classification), and not offered when the profile omits it.
//! Also the forced-update target for an expired version: the latest non-expired patch of the
//! same minor, else of the next minor, and so on.

use crate::core::cloudprofile::{ExpirableVersion, VersionClassification};
use k8s_openapi::jiff::Timestamp;
use semver::Version;

/// Where a version stands in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionState {
    Preview,
    Supported,
    Deprecated,
    /// The expiration date has passed: no new clusters, forced update at next maintenance.
    Expired,
}

/// Why a version cannot be classified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("Kubernetes version {0:?} is not offered by the cloud profile")]
    NotOffered(String),
    #[error("Kubernetes version {version:?} is not a semantic version (major.minor.patch): {reason}")]
    Invalid { version: String, reason: String },
}

fn parse(version: &str) -> Result<Version, VersionError> {
    Version::parse(version.trim_start_matches('v'))
        .map_err(|e| VersionError::Invalid { version: version.to_string(), reason: e.to_string() })
}

fn expired(v: &ExpirableVersion, now: Timestamp) -> bool {
    v.expiration_date.as_ref().is_some_and(|d| d.0 <= now)
}

fn state_of(v: &ExpirableVersion, now: Timestamp) -> VersionState {
    if expired(v, now) {
        return VersionState::Expired;
    }
    match v.classification {
        Some(VersionClassification::Preview) => VersionState::Preview,
        Some(VersionClassification::Deprecated) => VersionState::Deprecated,
        // Unclassified versions count as supported, as in the reference system.
        Some(VersionClassification::Supported) | None => VersionState::Supported,
    }
}

/// Classifies `version` against the profile's Kubernetes versions at time `now`.
pub fn classify(offered: &[ExpirableVersion], version: &str, now: Timestamp) -> Result<VersionState, VersionError> {
    let wanted = parse(version)?;
    for v in offered {
        if parse(&v.version)? == wanted {
            return Ok(state_of(v, now));
        }
    }
    Err(VersionError::NotOffered(version.to_string()))
}

/// The version an expired cluster is forcibly updated to: the latest non-expired patch version
/// of its minor (when newer than the current one), else the latest non-expired patch of the
/// next offered minor, repeating until a non-expired version is found. `None` when nothing
/// newer is available.
pub fn forced_update_target(
    offered: &[ExpirableVersion],
    current: &str,
    now: Timestamp,
) -> Result<Option<String>, VersionError> {
    let current = parse(current)?;
    let mut candidates: Vec<(Version, &ExpirableVersion)> =
        offered.iter().map(|v| Ok((parse(&v.version)?, v))).collect::<Result<_, VersionError>>()?;
    candidates.sort_by(|a, b| a.0.cmp(&b.0));
    let mut minors: Vec<(u64, u64)> =
        candidates.iter().map(|(v, _)| (v.major, v.minor)).filter(|m| *m >= (current.major, current.minor)).collect();
    minors.dedup();
    for (major, minor) in minors {
        let best = candidates
            .iter()
            .filter(|(v, e)| v.major == major && v.minor == minor && *v > current && !expired(e, now))
            .max_by(|a, b| a.0.cmp(&b.0));
        if let Some((_, e)) = best {
            return Ok(Some(e.version.clone()));
        }
    }
    Ok(None)
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

    fn now() -> Timestamp {
        Timestamp::from_second(1_000).unwrap()
    }

    #[test]
    fn classification_table() {
        use VersionClassification as C;
        let offered = [
            v("1.17.0", None, Some(C::Preview)),
            v("1.16.1", None, Some(C::Supported)),
            v("1.16.0", Some(2_000), Some(C::Deprecated)),
            v("1.15.4", None, None),
            v("1.14.9", Some(1_000), Some(C::Supported)),
            v("1.13.12", Some(500), Some(C::Deprecated)),
        ];
        let cases = [
            ("1.17.0", Ok(VersionState::Preview)),
            ("1.16.1", Ok(VersionState::Supported)),
            ("v1.16.1", Ok(VersionState::Supported)),
            ("1.16.0", Ok(VersionState::Deprecated)),
            ("1.15.4", Ok(VersionState::Supported)),
            // Expiry wins over the classification, and the boundary itself counts as expired.
            ("1.14.9", Ok(VersionState::Expired)),
            ("1.13.12", Ok(VersionState::Expired)),
            ("1.12.0", Err(VersionError::NotOffered("1.12.0".into()))),
        ];
        for (version, want) in cases {
            assert_eq!(classify(&offered, version, now()), want, "{version}");
        }
        assert!(matches!(classify(&offered, "latest", now()), Err(VersionError::Invalid { .. })));
    }

    #[test]
    fn forced_update_prefers_same_minor_then_next_minors() {
        let offered = [
            v("1.15.1", Some(10), None),
            v("1.15.2", Some(10), None),
            v("1.16.0", Some(10), None),
            v("1.16.3", None, None),
            v("1.16.2", None, None),
            v("1.17.0", None, None),
        ];
        // Same minor has nothing newer and unexpired; next minor's latest patch wins.
        assert_eq!(forced_update_target(&offered, "1.15.1", now()).unwrap(), Some("1.16.3".into()));
        assert_eq!(forced_update_target(&offered, "1.16.0", now()).unwrap(), Some("1.16.3".into()));
        assert_eq!(forced_update_target(&offered, "1.16.3", now()).unwrap(), Some("1.17.0".into()));
        assert_eq!(forced_update_target(&offered, "1.17.0", now()).unwrap(), None);
    }
}
