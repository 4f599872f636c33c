//! CredentialsBinding validation (`security.gardener.cloud/v1alpha1`), as Gardener's: the
//! credentials are a `v1` Secret or a WorkloadIdentity, one provider type, Quotas that exist;
//! credentials, quotas and provider are immutable.

use crate::common::{dns_label, dns_subdomain, immutable};
use crate::field::{ErrorList, FieldError, Path};
use api::security::CredentialsBinding;
use std::collections::BTreeSet;

/// The kinds a CredentialsBinding may refer to, with their `apiVersion`.
pub const CREDENTIALS_KINDS: [(&str, &str); 2] =
    [("v1", "Secret"), ("security.gardener.cloud/v1alpha1", "WorkloadIdentity")];

/// Every rule for a new or updated CredentialsBinding (`old` on update). `quota_exists` says
/// whether the Quota `namespace/name` exists (a reference without namespace means the
/// binding's); it is asked on create.
pub fn validate(
    cb: &CredentialsBinding,
    old: Option<&CredentialsBinding>,
    quota_exists: impl Fn(&str, &str) -> bool,
) -> ErrorList {
    let mut errs = ErrorList::default();
    let namespace = cb.metadata.namespace.as_deref().unwrap_or_default();
    let cr = Path::new("credentialsRef");
    let r = &cb.spec.credentials_ref;
    errs.0.extend(dns_subdomain(&cr.child("name"), &r.name));
    if let Some(ns) = &r.namespace {
        errs.0.extend(dns_label(&cr.child("namespace"), ns, 63));
    }
    match (r.api_version.as_deref(), r.kind.as_deref()) {
        (_, None | Some("")) => errs.push(FieldError::required(cr.child("kind"), "must be Secret or WorkloadIdentity")),
        (None | Some(""), _) => errs.push(FieldError::required(cr.child("apiVersion"), "")),
        (Some(version), Some(kind)) => match CREDENTIALS_KINDS.iter().find(|(_, k)| *k == kind) {
            None => errs.push(FieldError::unsupported(cr.child("kind"), kind, &["Secret", "WorkloadIdentity"])),
            Some((want, _)) if *want != version => {
                errs.push(FieldError::unsupported(cr.child("apiVersion"), version, &[*want]))
            }
            Some(_) => {}
        },
    }
    let pt = Path::new("provider").child("type");
    let provider = cb.spec.provider.type_.as_str();
    if provider.is_empty() {
        errs.push(FieldError::required(pt, "must specify a provider type"));
    } else if provider.contains(',') {
        errs.push(FieldError::invalid(pt, provider, "multiple providers specified"));
    }
    let mut seen = BTreeSet::new();
    for (i, q) in cb.spec.quotas.iter().enumerate() {
        let p = Path::new("quotas").index(i);
        let ns = q.namespace.as_deref().unwrap_or(namespace);
        if q.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        } else if !seen.insert((ns, q.name.as_str())) {
            errs.push(FieldError::duplicate(p, &q.name));
        } else if old.is_none() && !quota_exists(ns, &q.name) {
            // On create only: the quotas are immutable, and a Quota deleted later must not
            // block updates of the binding (its finalizers, labels).
            errs.push(FieldError { detail: format!("no Quota {ns}/{}", q.name), ..FieldError::not_found(p, &q.name) });
        }
    }
    if let Some(old) = old {
        errs.0.extend(immutable(&cr, &cb.spec.credentials_ref, &old.spec.credentials_ref));
        errs.0.extend(immutable(&Path::new("quotas"), &cb.spec.quotas, &old.spec.quotas));
        errs.0.extend(immutable(&Path::new("provider"), &cb.spec.provider, &old.spec.provider));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::common::ObjectReference;
    use api::security::CredentialsBindingProvider;

    fn binding() -> CredentialsBinding {
        let mut cb = CredentialsBinding::new("local", Default::default());
        cb.metadata.namespace = Some("garden-dev".into());
        cb.spec.provider = CredentialsBindingProvider { type_: "local".into() };
        cb.spec.credentials_ref = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Secret".into()),
            name: "local-credentials".into(),
            namespace: Some("garden-dev".into()),
        };
        cb.spec.quotas = vec![ObjectReference { name: "team".into(), ..Default::default() }];
        cb
    }

    fn quota_exists(ns: &str, name: &str) -> bool {
        (ns, name) == ("garden-dev", "team") || (ns, name) == ("garden", "shared")
    }

    type Mutation = fn(&mut CredentialsBinding);

    #[test]
    fn create_rules() {
        let cases: Vec<(&str, Mutation, Option<&str>)> = vec![
            ("valid secret", |_| {}, None),
            (
                "valid workload identity",
                |b| {
                    b.spec.credentials_ref.api_version = Some("security.gardener.cloud/v1alpha1".into());
                    b.spec.credentials_ref.kind = Some("WorkloadIdentity".into());
                },
                None,
            ),
            ("quota in another namespace", |b| b.spec.quotas[0] = quota("garden", "shared"), None),
            (
                "config map",
                |b| b.spec.credentials_ref.kind = Some("ConfigMap".into()),
                Some(
                    "credentialsRef.kind: Unsupported value: \"ConfigMap\": supported values: \"Secret\", \"WorkloadIdentity\"",
                ),
            ),
            (
                "workload identity with v1",
                |b| b.spec.credentials_ref.kind = Some("WorkloadIdentity".into()),
                Some(
                    "credentialsRef.apiVersion: Unsupported value: \"v1\": supported values: \"security.gardener.cloud/v1alpha1\"",
                ),
            ),
            (
                "secret with the security group",
                |b| b.spec.credentials_ref.api_version = Some("security.gardener.cloud/v1alpha1".into()),
                Some(
                    "credentialsRef.apiVersion: Unsupported value: \"security.gardener.cloud/v1alpha1\": supported values: \"v1\"",
                ),
            ),
            ("no kind", |b| b.spec.credentials_ref.kind = None, Some("credentialsRef.kind: Required value")),
            (
                "no api version",
                |b| b.spec.credentials_ref.api_version = None,
                Some("credentialsRef.apiVersion: Required value"),
            ),
            ("no name", |b| b.spec.credentials_ref.name = String::new(), Some("credentialsRef.name: Required value")),
            (
                "bad namespace",
                |b| b.spec.credentials_ref.namespace = Some("Garden".into()),
                Some("credentialsRef.namespace: Invalid value: \"Garden\""),
            ),
            ("no provider", |b| b.spec.provider.type_ = String::new(), Some("provider.type: Required value")),
            (
                "two providers",
                |b| b.spec.provider.type_ = "local,aws".into(),
                Some("provider.type: Invalid value: \"local,aws\": multiple providers specified"),
            ),
            (
                "missing quota",
                |b| b.spec.quotas[0].name = "nope".into(),
                Some("quotas[0]: Not found: \"nope\": no Quota garden-dev/nope"),
            ),
            (
                "quota in the wrong namespace",
                |b| b.spec.quotas[0].namespace = Some("garden".into()),
                Some("quotas[0]: Not found: \"team\": no Quota garden/team"),
            ),
            ("quota without name", |b| b.spec.quotas[0].name = String::new(), Some("quotas[0].name: Required value")),
            (
                "duplicate quota",
                |b| b.spec.quotas.push(quota("garden-dev", "team")),
                Some("quotas[1]: Duplicate value: \"team\""),
            ),
        ];
        for (name, mutate, want) in cases {
            let mut b = binding();
            mutate(&mut b);
            let errs = validate(&b, None, quota_exists);
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(w) => assert!(errs.iter().any(|e| e.to_string().starts_with(w)), "{name}: want {w:?}, got {errs}"),
            }
        }
    }

    fn quota(ns: &str, name: &str) -> ObjectReference {
        ObjectReference { name: name.into(), namespace: Some(ns.into()), ..Default::default() }
    }

    #[test]
    fn update_rules() {
        let cases: Vec<(&str, Mutation, Option<&str>)> = vec![
            ("unchanged", |_| {}, None),
            ("labels", |b| b.metadata.labels = Some([("a".to_string(), "b".to_string())].into()), None),
            (
                "other secret",
                |b| b.spec.credentials_ref.name = "other".into(),
                Some("credentialsRef: Invalid value: ObjectReference {"),
            ),
            ("other quotas", |b| b.spec.quotas.clear(), Some("quotas: Invalid value: []: field is immutable")),
            ("other provider", |b| b.spec.provider.type_ = "aws".into(), Some("provider: Invalid value")),
        ];
        for (name, mutate, want) in cases {
            let mut b = binding();
            mutate(&mut b);
            // No Quota exists any more: an update is not refused for that.
            let errs = validate(&b, Some(&binding()), |_, _| false);
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(w) => assert!(errs.iter().any(|e| e.to_string().starts_with(w)), "{name}: want {w:?}, got {errs}"),
            }
        }
    }
}
