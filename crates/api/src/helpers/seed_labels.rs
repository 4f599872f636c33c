//! The seed labels of a Shoot: `name.seed.gardener.cloud/<seed>: "true"` for the seed in
//! `spec.seedName` and, while a migration moves the shoot away, the one in `status.seedName`.
//!
//! Custom resources on our API server version have no field selectors, so a gardenlet cannot
//! watch "the Shoots whose `spec.seedName` is mine". It watches the Shoots carrying its seed's
//! label instead ([`selector`]), and its caches hold only its own seed's shoots. The garden
//! keeps the labels in step: admission's mutating webhook sets them whenever a Shoot is created
//! or its spec changes (scheduling included), and the controller-manager's `shoot-seed-labels`
//! controller catches what admission cannot see (a `status.seedName` written through the
//! status subresource at the end of a migration, shoots stored before the labels existed).
//!
//! Pure: every caller applies the result with its own client.

use crate::core::Shoot;
use std::collections::{BTreeMap, BTreeSet};

/// The prefix of a seed label; the seed's name follows the slash.
pub const PREFIX: &str = "name.seed.gardener.cloud/";

/// The value of a seed label.
pub const VALUE: &str = "true";

/// The label key of `seed`.
pub fn key(seed: &str) -> String {
    format!("{PREFIX}{seed}")
}

/// The label selector of the Shoots that concern `seed` (what its gardenlet watches).
pub fn selector(seed: &str) -> String {
    format!("{}={VALUE}", key(seed))
}

/// The seeds a Shoot concerns: `spec.seedName` and `status.seedName` (empty names ignored).
pub fn seeds(shoot: &Shoot) -> BTreeSet<&str> {
    let spec = shoot.spec.seed_name.as_deref();
    let status = shoot.status.as_ref().and_then(|s| s.seed_name());
    [spec, status].into_iter().flatten().filter(|s| !s.is_empty()).collect()
}

/// The label changes that bring `shoot` in step: a key mapped to `Some(VALUE)` is added, to
/// `None` removed (a stale seed label, or one with another value). Empty when in step; labels
/// without the prefix are never touched.
pub fn changes(shoot: &Shoot) -> BTreeMap<String, Option<&'static str>> {
    let wanted = seeds(shoot);
    let labels = shoot.metadata.labels.as_ref();
    let mut out = BTreeMap::new();
    for (k, v) in labels.into_iter().flatten() {
        if let Some(seed) = k.strip_prefix(PREFIX)
            && (!wanted.contains(seed) || v != VALUE)
        {
            out.insert(k.clone(), None);
        }
    }
    for seed in wanted {
        let k = key(seed);
        if labels.and_then(|l| l.get(&k)).map(String::as_str) != Some(VALUE) {
            out.insert(k, Some(VALUE));
        }
    }
    out
}

/// Applies [`changes`] to the Shoot's own labels; returns whether anything changed.
pub fn sync(shoot: &mut Shoot) -> bool {
    let changes = changes(shoot);
    if changes.is_empty() {
        return false;
    }
    let labels = shoot.metadata.labels.get_or_insert_default();
    for (k, v) in changes {
        match v {
            Some(v) => labels.insert(k, v.to_string()),
            None => labels.remove(&k),
        };
    }
    true
}

/// A JSON merge patch of `metadata.labels` for [`changes`] (removals as `null`), or `None` when
/// the shoot is in step.
pub fn merge_patch(shoot: &Shoot) -> Option<serde_json::Value> {
    let changes = changes(shoot);
    if changes.is_empty() {
        return None;
    }
    let labels: serde_json::Map<String, serde_json::Value> =
        changes.into_iter().map(|(k, v)| (k, v.map_or(serde_json::Value::Null, Into::into))).collect();
    Some(serde_json::json!({ "metadata": { "labels": labels } }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;

    fn shoot(spec: Option<&str>, status: Option<&str>, labels: &[(&str, &str)]) -> Shoot {
        let mut s: Shoot = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "a", "namespace": "garden-dev"},
            "spec": {"region": "local", "provider": {"type": "local"}, "kubernetes": {"version": "1.20.2"}},
        }))
        .unwrap();
        s.spec.seed_name = spec.map(Into::into);
        if let Some(status) = status {
            s.status.get_or_insert_default().seed_name = Some(status.into());
        }
        if !labels.is_empty() {
            s.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        }
        s
    }

    #[test]
    fn an_unscheduled_shoot_has_no_seed_label() {
        assert!(changes(&shoot(None, None, &[("team", "a")])).is_empty());
        let stale = shoot(None, None, &[("name.seed.gardener.cloud/old", "true")]);
        assert_eq!(changes(&stale), BTreeMap::from([("name.seed.gardener.cloud/old".into(), None)]));
    }

    #[test]
    fn a_scheduled_shoot_gets_its_seed_label_once() {
        let mut s = shoot(Some("local"), None, &[("team", "a")]);
        assert_eq!(
            merge_patch(&s).unwrap(),
            serde_json::json!({"metadata": {"labels": {"name.seed.gardener.cloud/local": "true"}}})
        );
        assert!(sync(&mut s));
        assert!(!sync(&mut s), "in step after one sync");
        assert_eq!(merge_patch(&s), None);
        assert_eq!(s.metadata.labels.unwrap()["team"], "a", "other labels are kept");
    }

    #[test]
    fn a_migrating_shoot_carries_both_seeds_until_the_status_moves() {
        let migrating = shoot(Some("target"), Some("source"), &[("name.seed.gardener.cloud/source", "true")]);
        assert_eq!(changes(&migrating), BTreeMap::from([("name.seed.gardener.cloud/target".into(), Some(VALUE))]));
        let done = shoot(
            Some("target"),
            Some("target"),
            &[("name.seed.gardener.cloud/source", "true"), ("name.seed.gardener.cloud/target", "true")],
        );
        assert_eq!(
            merge_patch(&done).unwrap(),
            serde_json::json!({"metadata": {"labels": {"name.seed.gardener.cloud/source": null}}})
        );
    }

    #[test]
    fn a_seed_label_with_another_value_is_set_right() {
        let s = shoot(Some("local"), None, &[("name.seed.gardener.cloud/local", "yes")]);
        assert_eq!(changes(&s), BTreeMap::from([("name.seed.gardener.cloud/local".into(), Some(VALUE))]));
        assert_eq!(selector("local"), "name.seed.gardener.cloud/local=true");
    }
}
