//! ManagedSeed validation: it lives in the `garden` namespace, names an existing Shoot there,
//! and says either how to register the seed (`seedTemplate`) or which gardenlet to deploy
//! (`gardenlet`), not both; the shoot is immutable.

use crate::common::{dns_label, immutable};
use crate::field::{ErrorList, FieldError, Path};
use api::helpers::constants::GARDEN_NAMESPACE;
use api::seedmanagement::ManagedSeed;

/// Every rule; `shoot_exists` says whether the named shoot exists in the ManagedSeed's namespace.
pub fn validate(ms: &ManagedSeed, old: Option<&ManagedSeed>, shoot_exists: bool) -> ErrorList {
    let mut errs = ErrorList::default();
    errs.0.extend(dns_label(&Path::new("metadata").child("name"), ms.metadata.name.as_deref().unwrap_or(""), 63));
    if ms.metadata.namespace.as_deref() != Some(GARDEN_NAMESPACE) {
        errs.push(FieldError::invalid(
            Path::new("metadata").child("namespace"),
            ms.metadata.namespace.as_deref().unwrap_or(""),
            format!("a ManagedSeed must be in the {GARDEN_NAMESPACE:?} namespace"),
        ));
    }
    let sp = Path::new("spec");
    match &ms.spec.shoot {
        None => errs.push(FieldError::required(sp.child("shoot"), "")),
        Some(s) if s.name.is_empty() => errs.push(FieldError::required(sp.child("shoot").child("name"), "")),
        Some(s) if !shoot_exists && old.is_none() => {
            errs.push(FieldError::not_found(sp.child("shoot").child("name"), &s.name))
        }
        Some(_) => {}
    }
    match (&ms.spec.seed_template, &ms.spec.gardenlet) {
        (None, None) => {
            errs.push(FieldError::required(sp.clone(), "either seedTemplate or gardenlet must be specified"))
        }
        (Some(_), Some(_)) => {
            errs.push(FieldError::forbidden(sp.child("seedTemplate"), "must not be set when gardenlet is set"))
        }
        _ => {}
    }
    if let Some(old) = old {
        errs.0.extend(immutable(&sp.child("shoot"), &ms.spec.shoot, &old.spec.shoot));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::seedmanagement::{Gardenlet, ManagedSeedSpec, SeedTemplate, ShootReference};

    fn ms() -> ManagedSeed {
        let mut m = ManagedSeed::new(
            "seed-x",
            ManagedSeedSpec {
                shoot: Some(ShootReference { name: "seed-x".into() }),
                gardenlet: Some(Gardenlet::default()),
                seed_template: None,
            },
        );
        m.metadata.namespace = Some("garden".into());
        m
    }

    type Mutation = fn(&mut ManagedSeed);

    #[test]
    fn rules() {
        let cases: Vec<(&str, Mutation, bool, Option<&str>)> = vec![
            ("valid", |_| {}, true, None),
            (
                "wrong namespace",
                |m| m.metadata.namespace = Some("garden-dev".into()),
                true,
                Some("metadata.namespace: Invalid value: \"garden-dev\""),
            ),
            ("no shoot", |m| m.spec.shoot = None, true, Some("spec.shoot: Required value")),
            ("unknown shoot", |_| {}, false, Some("spec.shoot.name: Not found: \"seed-x\"")),
            (
                "neither",
                |m| m.spec.gardenlet = None,
                true,
                Some("spec: Required value: either seedTemplate or gardenlet"),
            ),
            (
                "both",
                |m| m.spec.seed_template = Some(SeedTemplate::default()),
                true,
                Some("spec.seedTemplate: Forbidden"),
            ),
        ];
        for (name, mutate, exists, want) in cases {
            let mut m = ms();
            mutate(&mut m);
            let errs = validate(&m, None, exists);
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(w) => assert!(errs.iter().any(|e| e.to_string().starts_with(w)), "{name}: want {w:?}, got {errs}"),
            }
        }
        let mut changed = ms();
        changed.spec.shoot = Some(ShootReference { name: "other".into() });
        assert!(validate(&changed, Some(&ms()), true).has("spec.shoot"));
    }
}
