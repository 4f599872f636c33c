//! Why a shoot could not be scheduled, in words a user can act on, and why each seed was not
//! chosen ([`DropReason`], the first filter of [`super::filters`] it failed). Either the shoot
//! itself is unusable (a malformed CIDR or selector, a missing or not yet merged profile, a
//! missing ExposureClass), or no seed passed the filters; then every seed is accounted for
//! under the first filter it failed:
//! "0/7 seeds fit: 3 other region, 2 tainted (seed.gardener.cloud/protected), 1 full (allocatable
//! shoots 50), 1 not ready". Groups are ordered by size, then alphabetically, so the text is
//! stable for the same situation and the most common obstacle comes first.

use super::network_set::NetworkSet;
use api::helpers::cloudprofile_ref::ProfileRefError;
use std::cmp::Reverse;
use std::collections::HashMap;
use std::fmt;

/// Why a seed was not chosen. The `Display` text is the label the refusal counts under, so
/// seeds dropped for the same reason are grouped ("2 tainted (seed.gardener.cloud/protected)").
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// The seed is being deleted.
    Deleting,
    /// The seed is hidden from scheduling (`settings.scheduling.visible: false`, or the legacy
    /// `seed.gardener.cloud/invisible` taint).
    Invisible,
    /// `GardenletReady` is not `True`.
    NotReady,
    /// The seed has a backup configured and `BackupBucketsReady` is not `True`.
    BackupNotReady,
    /// The CloudProfile's seed selector does not match the seed's labels.
    CloudProfileSelector,
    /// The shoot's seed selector does not match the seed's labels.
    ShootSelector,
    /// The seed selector of the shoot's ExposureClass does not match the seed's labels.
    ExposureClassSelector,
    /// The seed's provider type is not allowed for the shoot.
    ProviderType,
    /// The seed is in another region (strategy `SameRegion`).
    Region,
    /// One of the seed's own network CIDRs cannot be parsed.
    InvalidSeedNetworks,
    /// The shoot leaves these networks to the seed's defaults, and the seed has none.
    NoDefaultNetworks(NetworkSet),
    /// These shoot networks overlap a network of the seed.
    NetworksOverlap(NetworkSet),
    /// Taint keys the shoot does not tolerate, comma-separated.
    Tainted(String),
    /// The seed already holds as many shoots as it allows.
    Full { allocatable: u64 },
    /// `status.allocatable.shoots` (or `capacity.shoots`) cannot be read as a number.
    UnreadableAllocatable(String),
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Deleting => f.write_str("being deleted"),
            Self::Invisible => f.write_str("invisible"),
            Self::NotReady => f.write_str("not ready"),
            Self::BackupNotReady => f.write_str("backup not ready"),
            Self::CloudProfileSelector => f.write_str("not selected by the CloudProfile"),
            Self::ShootSelector => f.write_str("not selected by the shoot"),
            Self::ExposureClassSelector => f.write_str("not selected by the ExposureClass"),
            Self::ProviderType => f.write_str("other provider type"),
            Self::Region => f.write_str("other region"),
            Self::InvalidSeedNetworks => f.write_str("invalid seed networks"),
            Self::NoDefaultNetworks(n) => write!(f, "no default shoot networks ({n})"),
            Self::NetworksOverlap(n) => write!(f, "networks overlap ({n})"),
            Self::Tainted(keys) => write!(f, "tainted ({keys})"),
            Self::Full { allocatable } => write!(f, "full (allocatable shoots {allocatable})"),
            Self::UnreadableAllocatable(q) => write!(f, "unreadable allocatable shoots ({q:?})"),
        }
    }
}

/// A refused scheduling decision.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No seed passed every filter.
    #[error("{}", NoFit { seeds: *seeds, drops })]
    NoSeedFits {
        /// How many seeds were considered.
        seeds: usize,
        /// Seeds dropped per reason, in display order.
        drops: Vec<(DropReason, usize)>,
    },
    #[error("spec.networking.{field} {value:?} is not a valid CIDR")]
    InvalidShootNetwork { field: &'static str, value: String },
    #[error("the {owner} seed selector is invalid: {message}")]
    InvalidSeedSelector { owner: &'static str, message: String },
    /// The shoot's profile cannot be determined (none named, unknown kind, missing, a
    /// NamespacedCloudProfile whose merged spec is not computed yet).
    #[error(transparent)]
    Profile(#[from] ProfileRefError),
    #[error("ExposureClass {0:?} does not exist")]
    ExposureClassNotFound(String),
    /// An object the shoot names is in the cache but cannot be read as its kind; `what` names
    /// it (`CloudProfile "local"`, `ExposureClass "internet"`).
    #[error("{what} cannot be read: {error}")]
    UnreadableReference { what: String, error: String },
}

impl Refusal {
    /// A refusal for `seeds` considered seeds with the given per-reason counts.
    pub fn no_fit(seeds: usize, drops: HashMap<DropReason, usize>) -> Self {
        let mut drops: Vec<(String, DropReason, usize)> =
            drops.into_iter().map(|(r, n)| (r.to_string(), r, n)).collect();
        drops.sort_by(|a, b| (Reverse(a.2), &a.0).cmp(&(Reverse(b.2), &b.0)));
        Self::NoSeedFits { seeds, drops: drops.into_iter().map(|(_, r, n)| (r, n)).collect() }
    }

    /// A stable PascalCase name for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NoSeedFits { .. } => "NoSeedFits",
            Self::InvalidShootNetwork { .. } => "InvalidShootNetwork",
            Self::InvalidSeedSelector { .. } => "InvalidSeedSelector",
            Self::Profile(e) => e.reason(),
            Self::ExposureClassNotFound(_) => "ExposureClassNotFound",
            Self::UnreadableReference { .. } => "UnreadableReference",
        }
    }

    /// How many seeds were dropped for `reason` (0 when the refusal is not about seeds).
    pub fn dropped_for(&self, reason: &DropReason) -> usize {
        match self {
            Self::NoSeedFits { drops, .. } => drops.iter().find(|(r, _)| r == reason).map_or(0, |(_, n)| *n),
            _ => 0,
        }
    }
}

struct NoFit<'a> {
    seeds: usize,
    drops: &'a [(DropReason, usize)],
}

impl fmt::Display for NoFit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0/{} seeds fit: ", self.seeds)?;
        if self.seeds == 0 {
            return f.write_str("no seeds are registered");
        }
        for (i, (reason, count)) in self.drops.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{count} {reason}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_count_then_label() {
        let drops = HashMap::from([
            (DropReason::NotReady, 1),
            (DropReason::Full { allocatable: 50 }, 1),
            (DropReason::Tainted("seed.gardener.cloud/protected".into()), 2),
            (DropReason::Region, 3),
        ]);
        let r = Refusal::no_fit(7, drops);
        assert_eq!(
            r.to_string(),
            "0/7 seeds fit: 3 other region, 2 tainted (seed.gardener.cloud/protected), 1 full (allocatable shoots 50), 1 not ready"
        );
        assert_eq!(r.dropped_for(&DropReason::Region), 3);
        assert_eq!(r.dropped_for(&DropReason::Deleting), 0);
        assert_eq!(r.reason(), "NoSeedFits");
    }

    #[test]
    fn no_seeds_at_all() {
        assert_eq!(Refusal::no_fit(0, HashMap::new()).to_string(), "0/0 seeds fit: no seeds are registered");
    }

    #[test]
    fn shoot_level_refusals() {
        let cases = [
            (
                Refusal::from(ProfileRefError::NoProfile),
                "the shoot names no CloudProfile (spec.cloudProfileName or spec.cloudProfile)",
                "NoCloudProfile",
            ),
            (
                Refusal::from(ProfileRefError::CloudProfileNotFound("local".into())),
                "CloudProfile \"local\" does not exist",
                "CloudProfileNotFound",
            ),
            (
                Refusal::from(ProfileRefError::NotComputed { namespace: "garden-p".into(), name: "p".into() }),
                "NamespacedCloudProfile \"garden-p/p\" has no merged spec yet (status.cloudProfileSpec is not computed)",
                "NamespacedCloudProfileNotComputed",
            ),
            (
                Refusal::ExposureClassNotFound("internet".into()),
                "ExposureClass \"internet\" does not exist",
                "ExposureClassNotFound",
            ),
        ];
        for (r, text, reason) in cases {
            assert_eq!(r.to_string(), text);
            assert_eq!(r.reason(), reason);
        }
    }
}
