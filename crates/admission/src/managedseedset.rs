//! ManagedSeedSet validation (GEP-13): it lives in the `garden` namespace like its
//! ManagedSeeds; its name makes valid replica names (`<name>-<ordinal>` is a Shoot's name, so
//! the Shoot name rules apply to `<name>-0`); `replicas` and the partition are not negative; the
//! selector is usable and matches the labels of both templates (otherwise the set could not
//! find what it creates); the ManagedSeed template names the gardenlet to deploy (as a
//! ManagedSeed must, `crate::managedseed::gardenlet`) and names no shoot (the controller fills it); the Shoot
//! template's spec is a valid Shoot spec as far as it can be judged without its CloudProfile
//! (the replica Shoots meet the full rules when they are created). The selector is immutable.

use crate::common::dns_label;
use crate::field::{ErrorList, FieldError, Path};
use crate::shoot::spec;
use api::core::{Shoot, ShootSpec};
use api::helpers::constants::GARDEN_NAMESPACE;
use api::seedmanagement::ManagedSeedSet;
use kube::core::{Selector, SelectorExt};

/// Every rule; `old` on update.
pub fn validate(set: &ManagedSeedSet, old: Option<&ManagedSeedSet>) -> ErrorList {
    let mut errs = ErrorList::default();
    let meta = Path::new("metadata");
    let name = set.metadata.name.as_deref().unwrap_or("");
    errs.0.extend(dns_label(&meta.child("name"), name, 63));
    if set.metadata.namespace.as_deref() != Some(GARDEN_NAMESPACE) {
        errs.push(FieldError::invalid(
            meta.child("namespace"),
            set.metadata.namespace.as_deref().unwrap_or(""),
            format!("a ManagedSeedSet must be in the {GARDEN_NAMESPACE:?} namespace"),
        ));
    }
    let sp = Path::new("spec");
    if let Some(r) = set.spec.replicas.filter(|r| *r < 0) {
        errs.push(FieldError::invalid(sp.child("replicas"), &r.to_string(), "must be greater than or equal to 0"));
    }
    let partition = set.spec.update_strategy.as_ref().and_then(|u| u.rolling_update.as_ref()).and_then(|r| r.partition);
    if let Some(p) = partition.filter(|p| *p < 0) {
        errs.push(FieldError::invalid(
            sp.child("updateStrategy").child("rollingUpdate").child("partition"),
            &p.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(r) = set.spec.revision_history_limit.filter(|r| *r < 0) {
        errs.push(FieldError::invalid(
            sp.child("revisionHistoryLimit"),
            &r.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    let selector_path = sp.child("selector");
    let empty = set.spec.selector.match_labels.as_ref().is_none_or(|l| l.is_empty())
        && set.spec.selector.match_expressions.as_ref().is_none_or(|e| e.is_empty());
    if empty {
        errs.push(FieldError::required(selector_path.clone(), "an empty selector would match every ManagedSeed"));
    } else {
        match Selector::try_from(set.spec.selector.clone()) {
            Err(e) => errs.push(FieldError::invalid(selector_path.clone(), "", e.to_string())),
            Ok(selector) => {
                let templates = [
                    (sp.child("template"), &set.spec.template.metadata.labels),
                    (sp.child("shootTemplate"), &set.spec.shoot_template.metadata.labels),
                ];
                for (path, labels) in templates {
                    if !selector.matches(labels) {
                        errs.push(FieldError::invalid(
                            path.child("metadata").child("labels"),
                            "",
                            "`selector` does not match template `labels`",
                        ));
                    }
                }
            }
        }
    }
    let tp = sp.child("template").child("spec");
    let template = &set.spec.template.spec;
    if template.shoot.is_some() {
        errs.push(FieldError::forbidden(tp.child("shoot"), "is filled by the ManagedSeedSet controller"));
    }
    crate::managedseed::gardenlet(template, &tp, &mut errs);
    errs.extend(shoot_template(set, name));
    if let Some(old) = old
        && old.spec.selector != set.spec.selector
    {
        errs.push(FieldError::forbidden(selector_path, "field is immutable"));
    }
    errs
}

/// The Shoot spec rules for the first replica's Shoot, reported under `spec.shootTemplate` (and
/// a name the Shoot rules refuse under the set's `metadata.name`).
fn shoot_template(set: &ManagedSeedSet, name: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    let tp = Path::new("spec").child("shootTemplate");
    let spec: ShootSpec = match set.spec.shoot_template.spec.decode() {
        Ok(s) => s,
        Err(e) => {
            errs.push(FieldError::invalid(tp.child("spec"), "", format!("not a Shoot spec: {e}")));
            return errs;
        }
    };
    let mut shoot = Shoot::new(&format!("{name}-0"), spec);
    shoot.metadata.namespace = set.metadata.namespace.clone();
    for mut e in spec::validate(&shoot).0 {
        if e.path.as_str().starts_with("metadata.name") {
            e.path = Path::new("metadata").child("name");
            e.detail = format!("replica names such as {name}-0 must be valid Shoot names: {}", e.detail);
        } else {
            e.path = tp.child(e.path.as_str());
        }
        errs.push(e);
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::seedmanagement::{
        Gardenlet, ManagedSeedSetSpec, ManagedSeedSpec, ManagedSeedTemplate, RollingUpdateStrategy, SeedTemplate,
        ShootReference, ShootTemplate, TemplateMetadata, UpdateStrategy,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

    fn labels() -> std::collections::BTreeMap<String, String> {
        [("app".to_string(), "seeds".to_string())].into_iter().collect()
    }

    fn set() -> ManagedSeedSet {
        let shoot = crate::fixtures::shoot();
        let mut s = ManagedSeedSet::new(
            "seeds",
            ManagedSeedSetSpec {
                replicas: Some(2),
                selector: LabelSelector { match_labels: Some(labels()), ..Default::default() },
                template: ManagedSeedTemplate {
                    metadata: TemplateMetadata { labels: labels(), ..Default::default() },
                    spec: ManagedSeedSpec { gardenlet: Some(Gardenlet::default()), ..Default::default() },
                },
                shoot_template: ShootTemplate {
                    metadata: TemplateMetadata { labels: labels(), ..Default::default() },
                    spec: serde_json::to_value(&shoot.spec).unwrap_or_default().into(),
                },
                ..Default::default()
            },
        );
        s.metadata.namespace = Some("garden".into());
        s
    }

    type Mutation = fn(&mut ManagedSeedSet);

    #[test]
    fn rules() {
        let cases: Vec<(&str, Mutation, Option<&str>)> = vec![
            ("valid", |_| {}, None),
            ("zero replicas", |s| s.spec.replicas = Some(0), None),
            ("negative replicas", |s| s.spec.replicas = Some(-1), Some("spec.replicas: Invalid value: \"-1\"")),
            (
                "negative partition",
                |s| {
                    s.spec.update_strategy = Some(UpdateStrategy {
                        type_: None,
                        rolling_update: Some(RollingUpdateStrategy { partition: Some(-2) }),
                    })
                },
                Some("spec.updateStrategy.rollingUpdate.partition"),
            ),
            ("negative history", |s| s.spec.revision_history_limit = Some(-1), Some("spec.revisionHistoryLimit")),
            ("wrong namespace", |s| s.metadata.namespace = Some("garden-dev".into()), Some("metadata.namespace")),
            ("bad name", |s| s.metadata.name = Some("Seeds".into()), Some("metadata.name")),
            ("empty selector", |s| s.spec.selector = LabelSelector::default(), Some("spec.selector: Required value")),
            (
                "selector misses the ManagedSeed template",
                |s| {
                    s.spec.template.metadata.labels.clear();
                },
                Some("spec.template.metadata.labels: Invalid value"),
            ),
            (
                "selector misses the Shoot template",
                |s| {
                    s.spec.shoot_template.metadata.labels.insert("app".into(), "other".into());
                },
                Some("spec.shootTemplate.metadata.labels: Invalid value"),
            ),
            (
                "expressions",
                |s| {
                    s.spec.selector = LabelSelector {
                        match_labels: None,
                        match_expressions: Some(vec![LabelSelectorRequirement {
                            key: "app".into(),
                            operator: "In".into(),
                            values: Some(vec!["seeds".into(), "x".into()]),
                        }]),
                    }
                },
                None,
            ),
            (
                "bad operator",
                |s| {
                    s.spec.selector.match_expressions = Some(vec![LabelSelectorRequirement {
                        key: "app".into(),
                        operator: "Near".into(),
                        values: None,
                    }])
                },
                Some("spec.selector: Invalid value"),
            ),
            (
                "no gardenlet",
                |s| s.spec.template.spec.gardenlet = None,
                Some("spec.template.spec.gardenlet: Required value"),
            ),
            (
                "a seed template",
                |s| s.spec.template.spec.seed_template = Some(SeedTemplate::default()),
                Some("spec.template.spec.seedTemplate: Forbidden"),
            ),
            (
                "shoot named",
                |s| s.spec.template.spec.shoot = Some(ShootReference { name: "x".into() }),
                Some("spec.template.spec.shoot: Forbidden"),
            ),
            (
                "shoot spec without region",
                |s| s.spec.shoot_template.spec.0["region"] = "".into(),
                Some("spec.shootTemplate.spec.region: Required value"),
            ),
            (
                "not a shoot spec",
                |s| s.spec.shoot_template.spec.0["provider"] = 3.into(),
                Some("spec.shootTemplate.spec: Invalid value"),
            ),
            (
                "replica names too long for a shoot",
                |s| s.metadata.name = Some("a".repeat(60)),
                Some("metadata.name: Invalid value"),
            ),
        ];
        for (what, mutate, want) in cases {
            let mut s = set();
            mutate(&mut s);
            let errs = validate(&s, None);
            let text = errs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n");
            match want {
                None => assert!(errs.is_empty(), "{what}: {text}"),
                Some(w) => assert!(text.contains(w), "{what}: want {w:?}, got:\n{text}"),
            }
        }
    }

    #[test]
    fn selector_is_immutable_but_replicas_and_templates_change() {
        let old = set();
        let mut new = set();
        new.spec.replicas = Some(5);
        new.spec.shoot_template.metadata.annotations.insert("a".into(), "b".into());
        assert!(validate(&new, Some(&old)).is_empty());
        new.spec.selector.match_labels.get_or_insert_default().insert("tier".into(), "x".into());
        new.spec.template.metadata.labels.insert("tier".into(), "x".into());
        new.spec.shoot_template.metadata.labels.insert("tier".into(), "x".into());
        let errs = validate(&new, Some(&old));
        assert!(errs.has("spec.selector"), "{errs:?}");
    }
}
