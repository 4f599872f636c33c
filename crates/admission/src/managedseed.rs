//! ManagedSeed validation: it lives in the `garden` namespace, names an existing Shoot there,
//! and says which gardenlet to deploy (`gardenlet`; `seedTemplate` and bootstraps other than a
//! ServiceAccount token are refused); the shoot is immutable.

use crate::common::{dns_label, immutable};
use crate::field::{ErrorList, FieldError, Path};
use api::helpers::constants::GARDEN_NAMESPACE;
use api::seedmanagement::{Bootstrap, ManagedSeed, ManagedSeedSpec};

/// What a new ManagedSeed must not collide with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Garden {
    /// Whether the named shoot exists in the ManagedSeed's namespace.
    pub shoot_exists: bool,
    /// Whether a Seed of the ManagedSeed's name exists already (its gardenlet would take it over).
    pub seed_exists: bool,
    /// Another ManagedSeed that registers the same shoot (two gardenlets would share its objects).
    pub other_for_shoot: Option<String>,
}

/// Every rule; `garden` says what exists already.
pub fn validate(ms: &ManagedSeed, old: Option<&ManagedSeed>, garden: &Garden) -> ErrorList {
    let shoot_exists = garden.shoot_exists;
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
    gardenlet(&ms.spec, &sp, &mut errs);
    if let Some(old) = old {
        errs.0.extend(immutable(&sp.child("shoot"), &ms.spec.shoot, &old.spec.shoot));
    } else {
        let name = ms.metadata.name.as_deref().unwrap_or("");
        if garden.seed_exists {
            errs.push(FieldError::invalid(
                Path::new("metadata").child("name"),
                name,
                "a Seed of this name exists already; a ManagedSeed registers a new seed of its own name",
            ));
        }
        if let (Some(other), Some(shoot)) = (&garden.other_for_shoot, &ms.spec.shoot) {
            errs.push(FieldError::forbidden(
                sp.child("shoot").child("name"),
                format!("shoot {} is already registered as a seed by ManagedSeed {other}", shoot.name),
            ));
        }
    }
    errs
}

/// What a ManagedSeed (or a ManagedSeedSet's template, at `sp`) deploys: `gardenlet` is
/// required. `seedTemplate` (a seed registered without a gardenlet, which Gardener has since
/// removed) is not built, so it is refused rather than ignored. `gardenlet.bootstrap`: the
/// managed gardenlet obtains its seed certificate with a short-lived ServiceAccount token that
/// may only ask for that certificate (what Gardener calls `ServiceAccount`); unset means the
/// same. Bootstrap tokens and a configuration bringing its own garden kubeconfig (`None`) are
/// not built either.
pub fn gardenlet(spec: &ManagedSeedSpec, sp: &Path, errs: &mut ErrorList) {
    if spec.seed_template.is_some() {
        errs.push(FieldError::forbidden(
            sp.child("seedTemplate"),
            "a seed without a gardenlet is not supported; set gardenlet instead",
        ));
    }
    let Some(gardenlet) = &spec.gardenlet else {
        errs.push(FieldError::required(sp.child("gardenlet"), "the gardenlet to deploy into the shoot"));
        return;
    };
    if let Some(mode) = gardenlet.bootstrap
        && mode != Bootstrap::ServiceAccount
    {
        let value = serde_json::to_value(mode).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        errs.push(FieldError::unsupported(sp.child("gardenlet").child("bootstrap"), &value, &["ServiceAccount"]));
    }
    // Counts of the Deployment (zero replicas stops the seed's gardenlet, as an operator may).
    if let Some(deployment) = &gardenlet.deployment {
        let dp = sp.child("gardenlet").child("deployment");
        for (field, value) in
            [("replicaCount", deployment.replica_count), ("revisionHistoryLimit", deployment.revision_history_limit)]
        {
            if let Some(n) = value.filter(|n| *n < 0) {
                errs.push(FieldError::invalid(dp.child(field), &n.to_string(), "must be greater than or equal to 0"));
            }
        }
    }
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
            ("neither", |m| m.spec.gardenlet = None, true, Some("spec.gardenlet: Required value")),
            (
                "both",
                |m| m.spec.seed_template = Some(SeedTemplate::default()),
                true,
                Some("spec.seedTemplate: Forbidden"),
            ),
            (
                "bootstrap token",
                |m| m.spec.gardenlet.as_mut().unwrap().bootstrap = Some(Bootstrap::BootstrapToken),
                true,
                Some("spec.gardenlet.bootstrap: Unsupported value: \"BootstrapToken\""),
            ),
            (
                "no bootstrap",
                |m| m.spec.gardenlet.as_mut().unwrap().bootstrap = Some(Bootstrap::None),
                true,
                Some("spec.gardenlet.bootstrap: Unsupported value: \"None\""),
            ),
            (
                "negative replicas",
                |m| {
                    let d = m.spec.gardenlet.as_mut().unwrap().deployment.get_or_insert_with(Default::default);
                    d.replica_count = Some(-1);
                },
                true,
                Some(
                    "spec.gardenlet.deployment.replicaCount: Invalid value: \"-1\": must be greater than or equal to 0",
                ),
            ),
            (
                "negative history",
                |m| {
                    let d = m.spec.gardenlet.as_mut().unwrap().deployment.get_or_insert_with(Default::default);
                    d.revision_history_limit = Some(-2);
                },
                true,
                Some("spec.gardenlet.deployment.revisionHistoryLimit: Invalid value: \"-2\""),
            ),
            (
                "stopped",
                |m| {
                    let d = m.spec.gardenlet.as_mut().unwrap().deployment.get_or_insert_with(Default::default);
                    d.replica_count = Some(0);
                },
                true,
                None,
            ),
            (
                "service account",
                |m| m.spec.gardenlet.as_mut().unwrap().bootstrap = Some(Bootstrap::ServiceAccount),
                true,
                None,
            ),
        ];
        for (name, mutate, exists, want) in cases {
            let mut m = ms();
            mutate(&mut m);
            let errs = validate(&m, None, &Garden { shoot_exists: exists, ..Default::default() });
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(w) => assert!(errs.iter().any(|e| e.to_string().starts_with(w)), "{name}: want {w:?}, got {errs}"),
            }
        }
        let mut changed = ms();
        changed.spec.shoot = Some(ShootReference { name: "other".into() });
        let present = Garden { shoot_exists: true, ..Default::default() };
        assert!(validate(&changed, Some(&ms()), &present).has("spec.shoot"));
        let taken = Garden { seed_exists: true, ..present.clone() };
        assert!(validate(&ms(), None, &taken).to_string().contains("a Seed of this name exists already"));
        assert!(validate(&ms(), Some(&ms()), &taken).is_empty(), "an existing ManagedSeed's own Seed is no collision");
        let twice = Garden { other_for_shoot: Some("garden/first".into()), ..present };
        assert!(
            validate(&ms(), None, &twice)
                .to_string()
                .contains("shoot seed-x is already registered as a seed by ManagedSeed garden/first")
        );
    }
}
