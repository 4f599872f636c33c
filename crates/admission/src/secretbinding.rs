//! SecretBinding validation: the referenced Secret, the provider type and the quotas; the
//! references are immutable.

use crate::common::{dns_label, dns_subdomain, immutable};
use crate::field::{ErrorList, FieldError, Path};
use api::core::SecretBinding;
use std::collections::BTreeSet;

/// Every rule for a new or updated SecretBinding (`old` on update).
pub fn validate(sb: &SecretBinding, old: Option<&SecretBinding>) -> ErrorList {
    let mut errs = ErrorList::default();
    let sr = Path::new("secretRef");
    errs.0.extend(dns_subdomain(&sr.child("name"), &sb.spec.secret_ref.name));
    if let Some(ns) = &sb.spec.secret_ref.namespace {
        errs.0.extend(dns_label(&sr.child("namespace"), ns, 63));
    }
    match &sb.spec.provider {
        None => {
            errs.push(FieldError::required(Path::new("provider"), "must name the provider type of the credentials"))
        }
        Some(p) if p.types().next().is_none() => {
            errs.push(FieldError::required(Path::new("provider").child("type"), ""))
        }
        Some(_) => {}
    }
    let mut seen = BTreeSet::new();
    for (i, q) in sb.spec.quotas.iter().enumerate() {
        let p = Path::new("quotas").index(i);
        if q.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        } else if !seen.insert((q.namespace.clone(), q.name.clone())) {
            errs.push(FieldError::duplicate(p, &q.name));
        }
    }
    if let Some(old) = old {
        errs.0.extend(immutable(&sr, &sb.spec.secret_ref, &old.spec.secret_ref));
        errs.0.extend(immutable(&Path::new("quotas"), &sb.spec.quotas, &old.spec.quotas));
        if old.spec.provider.is_some() {
            errs.0.extend(immutable(&Path::new("provider"), &sb.spec.provider, &old.spec.provider));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::common::{ObjectReference, SecretReference};
    use api::core::secretbinding::SecretBindingProvider;

    fn binding() -> SecretBinding {
        let mut sb = SecretBinding::new("local", Default::default());
        sb.spec.secret_ref = SecretReference { name: "local-credentials".into(), namespace: Some("garden-dev".into()) };
        sb.spec.provider = Some(SecretBindingProvider { type_: "local".into() });
        sb
    }

    type Mutation = fn(&mut SecretBinding);

    #[test]
    fn rules() {
        let q = |n: &str| ObjectReference { name: n.into(), namespace: Some("garden".into()), ..Default::default() };
        let cases: Vec<(&str, Mutation, Option<&str>)> = vec![
            ("valid", |_| {}, None),
            ("no secret", |s| s.spec.secret_ref.name = String::new(), Some("secretRef.name: Required value")),
            (
                "bad namespace",
                |s| s.spec.secret_ref.namespace = Some("Garden".into()),
                Some("secretRef.namespace: Invalid value: \"Garden\""),
            ),
            ("no provider", |s| s.spec.provider = None, Some("provider: Required value")),
            (
                "empty provider",
                |s| s.spec.provider = Some(SecretBindingProvider { type_: " , ".into() }),
                Some("provider.type: Required value"),
            ),
            (
                "quota without name",
                |s| s.spec.quotas = vec![ObjectReference::default()],
                Some("quotas[0].name: Required value"),
            ),
        ];
        for (name, mutate, want) in cases {
            let mut s = binding();
            mutate(&mut s);
            let errs = validate(&s, None);
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(w) => assert!(errs.iter().any(|e| e.to_string().starts_with(w)), "{name}: want {w:?}, got {errs}"),
            }
        }
        let mut dup = binding();
        dup.spec.quotas = vec![q("a"), q("a")];
        assert!(validate(&dup, None).has("quotas[1]"));
        let mut changed = binding();
        changed.spec.secret_ref.name = "other".into();
        assert!(validate(&changed, Some(&binding())).to_string().contains("secretRef: Invalid value"));
        assert!(validate(&binding(), Some(&binding())).is_empty());
    }
}
