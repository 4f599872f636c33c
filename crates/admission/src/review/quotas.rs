//! The Quotas a Shoot counts against, each with the other shoots in its scope, for
//! [`crate::quota::validate`]: the Quotas listed by the shoot's SecretBinding or
//! CredentialsBinding (a reference without namespace means the binding's). Scope `Project`: the
//! shoots in the shoot's namespace; `Secret`: the shoots whose binding (of either kind) refers
//! to the same credentials.

use super::lookup::Lookup;
use crate::field::ErrorList;
use crate::quota;
use api::common::ObjectReference;
use api::core::Shoot;
use api::core::cloudprofile::CloudProfileSpec;
use std::sync::Arc;

/// What a shoot's binding refers to: the credentials (kind, namespace, name) and the Quotas
/// (namespace, name).
#[derive(Debug, PartialEq, Eq)]
struct Binding {
    credentials: (String, String, String),
    quotas: Vec<(String, String)>,
}

fn in_namespace(r: &ObjectReference, namespace: &str) -> (String, String) {
    (r.namespace.clone().unwrap_or_else(|| namespace.to_string()), r.name.clone())
}

/// The binding `shoot` names, when it exists (`spec.secretBindingName`, else
/// `spec.credentialsBindingName`; admission allows only one).
fn binding_of(lookup: &dyn Lookup, shoot: &Shoot) -> Option<Binding> {
    let ns = shoot.metadata.namespace.as_deref().unwrap_or_default();
    if let Some(name) = shoot.spec.secret_binding_name.as_deref() {
        let b = lookup.secret_binding(ns, name)?;
        let (sns, sname) =
            (b.spec.secret_ref.namespace.clone().unwrap_or_else(|| ns.to_string()), b.spec.secret_ref.name.clone());
        return Some(Binding {
            credentials: ("Secret".into(), sns, sname),
            quotas: b.spec.quotas.iter().map(|q| in_namespace(q, ns)).collect(),
        });
    }
    let name = shoot.spec.credentials_binding_name.as_deref()?;
    let b = lookup.credentials_binding(ns, name)?;
    let r = &b.spec.credentials_ref;
    let (cns, cname) = in_namespace(r, ns);
    Some(Binding {
        credentials: (r.kind.clone().unwrap_or_default(), cns, cname),
        quotas: b.spec.quotas.iter().map(|q| in_namespace(q, ns)).collect(),
    })
}

/// The quota rules for `shoot` (`old` before an update) against `profile`.
pub(super) fn check(lookup: &dyn Lookup, shoot: &Shoot, old: Option<&Shoot>, profile: &CloudProfileSpec) -> ErrorList {
    let Some(binding) = binding_of(lookup, shoot) else { return ErrorList::default() };
    let namespace = shoot.metadata.namespace.as_deref().unwrap_or_default();
    let name = shoot.metadata.name.as_deref().unwrap_or_default();
    let all = lookup.shoots();
    let others: Vec<&Shoot> = all
        .iter()
        .map(Arc::as_ref)
        .filter(|s| !(s.metadata.namespace.as_deref() == Some(namespace) && s.metadata.name.as_deref() == Some(name)))
        .collect();
    let quotas: Vec<Arc<api::core::Quota>> =
        binding.quotas.iter().filter_map(|(ns, name)| lookup.quota(ns, name)).collect();
    let scoped: Vec<quota::Scoped<'_>> = quotas
        .iter()
        .map(|q| {
            let in_scope: Vec<&Shoot> = match q.spec.scope.kind.as_str() {
                "Secret" => others
                    .iter()
                    .copied()
                    .filter(|s| binding_of(lookup, s).is_some_and(|b| b.credentials == binding.credentials))
                    .collect(),
                _ => others.iter().copied().filter(|s| s.metadata.namespace.as_deref() == Some(namespace)).collect(),
            };
            quota::Scoped {
                quota: format!(
                    "{}/{}",
                    q.metadata.namespace.as_deref().unwrap_or_default(),
                    q.metadata.name.as_deref().unwrap_or_default()
                ),
                limits: &q.spec.metrics,
                others: in_scope,
            }
        })
        .collect();
    quota::validate(shoot, old, &scoped, profile)
}

#[cfg(test)]
mod tests;
