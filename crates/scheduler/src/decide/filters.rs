//! The per-seed filters, one function each, in the order [`super::decide`] applies them. A seed
//! is dropped for the first filter it fails, and that filter's [`DropReason`] (defined beside
//! the [`Refusal`] that counts it) is what the refusal counts; so the order goes from "this seed cannot take any shoot" (deleting,
//! invisible, not ready) through "this seed is not meant for this shoot" (selectors, provider,
//! region) to "this seed cannot take this shoot right now" (networks, taints, capacity).
//!
//! Everything about the shoot that does not depend on the seed is prepared once per decision
//! in [`ShootView`], so that each filter is a few comparisons. The shoot's ExposureClass, when it
//! names one, narrows the seeds like a third selector (its `scheduling.seedSelector`, ANDed with
//! the others) and widens the shoot's tolerations (its `scheduling.tolerations` are added), as
//! Gardener's ExposureClass admission merges them into the shoot. The network filter lives in
//! [`super::networks`] with the CIDR handling it needs.

pub use super::networks::{NetworkMemo, ShootNetworks, networks_disjoint};
use super::refusal::{DropReason, Refusal};
use api::common::ConditionStatus;
use api::core::cloudprofile::CloudProfileSpec;
use api::core::seed::{RESOURCE_SHOOTS, TAINT_INVISIBLE};
use api::core::{ExposureClass, SeedSelector, Shoot, Toleration};
use api::core::{Seed, shoot::ShootPurpose};
use api::helpers::conditions::get_condition;
use api::helpers::constants::conditions::{BACKUP_BUCKETS_READY, GARDENLET_READY};
use kube::core::{Selector, SelectorExt};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Which seed provider types a shoot may use: a type every seed selector that lists types
/// (CloudProfile, shoot, ExposureClass) allows (`*` for any); when none lists types, only the
/// shoot's own type.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderTypes<'a> {
    shoot_type: &'a str,
    lists: Vec<&'a [String]>,
}

impl<'a> ProviderTypes<'a> {
    pub fn new(shoot_type: &'a str, selectors: impl IntoIterator<Item = Option<&'a SeedSelector>>) -> Self {
        let lists =
            selectors.into_iter().flatten().map(|s| s.provider_types.as_slice()).filter(|l| !l.is_empty()).collect();
        Self { shoot_type, lists }
    }

    pub fn admits(&self, seed_type: &str) -> bool {
        if self.lists.is_empty() {
            return seed_type == self.shoot_type;
        }
        self.lists.iter().all(|l| l.iter().any(|t| t == "*" || t == seed_type))
    }
}

/// Compiles the label part of a seed selector; `None` when it selects every seed.
pub fn compile_selector(selector: Option<&SeedSelector>, owner: &'static str) -> Result<Option<Selector>, Refusal> {
    let Some(s) = selector else { return Ok(None) };
    let compiled = Selector::try_from(s.label_selector.clone())
        .map_err(|e| Refusal::InvalidSeedSelector { owner, message: e.to_string() })?;
    Ok((!compiled.selects_all()).then_some(compiled))
}

/// Everything about the shoot the filters need, prepared once per decision.
#[derive(Debug)]
pub struct ShootView<'a> {
    pub name: &'a str,
    pub provider_type: &'a str,
    pub region: &'a str,
    /// Shoots of purpose `testing` may go to any region.
    pub testing: bool,
    pub networks: ShootNetworks,
    /// The shoot's tolerations, plus its ExposureClass's.
    pub tolerations: Cow<'a, [Toleration]>,
    pub profile_selector: Option<Selector>,
    pub shoot_selector: Option<Selector>,
    pub exposure_class_selector: Option<Selector>,
    pub provider_types: ProviderTypes<'a>,
}

impl<'a> ShootView<'a> {
    /// `profile` is the spec the shoot uses (a NamespacedCloudProfile's merged spec included);
    /// `exposure_class` the class it names, if any.
    pub fn new(
        shoot: &'a Shoot,
        profile: &'a CloudProfileSpec,
        exposure_class: Option<&'a ExposureClass>,
    ) -> Result<Self, Refusal> {
        let spec = &shoot.spec;
        let scheduling = exposure_class.and_then(|c| c.spec.scheduling.as_ref());
        let class_selector = scheduling.and_then(|s| s.seed_selector.as_ref());
        let tolerations = match scheduling.map(|s| s.tolerations.as_slice()) {
            None | Some([]) => Cow::Borrowed(spec.tolerations.as_slice()),
            Some(added) => Cow::Owned(spec.tolerations.iter().chain(added).cloned().collect()),
        };
        Ok(Self {
            name: shoot.metadata.name.as_deref().unwrap_or_default(),
            provider_type: &spec.provider.type_,
            region: &spec.region,
            testing: spec.purpose == Some(ShootPurpose::Testing),
            networks: ShootNetworks::of(shoot)?,
            tolerations,
            profile_selector: compile_selector(profile.seed_selector.as_ref(), "CloudProfile")?,
            shoot_selector: compile_selector(spec.seed_selector.as_ref(), "shoot")?,
            exposure_class_selector: compile_selector(class_selector, "ExposureClass")?,
            provider_types: ProviderTypes::new(
                &spec.provider.type_,
                [profile.seed_selector.as_ref(), spec.seed_selector.as_ref(), class_selector],
            ),
        })
    }
}

fn condition_true(seed: &Seed, type_: &str) -> bool {
    seed.status
        .as_ref()
        .and_then(|s| get_condition(&s.conditions, type_))
        .is_some_and(|c| c.status == ConditionStatus::True)
}

fn labels(seed: &Seed) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    seed.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

/// The seed is not being deleted.
pub fn not_deleting(seed: &Seed) -> Result<(), DropReason> {
    if seed.metadata.deletion_timestamp.is_some() { Err(DropReason::Deleting) } else { Ok(()) }
}

/// The seed is visible to the scheduler.
pub fn visible(seed: &Seed) -> Result<(), DropReason> {
    let hidden =
        seed.spec.settings.as_ref().is_some_and(|s| !s.scheduling_visible()) || seed.spec.has_taint(TAINT_INVISIBLE);
    if hidden { Err(DropReason::Invisible) } else { Ok(()) }
}

/// gardenlet reports the seed ready.
pub fn gardenlet_ready(seed: &Seed) -> Result<(), DropReason> {
    if condition_true(seed, GARDENLET_READY) { Ok(()) } else { Err(DropReason::NotReady) }
}

/// Where the seed backs up its shoots, the backup buckets are ready.
pub fn backup_ready(seed: &Seed) -> Result<(), DropReason> {
    if seed.spec.backup.is_none() || condition_true(seed, BACKUP_BUCKETS_READY) {
        Ok(())
    } else {
        Err(DropReason::BackupNotReady)
    }
}

/// The CloudProfile's seed selector matches the seed's labels.
pub fn cloud_profile_selects(seed: &Seed, selector: Option<&Selector>) -> Result<(), DropReason> {
    match selector {
        Some(s) if !s.matches(labels(seed)) => Err(DropReason::CloudProfileSelector),
        _ => Ok(()),
    }
}

/// The shoot's seed selector matches the seed's labels.
pub fn shoot_selects(seed: &Seed, selector: Option<&Selector>) -> Result<(), DropReason> {
    match selector {
        Some(s) if !s.matches(labels(seed)) => Err(DropReason::ShootSelector),
        _ => Ok(()),
    }
}

/// The seed selector of the shoot's ExposureClass matches the seed's labels.
pub fn exposure_class_selects(seed: &Seed, selector: Option<&Selector>) -> Result<(), DropReason> {
    match selector {
        Some(s) if !s.matches(labels(seed)) => Err(DropReason::ExposureClassSelector),
        _ => Ok(()),
    }
}

/// The seed's provider type is allowed.
pub fn provider_type(seed: &Seed, allowed: &ProviderTypes<'_>) -> Result<(), DropReason> {
    if allowed.admits(&seed.spec.provider.type_) { Ok(()) } else { Err(DropReason::ProviderType) }
}

/// Every taint of the seed is tolerated: a toleration with the taint's key and either no value
/// or the taint's value. (The legacy invisible taint is handled by [`visible`].)
pub fn taints_tolerated(seed: &Seed, tolerations: &[Toleration]) -> Result<(), DropReason> {
    let mut untolerated: Vec<&str> = Vec::new();
    for taint in seed.spec.taints.iter().filter(|t| t.key != TAINT_INVISIBLE) {
        let tolerated = tolerations.iter().any(|t| t.key == taint.key && (t.value.is_none() || t.value == taint.value));
        if !tolerated && !untolerated.contains(&taint.key.as_str()) {
            untolerated.push(&taint.key);
        }
    }
    if untolerated.is_empty() { Ok(()) } else { Err(DropReason::Tainted(untolerated.join(", "))) }
}

/// How many shoots a seed accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Allocatable {
    Unlimited,
    Shoots(u64),
    Unreadable(String),
}

/// `status.allocatable.shoots`, else `status.capacity.shoots`, else unlimited.
pub fn allocatable_shoots(seed: &Seed) -> Allocatable {
    let Some(status) = seed.status.as_ref() else { return Allocatable::Unlimited };
    match status.allocatable.get(RESOURCE_SHOOTS).or_else(|| status.capacity.get(RESOURCE_SHOOTS)) {
        None => Allocatable::Unlimited,
        Some(q) => match parse_count(&q.0) {
            Some(n) => Allocatable::Shoots(n),
            None => Allocatable::Unreadable(q.0.clone()),
        },
    }
}

/// The seed holds fewer shoots than it allows; `placed` counts every shoot whose control
/// plane is on the seed or moving to or from it.
pub fn capacity(seed: &Seed, placed: u32) -> Result<(), DropReason> {
    match allocatable_shoots(seed) {
        Allocatable::Unlimited => Ok(()),
        Allocatable::Shoots(n) if u64::from(placed) < n => Ok(()),
        Allocatable::Shoots(allocatable) => Err(DropReason::Full { allocatable }),
        Allocatable::Unreadable(q) => Err(DropReason::UnreadableAllocatable(q)),
    }
}

/// Reads a Kubernetes quantity as a whole count, rounding down: `"50"`, `"1k"`, `"2Ki"`,
/// `"1e3"`, `"1500m"`. `None` for anything else or a negative value.
pub fn parse_count(quantity: &str) -> Option<u64> {
    let count = api::helpers::quantity::parse(quantity)?.floor();
    (count >= 0.0).then(|| count.min(u64::MAX as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::*;
    use crate::decide::network_set::{NetworkKind, NetworkSet};
    use api::core::seed::SeedTaint;

    #[test]
    fn usability_filters() {
        let cases: Vec<(&str, Seed, Result<(), DropReason>)> = vec![
            ("healthy seed", seed("a"), Ok(())),
            ("deleting", deleting(seed("a")), Err(DropReason::Deleting)),
            ("scheduling invisible", invisible(seed("a")), Err(DropReason::Invisible)),
            ("legacy invisible taint", tainted(seed("a"), TAINT_INVISIBLE, None), Err(DropReason::Invisible)),
            ("gardenlet not ready", ready(seed("a"), ConditionStatus::False), Err(DropReason::NotReady)),
            ("gardenlet unknown", ready(seed("a"), ConditionStatus::Unknown), Err(DropReason::NotReady)),
            ("no status at all", Seed { status: None, ..seed("a") }, Err(DropReason::NotReady)),
            ("backup without bucket condition", with_backup(seed("a"), None), Err(DropReason::BackupNotReady)),
            (
                "backup bucket progressing",
                with_backup(seed("a"), Some(ConditionStatus::Progressing)),
                Err(DropReason::BackupNotReady),
            ),
            ("backup bucket ready", with_backup(seed("a"), Some(ConditionStatus::True)), Ok(())),
        ];
        for (name, s, want) in cases {
            let got = not_deleting(&s)
                .and_then(|_| visible(&s))
                .and_then(|_| gardenlet_ready(&s))
                .and_then(|_| backup_ready(&s));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn selectors_match_labels() {
        let sel = |yaml: &str| -> SeedSelector { serde_yaml::from_str(yaml).unwrap() };
        let cases = [
            ("matchLabels: {env: prod}", vec![("env", "prod")], true),
            ("matchLabels: {env: prod}", vec![("env", "dev")], false),
            ("matchLabels: {env: prod}", vec![], false),
            ("matchExpressions: [{key: env, operator: In, values: [dev, prod]}]", vec![("env", "dev")], true),
            ("matchExpressions: [{key: env, operator: NotIn, values: [prod]}]", vec![("env", "prod")], false),
            ("matchExpressions: [{key: gpu, operator: Exists}]", vec![("gpu", "")], true),
            ("matchExpressions: [{key: gpu, operator: DoesNotExist}]", vec![("gpu", "x")], false),
            ("providerTypes: [aws]", vec![], true),
        ];
        for (yaml, seed_labels, want) in cases {
            let s = labelled(seed("a"), &seed_labels);
            let compiled = compile_selector(Some(&sel(yaml)), "shoot").unwrap();
            assert_eq!(shoot_selects(&s, compiled.as_ref()).is_ok(), want, "shoot selector {yaml} on {seed_labels:?}");
            let want_err = if want { Ok(()) } else { Err(DropReason::CloudProfileSelector) };
            assert_eq!(cloud_profile_selects(&s, compiled.as_ref()), want_err, "profile selector {yaml}");
            let want_err = if want { Ok(()) } else { Err(DropReason::ExposureClassSelector) };
            assert_eq!(exposure_class_selects(&s, compiled.as_ref()), want_err, "class selector {yaml}");
        }
        let bad = sel("matchExpressions: [{key: env, operator: Near, values: [x]}]");
        let err = compile_selector(Some(&bad), "CloudProfile").unwrap_err();
        assert!(err.to_string().contains("CloudProfile seed selector is invalid"), "{err}");
    }

    #[test]
    fn provider_types() {
        let sel = |types: &[&str]| SeedSelector {
            provider_types: types.iter().map(|t| t.to_string()).collect(),
            ..Default::default()
        };
        let (aws, any, gcp_aws, none) = (sel(&["aws"]), sel(&["*"]), sel(&["gcp", "aws"]), sel(&[]));
        let cases: Vec<(&str, [Option<&SeedSelector>; 2], &str, bool)> = vec![
            ("defaults to the shoot's type", [None, None], "local", true),
            ("defaults reject other types", [None, None], "aws", false),
            ("empty lists are the default", [Some(&none), Some(&none)], "aws", false),
            ("profile allows any", [Some(&any), None], "aws", true),
            ("shoot allows any", [None, Some(&any)], "gcp", true),
            ("profile lists the type", [Some(&gcp_aws), None], "gcp", true),
            ("profile allows any, shoot narrows", [Some(&any), Some(&aws)], "gcp", false),
            ("both list it", [Some(&gcp_aws), Some(&aws)], "aws", true),
        ];
        let cases = cases.into_iter().map(|(n, [p, s], t, w)| (n, [p, s, None], t, w)).chain([
            ("exposure class narrows", [Some(&any), None, Some(&aws)], "gcp", false),
            ("exposure class lists it", [None, None, Some(&gcp_aws)], "gcp", true),
            ("exposure class alone with empty list", [None, None, Some(&none)], "local", true),
        ]);
        for (name, selectors, seed_type, want) in cases {
            let rule = ProviderTypes::new("local", selectors);
            let mut s = seed("a");
            s.spec.provider.type_ = seed_type.into();
            assert_eq!(provider_type(&s, &rule).is_ok(), want, "{name}");
        }
    }

    #[test]
    fn taints() {
        let tol = |key: &str, value: Option<&str>| Toleration { key: key.into(), value: value.map(Into::into) };
        let protected = "seed.gardener.cloud/protected";
        type Case<'c> = (&'c str, Vec<SeedTaint>, Vec<Toleration>, Result<(), DropReason>);
        let cases: Vec<Case<'_>> = vec![
            ("no taints", vec![], vec![], Ok(())),
            ("untolerated", vec![taint(protected, None)], vec![], Err(DropReason::Tainted(protected.into()))),
            ("tolerated by key", vec![taint(protected, None)], vec![tol(protected, None)], Ok(())),
            (
                "key toleration covers any value",
                vec![taint("dedicated", Some("a"))],
                vec![tol("dedicated", None)],
                Ok(()),
            ),
            (
                "value must match",
                vec![taint("dedicated", Some("a"))],
                vec![tol("dedicated", Some("b"))],
                Err(DropReason::Tainted("dedicated".into())),
            ),
            ("matching value", vec![taint("dedicated", Some("a"))], vec![tol("dedicated", Some("a"))], Ok(())),
            (
                "valued toleration does not cover a bare taint",
                vec![taint("x", None)],
                vec![tol("x", Some("v"))],
                Err(DropReason::Tainted("x".into())),
            ),
            (
                "every untolerated key is named",
                vec![taint("b", None), taint("a", None), taint("c", None)],
                vec![tol("c", None)],
                Err(DropReason::Tainted("b, a".into())),
            ),
        ];
        for (name, taints, tolerations, want) in cases {
            let mut s = seed("a");
            s.spec.taints = taints;
            assert_eq!(taints_tolerated(&s, &tolerations), want, "{name}");
        }
    }

    #[test]
    fn capacity_filter() {
        let cases: Vec<(&str, Seed, u32, Result<(), DropReason>)> = vec![
            ("no allocatable is unlimited", Seed { status: None, ..seed("a") }, 10_000, Ok(())),
            ("below allocatable", allocatable(seed("a"), "3"), 2, Ok(())),
            ("at allocatable", allocatable(seed("a"), "3"), 3, Err(DropReason::Full { allocatable: 3 })),
            ("zero allocatable", allocatable(seed("a"), "0"), 0, Err(DropReason::Full { allocatable: 0 })),
            (
                "capacity when allocatable is missing",
                capacity_only(seed("a"), "1"),
                1,
                Err(DropReason::Full { allocatable: 1 }),
            ),
            ("unreadable", allocatable(seed("a"), "lots"), 0, Err(DropReason::UnreadableAllocatable("lots".into()))),
        ];
        for (name, s, placed, want) in cases {
            assert_eq!(capacity(&s, placed), want, "{name}");
        }
    }

    #[test]
    fn quantities() {
        let cases = [
            ("50", Some(50)),
            (" 7 ", Some(7)),
            ("1k", Some(1000)),
            ("2Ki", Some(2048)),
            ("1e3", Some(1000)),
            ("1500m", Some(1)),
            ("2.5", Some(2)),
            ("+3", Some(3)),
            ("-1", None),
            ("", None),
            ("ten", None),
            ("5x", None),
        ];
        for (q, want) in cases {
            assert_eq!(parse_count(q), want, "{q:?}");
        }
    }

    #[test]
    fn reason_labels() {
        let cases = [
            (DropReason::Deleting, "being deleted"),
            (DropReason::NotReady, "not ready"),
            (DropReason::Region, "other region"),
            (DropReason::ExposureClassSelector, "not selected by the ExposureClass"),
            (DropReason::Tainted("seed.gardener.cloud/protected".into()), "tainted (seed.gardener.cloud/protected)"),
            (DropReason::Full { allocatable: 50 }, "full (allocatable shoots 50)"),
            (DropReason::NetworksOverlap(NetworkSet::of(&[NetworkKind::Pods])), "networks overlap (pods)"),
        ];
        for (reason, label) in cases {
            assert_eq!(reason.to_string(), label);
        }
    }
}
