//! The ManagedSeed controller's decisions, as pure functions: whether this gardenlet is
//! responsible, whether the shoot is ready to become a seed, the configuration of the gardenlet
//! deployed into it, whether its Seed is registered, who still uses the seed, and the status.

use super::manifests;
use crate::config::{GardenletConfig, SeedConfig};
use api::common::{ConditionStatus, LastOperationState, LastOperationType};
use api::core::{Seed, Shoot};
use api::helpers::conditions::{ConditionUpdate, get_condition, set_condition};
use api::helpers::constants::conditions::GARDENLET_READY;
use api::seedmanagement::{ManagedSeed, ManagedSeedStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Condition: the ManagedSeed's shoot is reconciled (Gardener's `ShootReconciled`).
pub const SHOOT_RECONCILED: &str = "ShootReconciled";
/// Condition: gardenlet is deployed into the shoot and has registered a Ready Seed (Gardener's
/// `SeedRegistered`).
pub const SEED_REGISTERED: &str = "SeedRegistered";

/// The seed this gardenlet's ManagedSeed controller serves a ManagedSeed for: the one that runs
/// (or, before the first reconcile, is to run) its shoot's control plane.
pub fn hosting_seed(shoot: &Shoot) -> Option<&str> {
    let status = shoot.status.as_ref().and_then(|s| s.seed_name.as_deref());
    status.or(shoot.spec.seed_name.as_deref())
}

/// Why the shoot cannot host a seed yet; `Ok` when its last operation (create, reconcile or
/// restore) succeeded for its current generation.
pub fn shoot_reconciled(shoot: &Shoot) -> Result<(), String> {
    let name = shoot.name_any();
    if shoot.metadata.deletion_timestamp.is_some() {
        return Err(format!("Shoot {name} is being deleted"));
    }
    let status = shoot.status.as_ref();
    let Some(op) = status.and_then(|s| s.last_operation.as_ref()) else {
        return Err(format!("Shoot {name} has not been reconciled yet"));
    };
    if op.type_ == LastOperationType::Delete || op.type_ == LastOperationType::Migrate {
        return Err(format!("Shoot {name}: the last operation is {} ({})", op.type_, op.state));
    }
    if op.state != LastOperationState::Succeeded {
        return Err(format!("Shoot {name}: {} {}: {}", op.type_, op.state, op.description));
    }
    if status.and_then(|s| s.observed_generation) != shoot.metadata.generation {
        return Err(format!("Shoot {name}: its latest generation is not reconciled yet"));
    }
    if status.is_some_and(|s| s.hibernated) {
        return Err(format!("Shoot {name} is hibernated"));
    }
    Ok(())
}

/// Why the seed is not registered yet; `Ok` when the Seed exists and its gardenlet reports
/// `GardenletReady`.
pub fn seed_registered(name: &str, seed: Option<&Seed>) -> Result<(), String> {
    let Some(seed) = seed else { return Err(format!("waiting for gardenlet to register Seed {name}")) };
    let conditions = seed.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    match get_condition(conditions, GARDENLET_READY) {
        Some(c) if c.status == ConditionStatus::True => Ok(()),
        Some(c) => Err(format!("Seed {name}: {GARDENLET_READY} is {:?}: {}", c.status, c.message)),
        None => Err(format!("Seed {name}: waiting for gardenlet's first {GARDENLET_READY}")),
    }
}

/// The shoots (`namespace/name`) that are scheduled to or run on seed `name`, sorted.
pub fn seed_users(name: &str, shoots: &[Shoot]) -> Vec<String> {
    let mut users: Vec<String> = shoots
        .iter()
        .filter(|s| {
            s.spec.seed_name.as_deref() == Some(name)
                || s.status.as_ref().and_then(|st| st.seed_name.as_deref()) == Some(name)
        })
        .map(|s| format!("{}/{}", s.namespace().unwrap_or_default(), s.name_any()))
        .collect();
    users.sort();
    users
}

/// A ManagedSeed's gardenlet configuration cannot be used; the message names the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("ManagedSeed {managed_seed}: {field}: {problem}")]
pub struct InvalidConfig {
    pub managed_seed: String,
    pub field: String,
    pub problem: String,
}

/// Where the gardenlet in the shoot finds its bootstrap kubeconfig for the garden (the Secret
/// mounted there; the token file next to it).
pub const GARDEN_KUBECONFIG_PATH: &str = "/etc/gardenlet/garden/kubeconfig";
/// Where it finds the kubeconfig of its seed, the shoot it runs in (its ServiceAccount).
pub const SEED_KUBECONFIG_PATH: &str = "/etc/gardenlet/garden/seed-kubeconfig";

/// The configuration of the gardenlet deployed into the ManagedSeed's shoot.
///
/// `spec.gardenlet.config` is Gardener's GardenletConfiguration as far as this gardenlet has
/// it: `seedConfig` (`metadata.labels` and `spec`, the Seed's spec, required) and any of this
/// gardenlet's own configuration keys (docs/gardenlet.md), e.g. `controllers` or
/// `controlPlaneRequestsPercent`. With `mergeWithParent` (the default, as in Gardener) the
/// parent's settings are the starting point. The Seed is named like the ManagedSeed; the garden
/// identity is bootstrapped by CSR (`gardenClientConnection`) with [`GARDEN_KUBECONFIG_PATH`]
/// and kept in the shoot's Secret `garden/gardenlet-kubeconfig`; the seed (the shoot) is
/// reached through [`SEED_KUBECONFIG_PATH`] with gardenlet's ServiceAccount.
pub fn gardenlet_config(parent: &GardenletConfig, ms: &ManagedSeed) -> Result<GardenletConfig, InvalidConfig> {
    let name = ms.name_any();
    let invalid =
        |field: &str, problem: String| InvalidConfig { managed_seed: name.clone(), field: field.into(), problem };
    let Some(gardenlet) = ms.spec.gardenlet.as_ref() else {
        return Err(invalid(
            "spec.gardenlet",
            "is required (a ManagedSeed with seedTemplate is not served by gardenlet)".into(),
        ));
    };
    let given: Value = gardenlet.config.as_ref().map(|c| c.0.clone()).unwrap_or(Value::Null);
    let mut given = match given {
        Value::Object(map) => map,
        Value::Null => serde_json::Map::new(),
        _ => return Err(invalid("spec.gardenlet.config", "must be an object".into())),
    };
    given.remove("apiVersion");
    given.remove("kind");
    let seed_config = given.remove("seedConfig").unwrap_or(Value::Null);
    let spec = seed_config.get("spec").cloned().ok_or_else(|| {
        invalid("spec.gardenlet.config.seedConfig.spec", "is required: the spec of the Seed to register".into())
    })?;
    let spec = serde_json::from_value(spec)
        .map_err(|e| invalid("spec.gardenlet.config.seedConfig.spec", format!("is not a Seed spec: {e}")))?;
    let labels: BTreeMap<String, String> = match seed_config.pointer("/metadata/labels") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(l) => serde_json::from_value(l.clone())
            .map_err(|e| invalid("spec.gardenlet.config.seedConfig.metadata.labels", e.to_string()))?,
    };
    for forbidden in ["seed", "gardenKubeconfig", "seedKubeconfig", "gardenClientConnection"] {
        if given.contains_key(forbidden) {
            return Err(invalid(
                &format!("spec.gardenlet.config.{forbidden}"),
                "is set by the ManagedSeed controller and must not be given".into(),
            ));
        }
    }
    let merge = gardenlet.merge_with_parent.unwrap_or(true);
    let mut base = if merge {
        let mut parent = parent.clone();
        parent.managed_seeds = Default::default();
        serde_json::to_value(parent).map_err(|e| invalid("spec.gardenlet.config", e.to_string()))?
    } else {
        Value::Object(serde_json::Map::new())
    };
    let base_map = base.as_object_mut().ok_or_else(|| invalid("spec.gardenlet.config", "internal".into()))?;
    for (k, v) in given {
        merge_value(base_map.entry(k).or_insert(Value::Null), v);
    }
    let (capacity, reserved) = if merge {
        (parent.seed.capacity_shoots, parent.seed.reserved_shoots)
    } else {
        (SeedConfig::DEFAULT_CAPACITY, 0)
    };
    let seed = SeedConfig { name: name.clone(), labels, spec, capacity_shoots: capacity, reserved_shoots: reserved };
    base_map.insert(
        "seed".into(),
        serde_json::to_value(seed).map_err(|e| invalid("spec.gardenlet.config", e.to_string()))?,
    );
    base_map.remove("gardenKubeconfig");
    base_map.insert(
        "gardenClientConnection".into(),
        json!({"bootstrapKubeconfig": GARDEN_KUBECONFIG_PATH,
               "kubeconfigSecret": {"namespace": manifests::NAMESPACE, "name": manifests::KUBECONFIG_SECRET}}),
    );
    base_map.insert("seedKubeconfig".into(), Value::String(SEED_KUBECONFIG_PATH.into()));
    let config: GardenletConfig = serde_json::from_value(base)
        .map_err(|e| invalid("spec.gardenlet.config", format!("is not a gardenlet configuration: {e}")))?;
    config.validate().map_err(|(field, problem)| invalid(&format!("spec.gardenlet.config.{field}"), problem))?;
    Ok(config)
}

/// JSON merge: objects merge key by key, anything else replaces.
fn merge_value(base: &mut Value, given: Value) {
    match (base, given) {
        (Value::Object(b), Value::Object(g)) => {
            for (k, v) in g {
                merge_value(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, g) => *b = g,
    }
}

/// What the conditions should say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// `Ok`, or why the shoot is not reconciled.
    pub shoot: Result<(), String>,
    /// `None` while the shoot is not reconciled (the condition is left as it is); otherwise
    /// `Ok`, or why the seed is not registered (with a reason).
    pub seed: Option<Result<(), (&'static str, String)>>,
}

/// The status to write, `None` when the current one already says it.
pub fn status(
    current: Option<&ManagedSeedStatus>,
    generation: Option<i64>,
    observed: &Observed,
    now: &Time,
) -> Option<ManagedSeedStatus> {
    let mut next = current.cloned().unwrap_or_default();
    next.observed_generation = generation.unwrap_or_default();
    let (status, reason, message) = match &observed.shoot {
        Ok(()) => (ConditionStatus::True, "ShootReconciled", "The shoot is reconciled.".to_string()),
        Err(why) => (ConditionStatus::False, "ShootNotReconciled", why.clone()),
    };
    set_condition(
        &mut next.conditions,
        ConditionUpdate { type_: SHOOT_RECONCILED, status, reason, message: &message, codes: &[] },
        now,
    );
    if let Some(seed) = &observed.seed {
        let (status, reason, message) = match seed {
            Ok(()) => (
                ConditionStatus::True,
                "SeedRegistered",
                "gardenlet runs in the shoot and its Seed is Ready.".to_string(),
            ),
            Err((reason, why)) => (ConditionStatus::False, *reason, why.clone()),
        };
        set_condition(
            &mut next.conditions,
            ConditionUpdate { type_: SEED_REGISTERED, status, reason, message: &message, codes: &[] },
            now,
        );
    }
    (Some(&next) != current).then_some(next)
}

#[cfg(test)]
mod tests;
