//! Quotas: the resources of the shoots in a Quota's scope, summed, stay within its `metrics`.
//! Pure; the webhook looks up the shoot's SecretBinding, the Quotas it lists and the shoots in
//! each Quota's scope, and passes them here.
//!
//! What a shoot uses is computed as Gardener does, from its worker pools at their maximum size
//! and the CloudProfile's machine and volume types: `cpu`, `gpu`, `memory` (the machine type's,
//! times `maximum`), and `storage.standard` / `storage.premium` (the pool's volume size, times
//! `maximum`, by the volume type's class; a volume without a type counts as standard).
//! `loadbalancer` is not counted: the garden cannot see the shoot's Services.
//!
//! The scope of a Quota is its `spec.scope.kind`: `Project` (every shoot in the project's
//! namespace, which is the Quota's) or `Secret` (every shoot whose SecretBinding refers to the
//! same Secret). A create is refused when the sum would exceed a limit; an update only when it
//! raises a metric that then exceeds its limit (so a quota lowered below what exists does not
//! block unrelated changes).
//!
//! Quantities are read by the one parser ([`api::helpers::quantity::parse`]). Admission refuses
//! negative and unparsable sizes and machine resources ([`crate::common::non_negative_quantity`]),
//! but objects stored before that rule (or a profile edited since) may still carry them, so the
//! accounting counts such a quantity as 0 ([`counted`]): nothing can lower what a shoot uses. A
//! limit that does not parse cannot be compared, so it admits nothing new (creates and raising
//! updates are refused, naming the limit) rather than nothing being limited.

use crate::field::{ErrorList, FieldError, Path};
use api::core::Shoot;
use api::core::cloudprofile::CloudProfileSpec;
use api::helpers::quantity::parse as parse_quantity;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;

/// What a stored quantity counts for in usage: its value, or 0 when it does not parse or is
/// negative (it can never lower the sum).
pub fn counted(quantity: &str) -> f64 {
    parse_quantity(quantity).map_or(0.0, |q| q.max(0.0))
}

/// What `shoot` uses, by metric name.
pub fn usage(shoot: &Shoot, profile: &CloudProfileSpec) -> BTreeMap<&'static str, f64> {
    let mut out = BTreeMap::new();
    for pool in &shoot.spec.provider.workers {
        let count = f64::from(pool.maximum.max(0));
        if let Some(machine) = profile.machine_types.iter().find(|m| m.name == pool.machine.type_) {
            for (metric, q) in [("cpu", &machine.cpu), ("gpu", &machine.gpu), ("memory", &machine.memory)] {
                *out.entry(metric).or_insert(0.0) += counted(&q.0) * count;
            }
        }
        if let Some(volume) = &pool.volume {
            let premium = volume
                .type_
                .as_ref()
                .and_then(|t| profile.volume_types.iter().find(|v| &v.name == t))
                .is_some_and(|v| v.class == "premium");
            let metric = if premium { "storage.premium" } else { "storage.standard" };
            *out.entry(metric).or_insert(0.0) += counted(&volume.size) * count;
        }
    }
    out
}

/// One Quota that applies to the shoot, with the other shoots in its scope.
#[derive(Debug)]
pub struct Scoped<'a> {
    /// `namespace/name`, for messages.
    pub quota: String,
    pub limits: &'a BTreeMap<String, Quantity>,
    /// The shoots in the quota's scope, other than the one being judged.
    pub others: Vec<&'a Shoot>,
}

fn show(metric: &str, value: f64) -> String {
    if metric == "memory" || metric.starts_with("storage.") {
        format!("{:.1}Gi", value / 1024f64.powi(3))
    } else {
        format!("{value}")
    }
}

/// The quota violations of `shoot` (created, or updated from `old`).
pub fn validate(shoot: &Shoot, old: Option<&Shoot>, quotas: &[Scoped<'_>], profile: &CloudProfileSpec) -> ErrorList {
    let mut errs = ErrorList::default();
    let mine = usage(shoot, profile);
    let before = old.map(|o| usage(o, profile)).unwrap_or_default();
    for quota in quotas {
        let mut others: BTreeMap<&'static str, f64> = BTreeMap::new();
        for other in &quota.others {
            for (metric, value) in usage(other, profile) {
                *others.entry(metric).or_insert(0.0) += value;
            }
        }
        for (metric, limit_text) in quota.limits {
            let Some(metric) =
                ["cpu", "gpu", "memory", "storage.standard", "storage.premium"].into_iter().find(|m| m == metric)
            else {
                continue;
            };
            let wanted = mine.get(metric).copied().unwrap_or(0.0);
            let raised = wanted > before.get(metric).copied().unwrap_or(0.0);
            let total = others.get(metric).copied().unwrap_or(0.0) + wanted;
            let Some(limit) = parse_quantity(&limit_text.0) else {
                if wanted > 0.0 && (old.is_none() || raised) {
                    errs.push(FieldError::forbidden(
                        Path::new("spec").child("provider").child("workers"),
                        format!(
                            "quota {}'s limit of {metric} ({:?}) is not a quantity; it admits no {metric} until it is corrected",
                            quota.quota, limit_text.0
                        ),
                    ));
                }
                continue;
            };
            if total > limit && (old.is_none() || raised) {
                errs.push(FieldError::forbidden(
                    Path::new("spec").child("provider").child("workers"),
                    format!(
                        "quota {} allows {metric} {}; the shoots in its scope would use {} (this shoot {})",
                        quota.quota,
                        show(metric, limit),
                        show(metric, total),
                        show(metric, wanted)
                    ),
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::core::cloudprofile::{MachineType, VolumeType};
    use api::core::shoot::provider::{Machine, Volume, Worker};

    fn profile() -> CloudProfileSpec {
        CloudProfileSpec {
            machine_types: vec![MachineType {
                name: "m".into(),
                cpu: Quantity("2".into()),
                gpu: Quantity("0".into()),
                memory: Quantity("4Gi".into()),
                ..Default::default()
            }],
            volume_types: vec![VolumeType { name: "fast".into(), class: "premium".into(), ..Default::default() }],
            ..Default::default()
        }
    }

    fn shoot(name: &str, maximum: i32, volume: Option<&str>) -> Shoot {
        let mut s = Shoot::new(name, Default::default());
        s.spec.provider.workers = vec![Worker {
            name: "pool".into(),
            maximum,
            minimum: 1,
            machine: Machine { type_: "m".into(), ..Default::default() },
            volume: Some(Volume { type_: volume.map(Into::into), size: "10Gi".into(), ..Default::default() }),
            ..Default::default()
        }];
        s
    }

    #[test]
    fn usage_counts_pools_at_their_maximum() {
        let u = usage(&shoot("a", 3, Some("fast")), &profile());
        assert_eq!(u["cpu"], 6.0);
        assert_eq!(u["memory"], 12.0 * 1024f64.powi(3));
        assert_eq!(u["storage.premium"], 30.0 * 1024f64.powi(3));
        assert!(!u.contains_key("storage.standard"));
        assert_eq!(usage(&shoot("b", 1, None), &profile())["storage.standard"], 10.0 * 1024f64.powi(3));
    }

    #[test]
    fn creates_beyond_the_limit_and_raising_updates_are_refused() {
        let limits: BTreeMap<String, Quantity> =
            [("cpu".to_string(), Quantity("10".into())), ("loadbalancer".to_string(), Quantity("1".into()))].into();
        let existing = shoot("existing", 2, None); // 4 cpu
        let quota = |others| Scoped { quota: "garden-dev/q".into(), limits: &limits, others };
        let p = profile();
        // 4 + 6 = 10: allowed; 4 + 8 = 12: refused, naming the quota and the numbers.
        assert!(validate(&shoot("new", 3, None), None, &[quota(vec![&existing])], &p).is_empty());
        let errs = validate(&shoot("new", 4, None), None, &[quota(vec![&existing])], &p);
        assert_eq!(
            errs.to_string(),
            "spec.provider.workers: Forbidden: quota garden-dev/q allows cpu 10; the shoots in its scope would use 12 (this shoot 8)"
        );
        // Already over the limit (the quota was lowered): an update that does not raise cpu
        // passes, one that raises it does not.
        let big = shoot("big", 5, None); // 10 cpu
        assert!(validate(&big, Some(&big), &[quota(vec![&existing])], &p).is_empty());
        assert!(!validate(&shoot("big", 6, None), Some(&big), &[quota(vec![&existing])], &p).is_empty());
    }

    #[test]
    fn stored_negative_or_unparsable_quantities_never_lower_usage() {
        assert_eq!(counted("10Gi"), 10.0 * 1024f64.powi(3));
        assert_eq!(counted("-1Pi"), 0.0);
        assert_eq!(counted("lots"), 0.0);
        // A shoot stored with a negative root volume (before admission refused it) uses no
        // storage, not minus a pebibyte, and does not make room for another shoot.
        let mut negative = shoot("negative", 1, None);
        negative.spec.provider.workers[0].volume.as_mut().unwrap().size = "-1Pi".into();
        assert_eq!(usage(&negative, &profile())["storage.standard"], 0.0);
        // A profile whose machine type has a negative cpu (edited since) counts 0 cpu.
        let mut p = profile();
        p.machine_types[0].cpu = Quantity("-100".into());
        assert_eq!(usage(&shoot("a", 3, None), &p)["cpu"], 0.0);
        let limits: BTreeMap<String, Quantity> = [("storage.standard".to_string(), Quantity("15Gi".into()))].into();
        let quota = Scoped { quota: "garden-dev/q".into(), limits: &limits, others: vec![&negative] };
        // 0 + 20Gi > 15Gi: refused as if the negative shoot were not there.
        let errs = validate(&shoot("new", 2, None), None, &[quota], &profile());
        assert_eq!(
            errs.to_string(),
            "spec.provider.workers: Forbidden: quota garden-dev/q allows storage.standard 15.0Gi; the shoots in its scope would use 20.0Gi (this shoot 20.0Gi)"
        );
    }

    #[test]
    fn an_unparsable_limit_admits_no_new_usage() {
        let limits: BTreeMap<String, Quantity> = [("cpu".to_string(), Quantity("ten".into()))].into();
        let quota = || Scoped { quota: "garden-dev/q".into(), limits: &limits, others: vec![] };
        let p = profile();
        let errs = validate(&shoot("new", 1, None), None, &[quota()], &p);
        assert_eq!(
            errs.to_string(),
            "spec.provider.workers: Forbidden: quota garden-dev/q's limit of cpu (\"ten\") is not a quantity; it admits no cpu until it is corrected"
        );
        // An update that does not raise cpu is not blocked by the broken limit.
        let s = shoot("s", 2, None);
        assert!(validate(&s, Some(&s), &[quota()], &p).is_empty());
        assert!(!validate(&shoot("s", 3, None), Some(&s), &[quota()], &p).is_empty());
    }
}
