//! The scheduling decision, as a pure function: given a shoot, every seed, how many shoots each
//! seed holds, the shoot's profile spec and ExposureClass (found by [`references::resolve`])
//! and the configuration, [`decide`] returns the seed to place the shoot on, or a [`Refusal`]
//! that says why no seed fits.
//!
//! Each seed runs through the filters of [`filters`] (and the region rule of [`strategy`]) in a
//! fixed order; the first failing filter is recorded as the seed's [`DropReason`]. The seeds
//! that pass are ranked by [`strategy::Ranker`]. One pass over the seeds, no allocation per
//! passing seed, and the shoot-side work (CIDR parsing, selector compilation) done once.
//!
//! The network filter and its CIDR handling are in [`networks`]; what a refusal says is in
//! [`refusal`] ([`Refusal`] and the per-seed [`DropReason`]), with the network names both carry
//! in the leaf [`network_set`], so the filters depend on the refusal and never the reverse.

pub mod filters;
pub mod network_set;
pub mod networks;
pub mod references;
pub mod refusal;
pub mod strategy;

#[cfg(any(test, feature = "testing"))]
pub mod fixtures;

pub use network_set::{NetworkKind, NetworkSet};
pub use refusal::{DropReason, Refusal};

use crate::config::Config;
use api::core::cloudprofile::CloudProfileSpec;
use api::core::{ExposureClass, Seed, Shoot};
use filters::{NetworkMemo, ShootView};
use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;

/// The name of the seed a shoot was placed on.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeedName(String);

impl SeedName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for SeedName {
    fn from(name: &str) -> Self {
        Self(name.to_string())
    }
}

impl fmt::Display for SeedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How many shoots each seed holds: every shoot whose `spec.seedName` is the seed, plus every
/// shoot migrating away from it (`status.seedName` is the seed, `spec.seedName` another).
pub trait ShootCounter {
    fn shoots_on(&self, seed: &str) -> u32;
}

impl<S: BuildHasher> ShootCounter for HashMap<String, u32, S> {
    fn shoots_on(&self, seed: &str) -> u32 {
        self.get(seed).copied().unwrap_or(0)
    }
}

impl ShootCounter for BTreeMap<String, u32> {
    fn shoots_on(&self, seed: &str) -> u32 {
        self.get(seed).copied().unwrap_or(0)
    }
}

/// Chooses the seed for `shoot`, or explains why none fits. `profile` is the spec the shoot
/// uses (a NamespacedCloudProfile's merged spec included), `exposure_class` the class it names.
pub fn decide<S: Borrow<Seed>>(
    shoot: &Shoot,
    seeds: &[S],
    counts: &(impl ShootCounter + ?Sized),
    profile: &CloudProfileSpec,
    exposure_class: Option<&ExposureClass>,
    config: &Config,
) -> Result<SeedName, Refusal> {
    let view = ShootView::new(shoot, profile, exposure_class)?;
    let mut ranker = strategy::Ranker::new(&view, config);
    let mut drops: HashMap<DropReason, usize> = HashMap::new();
    let mut memo = NetworkMemo::default();
    for seed in seeds {
        let seed = seed.borrow();
        match check(seed, &view, counts, config, &mut memo) {
            Ok(shoots) => ranker.offer(seed, shoots),
            Err(reason) => *drops.entry(reason).or_default() += 1,
        }
    }
    ranker.best().map(SeedName::from).ok_or_else(|| Refusal::no_fit(seeds.len(), drops))
}

/// Runs one seed through every filter; `Ok` carries the seed's shoot count for ranking.
pub fn check<'a>(
    seed: &'a Seed,
    shoot: &ShootView<'_>,
    counts: &(impl ShootCounter + ?Sized),
    config: &Config,
    memo: &mut NetworkMemo<'a>,
) -> Result<u32, DropReason> {
    filters::not_deleting(seed)?;
    filters::visible(seed)?;
    filters::gardenlet_ready(seed)?;
    filters::backup_ready(seed)?;
    filters::cloud_profile_selects(seed, shoot.profile_selector.as_ref())?;
    filters::shoot_selects(seed, shoot.shoot_selector.as_ref())?;
    filters::exposure_class_selects(seed, shoot.exposure_class_selector.as_ref())?;
    filters::provider_type(seed, &shoot.provider_types)?;
    strategy::region(seed, shoot, config.strategy)?;
    memo.networks_disjoint(seed, &shoot.networks)?;
    filters::taints_tolerated(seed, &shoot.tolerations)?;
    let shoots = counts.shoots_on(seed.metadata.name.as_deref().unwrap_or_default());
    filters::capacity(seed, shoots)?;
    Ok(shoots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Strategy;
    use api::common::ConditionStatus;
    use api::core::SeedSelector;
    use api::core::shoot::ShootPurpose;
    use fixtures::*;

    fn counts(pairs: &[(&str, u32)]) -> HashMap<String, u32> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn the_issue_example_refusal() {
        let protected = "seed.gardener.cloud/protected";
        let seeds = vec![
            in_region(seed("us-1"), "us-east-1"),
            in_region(seed("us-2"), "us-east-1"),
            in_region(seed("ap-1"), "ap-south-1"),
            tainted(seed("eu-p1"), protected, None),
            tainted(seed("eu-p2"), protected, None),
            allocatable(seed("eu-full"), "50"),
            ready(seed("eu-down"), ConditionStatus::False),
        ];
        let err = decide(&shoot("s"), &seeds, &counts(&[("eu-full", 50)]), &profile().spec, None, &Config::default())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "0/7 seeds fit: 3 other region, 2 tainted (seed.gardener.cloud/protected), 1 full (allocatable shoots 50), 1 not ready"
        );
    }

    #[test]
    fn first_failing_filter_is_the_reason() {
        // A seed that is deleting, in another region and full counts once, as deleting.
        let s = allocatable(in_region(deleting(seed("x")), "us-east-1"), "0");
        let err = decide(&shoot("s"), &[s], &counts(&[]), &profile().spec, None, &Config::default()).unwrap_err();
        assert_eq!(err.to_string(), "0/1 seeds fit: 1 being deleted");
    }

    #[test]
    fn decisions() {
        let same = Config::default();
        let minimal = Config::from_yaml(
            "strategy: MinimalDistance\nregionDistances: {eu-west-1: {eu-central-1: 10, us-east-1: 80}}",
        )
        .unwrap();
        let testing = {
            let mut s = shoot("t");
            s.spec.purpose = Some(ShootPurpose::Testing);
            s
        };
        let selecting = |labels: &str| {
            let mut s = shoot("sel");
            s.spec.seed_selector = Some(serde_yaml::from_str(labels).unwrap());
            s
        };
        let tolerating = {
            let mut s = shoot("tol");
            s.spec.tolerations = vec![api::core::Toleration { key: "dedicated".into(), value: None }];
            s
        };
        type Case<'c> = (&'c str, Shoot, Vec<Seed>, Vec<(&'c str, u32)>, &'c Config, Result<&'c str, &'c str>);
        let cases: Vec<Case<'_>> = vec![
            ("single healthy seed", shoot("s"), vec![seed("a")], vec![], &same, Ok("a")),
            ("fewest shoots", shoot("s"), vec![seed("a"), seed("b")], vec![("a", 5), ("b", 2)], &same, Ok("b")),
            ("tie: first name", shoot("s"), vec![seed("b"), seed("a")], vec![("a", 1), ("b", 1)], &same, Ok("a")),
            (
                "same region only",
                shoot("s"),
                vec![in_region(seed("a"), "us-east-1"), seed("z")],
                vec![("z", 40)],
                &same,
                Ok("z"),
            ),
            (
                "testing ignores region",
                testing.clone(),
                vec![in_region(seed("a"), "us-east-1"), seed("z")],
                vec![("z", 40)],
                &same,
                Ok("a"),
            ),
            (
                "testing still needs the provider type",
                testing,
                vec![of_type(in_region(seed("a"), "us-east-1"), "aws")],
                vec![],
                &same,
                Err("0/1 seeds fit: 1 other provider type"),
            ),
            (
                "minimal distance: nearest configured region",
                shoot("s"),
                vec![in_region(seed("us"), "us-east-1"), in_region(seed("central"), "eu-central-1")],
                vec![("central", 90)],
                &minimal,
                Ok("central"),
            ),
            (
                "minimal distance: own region first",
                shoot("s"),
                vec![in_region(seed("central"), "eu-central-1"), seed("home")],
                vec![("home", 90)],
                &minimal,
                Ok("home"),
            ),
            (
                "minimal distance: unconfigured regions fall back to name similarity",
                shoot("s"),
                vec![in_region(seed("ap"), "ap-south-1"), in_region(seed("west2"), "eu-west-2")],
                vec![],
                &minimal,
                Ok("west2"),
            ),
            (
                "minimal distance: full nearest seed is skipped",
                shoot("s"),
                vec![allocatable(seed("home"), "1"), in_region(seed("us"), "us-east-1")],
                vec![("home", 1)],
                &minimal,
                Ok("us"),
            ),
            (
                "shoot selector",
                selecting("matchLabels: {tier: gold}"),
                vec![seed("a"), labelled(seed("b"), &[("tier", "gold")])],
                vec![("b", 9)],
                &same,
                Ok("b"),
            ),
            ("taint tolerated", tolerating, vec![tainted(seed("a"), "dedicated", Some("x"))], vec![], &same, Ok("a")),
            (
                "capacity counts placed shoots",
                shoot("s"),
                vec![allocatable(seed("a"), "2"), allocatable(seed("b"), "2")],
                vec![("a", 2), ("b", 2)],
                &same,
                Err("0/2 seeds fit: 2 full (allocatable shoots 2)"),
            ),
            ("no seeds", shoot("s"), vec![], vec![], &same, Err("0/0 seeds fit: no seeds are registered")),
        ];
        for (name, s, seeds, placed, config, want) in cases {
            let got = decide(&s, &seeds, &counts(&placed), &profile().spec, None, config);
            match want {
                Ok(seed) => assert_eq!(got.as_ref().map(SeedName::as_str), Ok(seed), "{name}"),
                Err(text) => assert_eq!(got.unwrap_err().to_string(), text, "{name}"),
            }
        }
        assert_eq!(same.strategy, Strategy::SameRegion);
    }

    #[test]
    fn cloud_profile_selector_and_provider_types() {
        let mut p = profile();
        p.spec.seed_selector = Some(SeedSelector {
            label_selector: serde_yaml::from_str("matchLabels: {env: prod}").unwrap(),
            provider_types: vec!["*".into()],
        });
        let seeds = vec![
            of_type(labelled(seed("aws-prod"), &[("env", "prod")]), "aws"),
            labelled(seed("local-dev"), &[("env", "dev")]),
        ];
        let got = decide(&shoot("s"), &seeds, &counts(&[]), &p.spec, None, &Config::default());
        assert_eq!(got.unwrap().as_str(), "aws-prod");

        let mut narrow = shoot("s");
        narrow.spec.seed_selector = Some(SeedSelector { provider_types: vec!["local".into()], ..Default::default() });
        let err = decide(&narrow, &seeds, &counts(&[]), &p.spec, None, &Config::default()).unwrap_err();
        assert_eq!(err.to_string(), "0/2 seeds fit: 1 not selected by the CloudProfile, 1 other provider type");
    }

    #[test]
    fn exposure_class_narrows_seeds_and_adds_tolerations() {
        use api::core::exposureclass::{ExposureClassFields, ExposureClassScheduling};
        let class = |scheduling: &str| {
            let scheduling: ExposureClassScheduling = serde_yaml::from_str(scheduling).unwrap();
            ExposureClass::new("internet", ExposureClassFields { handler: "h".into(), scheduling: Some(scheduling) })
        };
        let selecting = class("seedSelector: {matchLabels: {exposure: internet}}");
        let tolerating = class("tolerations: [{key: dedicated, value: internet}]");
        let both = class("seedSelector: {matchLabels: {exposure: internet}}\ntolerations: [{key: dedicated}]");
        let plain = seed("plain");
        let offering = labelled(seed("offering"), &[("exposure", "internet")]);
        let dedicated = tainted(seed("dedicated"), "dedicated", Some("internet"));
        let dedicated_offering =
            tainted(labelled(seed("ded-offering"), &[("exposure", "internet")]), "dedicated", None);
        let gold_shoot = {
            let mut s = shoot("s");
            s.spec.seed_selector = Some(serde_yaml::from_str("matchLabels: {tier: gold}").unwrap());
            s
        };
        let gold_offering = labelled(seed("gold-offering"), &[("exposure", "internet"), ("tier", "gold")]);
        type Case<'c> = (&'c str, Shoot, Option<&'c ExposureClass>, Vec<Seed>, Result<&'c str, &'c str>);
        let cases: Vec<Case<'_>> = vec![
            ("no class: any seed", shoot("s"), None, vec![plain.clone()], Ok("plain")),
            ("class selector", shoot("s"), Some(&selecting), vec![plain.clone(), offering.clone()], Ok("offering")),
            (
                "class selector refuses",
                shoot("s"),
                Some(&selecting),
                vec![plain.clone()],
                Err("0/1 seeds fit: 1 not selected by the ExposureClass"),
            ),
            (
                "ANDed with the shoot's selector",
                gold_shoot.clone(),
                Some(&selecting),
                vec![offering.clone(), labelled(seed("gold"), &[("tier", "gold")]), gold_offering.clone()],
                Ok("gold-offering"),
            ),
            (
                "the shoot's selector is checked first",
                gold_shoot,
                Some(&selecting),
                vec![offering.clone()],
                Err("0/1 seeds fit: 1 not selected by the shoot"),
            ),
            (
                "without the class the taint is not tolerated",
                shoot("s"),
                None,
                vec![dedicated.clone()],
                Err("0/1 seeds fit: 1 tainted (dedicated)"),
            ),
            ("class tolerations are added", shoot("s"), Some(&tolerating), vec![dedicated.clone()], Ok("dedicated")),
            (
                "selector and tolerations together",
                shoot("s"),
                Some(&both),
                vec![plain, dedicated, dedicated_offering],
                Ok("ded-offering"),
            ),
        ];
        for (name, s, class, seeds, want) in cases {
            let got = decide(&s, &seeds, &counts(&[]), &profile().spec, class, &Config::default());
            match want {
                Ok(seed) => assert_eq!(got.as_ref().map(SeedName::as_str), Ok(seed), "{name}"),
                Err(text) => assert_eq!(got.unwrap_err().to_string(), text, "{name}"),
            }
        }
        let bad = class("seedSelector: {matchExpressions: [{key: a, operator: Near, values: [x]}]}");
        let err = decide(&shoot("s"), &[seed("a")], &counts(&[]), &profile().spec, Some(&bad), &Config::default());
        assert!(err.unwrap_err().to_string().starts_with("the ExposureClass seed selector is invalid"));
    }

    #[test]
    fn invalid_shoot_is_refused_before_looking_at_seeds() {
        let mut s = shoot("s");
        s.spec.networking.get_or_insert_default().pods = Some("not-a-cidr".into());
        let err = decide(&s, &[seed("a")], &counts(&[]), &profile().spec, None, &Config::default()).unwrap_err();
        assert_eq!(err, Refusal::InvalidShootNetwork { field: "pods", value: "not-a-cidr".into() });
    }

    #[test]
    fn accepts_shared_seeds() {
        let seeds = vec![std::sync::Arc::new(seed("a"))];
        let got = decide(&shoot("s"), &seeds, &BTreeMap::new(), &profile().spec, None, &Config::default());
        assert_eq!(got.unwrap(), SeedName::from("a"));
    }
}
