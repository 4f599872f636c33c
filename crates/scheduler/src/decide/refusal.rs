//! Why a shoot could not be scheduled, in words a user can act on. Either the shoot itself is
//! unusable (a malformed CIDR or selector, a missing CloudProfile), or no seed passed the
//! filters; then every seed is accounted for under the first filter it failed:
//! "0/7 seeds fit: 3 other region, 2 tainted (seed.gardener.cloud/protected), 1 full (allocatable
//! shoots 50), 1 not ready". Groups are ordered by size, then alphabetically, so the text is
//! stable for the same situation and the most common obstacle comes first.

use super::filters::DropReason;
use std::cmp::Reverse;
use std::collections::HashMap;
use std::fmt;

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
    #[error("the shoot names no CloudProfile (spec.cloudProfileName or spec.cloudProfile)")]
    NoCloudProfile,
    #[error("CloudProfile {0:?} does not exist")]
    CloudProfileNotFound(String),
    #[error("{kind} {name:?} cannot be used for scheduling; only CloudProfile is supported")]
    UnsupportedCloudProfileKind { kind: String, name: String },
    #[error("CloudProfile {name:?} cannot be read: {error}")]
    UnreadableCloudProfile { name: String, error: String },
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
            Self::NoCloudProfile => "NoCloudProfile",
            Self::CloudProfileNotFound(_) => "CloudProfileNotFound",
            Self::UnsupportedCloudProfileKind { .. } => "UnsupportedCloudProfileKind",
            Self::UnreadableCloudProfile { .. } => "UnreadableCloudProfile",
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
            (Refusal::NoCloudProfile, "the shoot names no CloudProfile (spec.cloudProfileName or spec.cloudProfile)"),
            (Refusal::CloudProfileNotFound("local".into()), "CloudProfile \"local\" does not exist"),
            (
                Refusal::UnsupportedCloudProfileKind { kind: "NamespacedCloudProfile".into(), name: "p".into() },
                "NamespacedCloudProfile \"p\" cannot be used for scheduling; only CloudProfile is supported",
            ),
        ];
        for (r, text) in cases {
            assert_eq!(r.to_string(), text);
        }
    }
}
