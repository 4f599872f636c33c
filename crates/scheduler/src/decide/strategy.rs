//! The strategies: which of the seeds that passed every filter is best.
//!
//! * `SameRegion` (default): only seeds in the shoot's region are candidates; the others are
//!   dropped as "other region" by [`region`].
//! * `MinimalDistance`: every seed is a candidate, and the closest region wins. Distances come
//!   from the configuration; a pair without a configured distance is
//!   `fallbackRegionDistance` plus the edit distance of the two names (see [`distance`]).
//! * Shoots of purpose `testing` ignore the region under either strategy.
//!
//! Among equally good candidates the seed with the fewest shoots wins, then the seed whose name
//! sorts first, so the same inputs always give the same seed.

use super::filters::ShootView;
use super::refusal::DropReason;
use crate::config::{Config, Strategy};
use api::core::Seed;
use std::collections::HashMap;

/// Under `SameRegion`, a non-testing shoot only goes to seeds in its own region.
pub fn region(seed: &Seed, shoot: &ShootView<'_>, strategy: Strategy) -> Result<(), DropReason> {
    if shoot.testing || strategy != Strategy::SameRegion || seed.spec.provider.region == shoot.region {
        Ok(())
    } else {
        Err(DropReason::Region)
    }
}

/// The distance between two regions: 0 for the same region, the configured distance when one
/// is configured (in either direction), otherwise `fallbackRegionDistance` plus the edit
/// distance of the names.
pub fn distance(config: &Config, from: &str, to: &str) -> u64 {
    if from == to {
        return 0;
    }
    match config.configured_distance(from, to) {
        Some(d) => u64::from(d),
        None => u64::from(config.fallback_region_distance) + levenshtein(from, to) as u64,
    }
}

/// The number of single-character insertions, deletions and substitutions between two names.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// Keeps the best candidate seen so far: lowest (distance, shoots, name).
#[derive(Debug)]
pub struct Ranker<'a> {
    config: &'a Config,
    shoot_region: &'a str,
    by_distance: bool,
    distances: HashMap<&'a str, u64>,
    best: Option<(u64, u32, &'a str)>,
}

impl<'a> Ranker<'a> {
    pub fn new(shoot: &ShootView<'a>, config: &'a Config) -> Self {
        Self {
            config,
            shoot_region: shoot.region,
            by_distance: !shoot.testing && config.strategy == Strategy::MinimalDistance,
            distances: HashMap::new(),
            best: None,
        }
    }

    /// Considers a seed that passed every filter and currently holds `shoots` shoots.
    pub fn offer(&mut self, seed: &'a Seed, shoots: u32) {
        let name = seed.metadata.name.as_deref().unwrap_or_default();
        let d = if self.by_distance {
            let (config, from) = (self.config, self.shoot_region);
            let to = seed.spec.provider.region.as_str();
            *self.distances.entry(to).or_insert_with(|| distance(config, from, to))
        } else {
            0
        };
        let key = (d, shoots, name);
        if self.best.is_none_or(|best| key < best) {
            self.best = Some(key);
        }
    }

    /// The winning seed's name.
    pub fn best(&self) -> Option<&'a str> {
        self.best.map(|(_, _, name)| name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::*;
    use api::core::CloudProfile;

    #[test]
    fn edit_distance() {
        let cases = [
            ("", "", 0),
            ("eu-west-1", "eu-west-1", 0),
            ("eu-west-1", "eu-west-2", 1),
            ("eu-west-1", "eu-central-1", 5),
            ("kitten", "sitting", 3),
            ("", "abc", 3),
        ];
        for (a, b, want) in cases {
            assert_eq!(levenshtein(a, b), want, "{a} -> {b}");
            assert_eq!(levenshtein(b, a), want, "{b} -> {a}");
        }
    }

    #[test]
    fn distances_use_configuration_then_fallback() {
        let config =
            Config::from_yaml("regionDistances: {eu-west-1: {eu-central-1: 10}}\nfallbackRegionDistance: 100").unwrap();
        let cases = [
            ("eu-west-1", "eu-west-1", 0),
            ("eu-west-1", "eu-central-1", 10),
            ("eu-central-1", "eu-west-1", 10),
            ("eu-west-1", "eu-west-2", 101),
            ("eu-west-1", "us-east-1", 100 + levenshtein("eu-west-1", "us-east-1") as u64),
        ];
        for (from, to, want) in cases {
            assert_eq!(distance(&config, from, to), want, "{from} -> {to}");
        }
    }

    #[test]
    fn region_filter_per_strategy_and_purpose() {
        let profile = CloudProfile::default();
        let s = shoot("s");
        let mut t = shoot("t");
        t.spec.purpose = Some(api::core::shoot::ShootPurpose::Testing);
        let (view, testing) =
            (ShootView::new(&s, &profile.spec, None).unwrap(), ShootView::new(&t, &profile.spec, None).unwrap());
        let far = in_region(seed("far"), "us-east-1");
        let near = seed("near");
        assert_eq!(region(&near, &view, Strategy::SameRegion), Ok(()));
        assert_eq!(region(&far, &view, Strategy::SameRegion), Err(DropReason::Region));
        assert_eq!(region(&far, &view, Strategy::MinimalDistance), Ok(()));
        assert_eq!(region(&far, &testing, Strategy::SameRegion), Ok(()));
    }

    #[test]
    fn ranking() {
        let profile = CloudProfile::default();
        let s = shoot("s"); // region eu-west-1
        let view = ShootView::new(&s, &profile.spec, None).unwrap();
        let same = Config::default();
        let minimal =
            Config::from_yaml("strategy: MinimalDistance\nregionDistances: {eu-west-1: {eu-central-1: 5}}").unwrap();
        let seeds = [
            seed("b-home"),
            seed("a-home"),
            in_region(seed("c-central"), "eu-central-1"),
            in_region(seed("d-west2"), "eu-west-2"),
        ];
        type Case<'c> = (&'c str, &'c Config, Vec<(usize, u32)>, &'c str);
        let cases: Vec<Case<'_>> = vec![
            ("fewest shoots wins", &same, vec![(0, 3), (1, 4)], "b-home"),
            ("equal shoots: name order", &same, vec![(0, 3), (1, 3)], "a-home"),
            ("distance before shoots", &minimal, vec![(0, 40), (2, 0), (3, 0)], "b-home"),
            ("configured distance beats fallback", &minimal, vec![(2, 9), (3, 0)], "c-central"),
            ("nothing offered", &same, vec![], ""),
        ];
        for (name, config, offers, want) in cases {
            let mut r = Ranker::new(&view, config);
            for (i, shoots) in offers {
                r.offer(&seeds[i], shoots);
            }
            assert_eq!(r.best().unwrap_or_default(), want, "{name}");
        }
    }
}
