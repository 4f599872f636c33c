//! Which registered extension controllers a seed needs, and what that means for its
//! ControllerInstallations. Pure.
//!
//! A seed needs the (kind, type) pairs of:
//! * itself: `BackupBucket`/`BackupEntry` of its backup provider, `DNSRecord` of its DNS provider;
//! * every shoot on it (`spec.seedName` or, during a migration, `status.seedName`):
//!   `Infrastructure`, `ControlPlane`, `Worker` of its provider type, `Network` of its networking
//!   type, `OperatingSystemConfig` of each worker pool's machine image, `ContainerRuntime` of each
//!   pool's runtimes, `DNSRecord` of its DNS providers, `Extension` of each extension it does not
//!   disable, and `BackupEntry` of the seed's backup provider.
//!
//! A ControllerRegistration is required on a seed whose labels its `seedSelector` matches when
//! its policy is `Always`; `AlwaysExceptNoShoots` and the seed has shoots; or (the default,
//! `OnDemand`) one of its resources is needed or is an `Extension` marked `globallyEnabled` on a
//! seed with shoots.

use api::core::controller::ControllerDeploymentPolicy;
use api::core::{ControllerRegistration, Seed, Shoot};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::collections::{BTreeMap, BTreeSet};

/// An extension kind and type, as in a ControllerRegistration's `resources`.
pub type Need = (String, String);

fn need(kind: &str, type_: &str) -> Need {
    (kind.to_string(), type_.to_string())
}

/// What the seed itself needs.
pub fn seed_needs(seed: &Seed) -> BTreeSet<Need> {
    let mut out = BTreeSet::new();
    if let Some(backup) = &seed.spec.backup
        && let Some(provider) = backup.provider.as_deref().or(backup.type_.as_deref())
    {
        out.insert(need("BackupBucket", provider));
        out.insert(need("BackupEntry", provider));
    }
    if let Some(provider) = &seed.spec.dns.provider {
        out.insert(need("DNSRecord", provider.type_()));
    }
    out
}

/// What a shoot on `seed` needs.
pub fn shoot_needs(shoot: &Shoot, seed: &Seed) -> BTreeSet<Need> {
    let spec = &shoot.spec;
    let mut out = BTreeSet::new();
    let provider = spec.provider.type_.as_str();
    for kind in ["Infrastructure", "ControlPlane", "Worker"] {
        out.insert(need(kind, provider));
    }
    if let Some(network) = spec.networking.as_ref().and_then(|n| n.type_.as_deref()) {
        out.insert(need("Network", network));
    }
    for pool in &spec.provider.workers {
        if let Some(image) = &pool.machine.image {
            out.insert(need("OperatingSystemConfig", &image.name));
        }
        for runtime in pool.cri.iter().flat_map(|c| c.container_runtimes.iter()) {
            out.insert(need("ContainerRuntime", &runtime.type_));
        }
    }
    for provider in spec.dns.iter().flat_map(|d| d.providers.iter()) {
        if let Some(t) = &provider.type_ {
            out.insert(need("DNSRecord", t));
        }
    }
    for ext in spec.extensions.iter().filter(|e| e.disabled != Some(true)) {
        out.insert(need("Extension", &ext.type_));
    }
    if let Some(backup) = &seed.spec.backup
        && let Some(provider) = backup.provider.as_deref().or(backup.type_.as_deref())
    {
        out.insert(need("BackupEntry", provider));
    }
    out
}

/// Whether the shoot is (or, during a migration, still is) on `seed`.
pub fn on_seed(shoot: &Shoot, seed: &str) -> bool {
    shoot.spec.seed_name.as_deref() == Some(seed)
        || shoot.status.as_ref().and_then(|s| s.seed_name.as_deref()) == Some(seed)
}

/// Whether `selector` (absent: every seed) matches `labels`. Only `matchLabels` and the
/// `In`/`NotIn`/`Exists`/`DoesNotExist` expressions exist; an unknown operator matches nothing.
pub fn selects(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector else { return true };
    let labels_match = selector.match_labels.iter().flatten().all(|(k, v)| labels.get(k).is_some_and(|have| have == v));
    let expressions_match = selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" => labels.get(&e.key).is_some_and(|v| values.contains(v)),
            "NotIn" => labels.get(&e.key).is_none_or(|v| !values.contains(v)),
            "Exists" => labels.contains_key(&e.key),
            "DoesNotExist" => !labels.contains_key(&e.key),
            _ => false,
        }
    });
    labels_match && expressions_match
}

/// The names of the registrations required on a seed with these `labels`, these `needs`, and
/// shoots or not.
pub fn required<'a>(
    registrations: impl IntoIterator<Item = &'a ControllerRegistration>,
    labels: &BTreeMap<String, String>,
    needs: &BTreeSet<Need>,
    has_shoots: bool,
) -> BTreeSet<String> {
    registrations
        .into_iter()
        .filter(|r| {
            let deployment = r.spec.deployment.as_ref();
            if !selects(deployment.and_then(|d| d.seed_selector.as_ref()), labels) {
                return false;
            }
            match deployment.and_then(|d| d.policy).unwrap_or(ControllerDeploymentPolicy::OnDemand) {
                ControllerDeploymentPolicy::Always => true,
                ControllerDeploymentPolicy::AlwaysExceptNoShoots => has_shoots,
                ControllerDeploymentPolicy::OnDemand => r.spec.resources.iter().any(|res| {
                    needs.contains(&(res.kind.clone(), res.type_.clone()))
                        || (has_shoots && res.kind == "Extension" && res.globally_enabled == Some(true))
                }),
            }
        })
        .filter_map(|r| r.metadata.name.clone())
        .collect()
}

/// The name of the ControllerInstallation of `registration` on `seed`.
pub fn installation_name(registration: &str, seed: &str) -> String {
    format!("{registration}-{seed}")
}

/// What to do about one seed's installations.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Registrations to install (create or update the installation).
    pub install: BTreeSet<String>,
    /// Installations to delete (no longer required, and gardenlet does not report them still
    /// in use).
    pub delete: BTreeSet<String>,
    /// Installations not required any more but still in use (`Required=True`): kept.
    pub keep_in_use: BTreeSet<String>,
}

/// Compares what is `required` with the `existing` installations of the seed (name →
/// registration, and whether gardenlet reports it still required).
pub fn plan(required: &BTreeSet<String>, existing: &BTreeMap<String, (String, bool)>) -> Plan {
    let mut p = Plan { install: required.clone(), ..Default::default() };
    for (name, (registration, in_use)) in existing {
        if required.contains(registration) {
            continue;
        }
        if *in_use {
            p.keep_in_use.insert(name.clone());
        } else {
            p.delete.insert(name.clone());
        }
    }
    p
}

#[cfg(test)]
mod tests;
