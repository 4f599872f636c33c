//! WorkloadIdentity validation (`security.gardener.cloud/v1alpha1`), as Gardener's: at least one
//! audience and none empty; one target system type, immutable.

use crate::common::immutable_str;
use crate::field::{ErrorList, FieldError, Path};
use api::security::WorkloadIdentity;

/// Every rule for a new or updated WorkloadIdentity (`old` on update).
pub fn validate(wi: &WorkloadIdentity, old: Option<&WorkloadIdentity>) -> ErrorList {
    let mut errs = ErrorList::default();
    let sp = Path::new("spec");
    let ap = sp.child("audiences");
    if wi.spec.audiences.is_empty() {
        errs.push(FieldError::required(ap.clone(), "must provide at least one audience"));
    }
    for (i, a) in wi.spec.audiences.iter().enumerate() {
        if a.is_empty() {
            errs.push(FieldError::required(ap.index(i), "must specify non-empty audience"));
        }
    }
    let tp = sp.child("targetSystem").child("type");
    let target = wi.spec.target_system.type_.as_str();
    if target.is_empty() {
        errs.push(FieldError::required(tp.clone(), "must specify a provider type"));
    } else if target.contains(',') {
        errs.push(FieldError::invalid(tp.clone(), target, "multiple providers specified"));
    }
    if let Some(old) = old {
        errs.0.extend(immutable_str(&tp, Some(target), Some(old.spec.target_system.type_.as_str())));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::security::{TargetSystem, WorkloadIdentitySpec};

    fn identity() -> WorkloadIdentity {
        WorkloadIdentity::new(
            "local",
            WorkloadIdentitySpec {
                audiences: vec!["local-cloud".into()],
                target_system: TargetSystem { type_: "local".into(), provider_config: None },
            },
        )
    }

    type Mutation = fn(&mut WorkloadIdentity);

    #[test]
    fn rules() {
        // (name, change to the old object for an update or None for a create, want)
        let cases: Vec<(&str, Mutation, bool, Option<&str>)> = vec![
            ("valid", |_| {}, false, None),
            (
                "no audience",
                |w| w.spec.audiences.clear(),
                false,
                Some("spec.audiences: Required value: must provide at least one audience"),
            ),
            (
                "empty audience",
                |w| w.spec.audiences.push(String::new()),
                false,
                Some("spec.audiences[1]: Required value: must specify non-empty audience"),
            ),
            (
                "no target type",
                |w| w.spec.target_system.type_ = String::new(),
                false,
                Some("spec.targetSystem.type: Required value"),
            ),
            (
                "two target types",
                |w| w.spec.target_system.type_ = "local,aws".into(),
                false,
                Some("spec.targetSystem.type: Invalid value: \"local,aws\": multiple providers specified"),
            ),
            ("audiences change", |w| w.spec.audiences = vec!["other".into()], true, None),
            (
                "target type changes",
                |w| w.spec.target_system.type_ = "aws".into(),
                true,
                Some("spec.targetSystem.type: Invalid value: \"aws\": field is immutable"),
            ),
        ];
        for (name, mutate, update, want) in cases {
            let mut w = identity();
            mutate(&mut w);
            let old = identity();
            let errs = validate(&w, update.then_some(&old));
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(want) => {
                    assert!(errs.iter().any(|e| e.to_string().starts_with(want)), "{name}: want {want:?}, got {errs}")
                }
            }
        }
    }
}
