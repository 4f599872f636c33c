//! Extension types (Gardener's `ExtensionValidator` admission plugin): a Shoot or Seed may only
//! name extension types that some ControllerRegistration serves, because nothing else could
//! ever build them. Pure: the ControllerRegistrations come in as values ([`Registered`]).
//!
//! What is required of a Shoot ([`validate_shoot`]):
//! - `spec.provider.type`: kinds Infrastructure, ControlPlane and Worker (not for a workerless
//!   shoot);
//! - `spec.networking.type`: kind Network (not for a workerless shoot);
//! - `spec.provider.workers[i].machine.image.name`: kind OperatingSystemConfig;
//! - `spec.provider.workers[i].cri.containerRuntimes[j].type`: kind ContainerRuntime;
//! - `spec.dns.providers[i].type` of the primary provider (not `unmanaged`): kind DNSRecord;
//! - `spec.extensions[i].type`: kind Extension (for a workerless shoot also
//!   `workerlessSupported`).
//!
//! Of a Seed ([`validate_seed`]): `spec.provider.type` (kind ControlPlane),
//! `spec.backup.provider` (kinds BackupBucket and BackupEntry), and, when the seed has an
//! ingress, `spec.dns.provider.type` (kind DNSRecord).
//!
//! Only registrations that are primary for a resource (`primary` absent or true) count. On
//! update only what the change adds is judged: a kind and type the old object already required
//! is not judged again, so an object whose registration went away can still be updated
//! (Gardener re-judges every type whenever the spec changes; this is deliberately lenient).

use crate::field::{ErrorList, ErrorType, FieldError, Path};
use api::core::seed::SeedSpec;
use api::core::{ControllerRegistration, ShootSpec};
use std::collections::{BTreeMap, BTreeSet};

/// The DNS provider type that needs no DNSRecord controller.
const DNS_UNMANAGED: &str = "unmanaged";

/// What the garden's ControllerRegistrations serve: per kind the types a primary controller is
/// registered for, and the Extension types that support workerless shoots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Registered {
    kinds: BTreeMap<String, BTreeSet<String>>,
    workerless_extensions: BTreeSet<String>,
}

impl Registered {
    /// Collects the primary resources of `registrations`.
    pub fn new<'a>(registrations: impl IntoIterator<Item = &'a ControllerRegistration>) -> Self {
        let mut out = Self::default();
        for resource in registrations.into_iter().flat_map(|r| r.spec.resources.iter()) {
            if resource.primary == Some(false) {
                continue;
            }
            out.kinds.entry(resource.kind.clone()).or_default().insert(resource.type_.clone());
            if resource.kind == "Extension" && resource.workerless_supported == Some(true) {
                out.workerless_extensions.insert(resource.type_.clone());
            }
        }
        out
    }

    /// Whether a primary controller serves `kind` objects of type `type_`.
    pub fn serves(&self, kind: &str, type_: &str) -> bool {
        self.kinds.get(kind).is_some_and(|t| t.contains(type_))
    }

    /// The types registered for `kind`, sorted.
    pub fn types(&self, kind: &str) -> impl Iterator<Item = &str> {
        self.kinds.get(kind).into_iter().flatten().map(String::as_str)
    }
}

/// One field that names an extension type, and the kinds that type must be served for.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Required {
    path: Path,
    type_: String,
    kinds: &'static [&'static str],
}

impl Required {
    fn new(path: Path, type_: &str, kinds: &'static [&'static str]) -> Self {
        Self { path, type_: type_.to_string(), kinds }
    }
}

/// The extension types a shoot spec names.
fn shoot_required(spec: &ShootSpec) -> Vec<Required> {
    let spec_path = Path::new("spec");
    let provider = spec_path.child("provider");
    let workerless = spec.provider.workers.is_empty();
    let mut out = Vec::new();
    if !workerless {
        out.push(Required::new(
            provider.child("type"),
            &spec.provider.type_,
            &["Infrastructure", "ControlPlane", "Worker"],
        ));
        if let Some(t) = spec.networking.as_ref().and_then(|n| n.type_.as_deref()) {
            out.push(Required::new(spec_path.child("networking").child("type"), t, &["Network"]));
        }
    }
    let workers = provider.child("workers");
    for (i, w) in spec.provider.workers.iter().enumerate() {
        if let Some(image) = &w.machine.image {
            let path = workers.index(i).child("machine").child("image").child("name");
            out.push(Required::new(path, &image.name, &["OperatingSystemConfig"]));
        }
        for (j, runtime) in w.cri.iter().flat_map(|c| c.container_runtimes.iter()).enumerate() {
            let path = workers.index(i).child("cri").child("containerRuntimes").index(j).child("type");
            out.push(Required::new(path, &runtime.type_, &["ContainerRuntime"]));
        }
    }
    let dns_providers = spec_path.child("dns").child("providers");
    for (i, p) in spec.dns.iter().flat_map(|d| d.providers.iter()).enumerate() {
        match p.type_.as_deref() {
            Some(t) if t != DNS_UNMANAGED && p.primary == Some(true) => {
                out.push(Required::new(dns_providers.index(i).child("type"), t, &["DNSRecord"]));
            }
            _ => {}
        }
    }
    let extensions = spec_path.child("extensions");
    for (i, e) in spec.extensions.iter().enumerate() {
        out.push(Required::new(extensions.index(i).child("type"), &e.type_, &["Extension"]));
    }
    out
}

/// The extension types a seed spec names.
fn seed_required(spec: &SeedSpec) -> Vec<Required> {
    let spec_path = Path::new("spec");
    let mut out =
        vec![Required::new(spec_path.child("provider").child("type"), &spec.provider.type_, &["ControlPlane"])];
    if let Some(t) = spec.backup.as_ref().and_then(|b| b.provider_type()) {
        let field = if spec.backup.as_ref().is_some_and(|b| b.provider.is_some()) { "provider" } else { "type" };
        out.push(Required::new(spec_path.child("backup").child(field), t, &["BackupBucket", "BackupEntry"]));
    }
    if spec.ingress.is_some()
        && let Some(provider) = &spec.dns.provider
    {
        let path = match provider {
            api::core::seed::SeedDnsProviderRef::Type(_) => spec_path.child("dns").child("provider"),
            api::core::seed::SeedDnsProviderRef::Provider(_) => spec_path.child("dns").child("provider").child("type"),
        };
        out.push(Required::new(path, provider.type_(), &["DNSRecord"]));
    }
    out
}

/// Whether `old` already required `kind` of `type_` (then an update does not judge it again).
fn already_required(old: &[Required], kind: &str, type_: &str) -> bool {
    old.iter().any(|r| r.type_ == type_ && r.kinds.contains(&kind))
}

/// Shows a value the way field errors do (quoted, truncated).
fn quoted(value: &str) -> String {
    let shown: String = value.chars().take(256).collect();
    format!("{shown:?}")
}

/// The refusal of one field whose type `missing` kinds do not serve.
fn unserved(required: &Required, missing: &[&str], registered: &Registered) -> FieldError {
    let types: BTreeSet<&str> = missing.iter().flat_map(|k| registered.types(k)).collect();
    let listed = if types.is_empty() {
        "none".to_string()
    } else {
        types.iter().take(20).map(|t| quoted(t)).collect::<Vec<_>>().join(", ")
    };
    let kinds = match missing {
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
        [] => String::new(),
    };
    FieldError {
        path: required.path.clone(),
        type_: ErrorType::Unsupported,
        value: Some(quoted(&required.type_)),
        detail: format!(
            "no ControllerRegistration serves {kinds} type {}; registered: {listed}",
            quoted(&required.type_)
        ),
    }
}

/// Judges `new` against `registered`, skipping what `old` already required.
fn judge(new: &[Required], old: &[Required], registered: &Registered) -> ErrorList {
    let mut errs = ErrorList::default();
    for required in new {
        let missing: Vec<&str> = required
            .kinds
            .iter()
            .copied()
            .filter(|k| !already_required(old, k, &required.type_) && !registered.serves(k, &required.type_))
            .collect();
        if !missing.is_empty() {
            errs.push(unserved(required, &missing, registered));
        }
    }
    errs
}

/// The Shoot rule: every extension type `new` names is served by a registration (on update,
/// every one it names anew). A workerless shoot's Extension types must also support workerless
/// shoots.
pub fn validate_shoot(new: &ShootSpec, old: Option<&ShootSpec>, registered: &Registered) -> ErrorList {
    let required = shoot_required(new);
    let before = old.map(shoot_required).unwrap_or_default();
    let mut errs = judge(&required, &before, registered);
    if new.provider.workers.is_empty() {
        let was_workerless = old.is_some_and(|o| o.provider.workers.is_empty());
        for r in required.iter().filter(|r| r.kinds == ["Extension"]) {
            let known = was_workerless && already_required(&before, "Extension", &r.type_);
            if !known
                && registered.serves("Extension", &r.type_)
                && !registered.workerless_extensions.contains(&r.type_)
            {
                errs.push(FieldError {
                    path: r.path.clone(),
                    type_: ErrorType::Unsupported,
                    value: Some(quoted(&r.type_)),
                    detail: "the shoot has no workers and the ControllerRegistration of this Extension type does not support workerless shoots".into(),
                });
            }
        }
    }
    errs
}

/// The Seed rule: its provider, backup provider and (with an ingress) DNS provider types are
/// served by a registration (on update, those it names anew).
pub fn validate_seed(new: &SeedSpec, old: Option<&SeedSpec>, registered: &Registered) -> ErrorList {
    let before = old.map(seed_required).unwrap_or_default();
    judge(&seed_required(new), &before, registered)
}

#[cfg(test)]
mod tests;
