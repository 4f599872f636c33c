//! ExposureClass validation, as Gardener's: a handler (a DNS label, the name gardenlet's
//! configuration knows it by), toleration keys set and unique; handler and scheduling are
//! immutable (shoots already placed by them would no longer match).

use crate::common::{dns_label, immutable, immutable_str};
use crate::field::{ErrorList, FieldError, Path};
use api::core::ExposureClass;
use std::collections::BTreeSet;

/// Every rule for a new or updated ExposureClass (`old` on update).
pub fn validate(ec: &ExposureClass, old: Option<&ExposureClass>) -> ErrorList {
    let mut errs = ErrorList::default();
    let hp = Path::new("handler");
    if ec.spec.handler.is_empty() {
        errs.push(FieldError::required(hp.clone(), "exposure class handler cannot be empty"));
    } else {
        errs.0.extend(dns_label(&hp, &ec.spec.handler, 63));
    }
    if let Some(s) = &ec.spec.scheduling {
        let mut keys = BTreeSet::new();
        for (i, t) in s.tolerations.iter().enumerate() {
            let p = Path::new("scheduling").child("tolerations").index(i).child("key");
            if t.key.is_empty() {
                errs.push(FieldError::required(p, ""));
            } else if !keys.insert(t.key.as_str()) {
                errs.push(FieldError::duplicate(p, &t.key));
            }
        }
    }
    if let Some(old) = old {
        errs.0.extend(immutable_str(&hp, Some(&ec.spec.handler), Some(&old.spec.handler)));
        errs.0.extend(immutable(&Path::new("scheduling"), &ec.spec.scheduling, &old.spec.scheduling));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::core::Toleration;
    use api::core::exposureclass::{ExposureClassFields, ExposureClassScheduling};

    fn class() -> ExposureClass {
        ExposureClass::new(
            "internet",
            ExposureClassFields {
                handler: "internet-config".into(),
                scheduling: Some(ExposureClassScheduling {
                    seed_selector: None,
                    tolerations: vec![Toleration { key: "exposure".into(), value: None }],
                }),
            },
        )
    }

    type Mutation = fn(&mut ExposureClass);

    #[test]
    fn rules() {
        let cases: Vec<(&str, Mutation, bool, Option<&str>)> = vec![
            ("valid", |_| {}, false, None),
            ("no scheduling", |e| e.spec.scheduling = None, false, None),
            (
                "no handler",
                |e| e.spec.handler = String::new(),
                false,
                Some("handler: Required value: exposure class handler cannot be empty"),
            ),
            ("bad handler", |e| e.spec.handler = "Internet_Config".into(), false, Some("handler: Invalid value")),
            (
                "toleration without key",
                |e| e.spec.scheduling.as_mut().unwrap().tolerations[0].key = String::new(),
                false,
                Some("scheduling.tolerations[0].key: Required value"),
            ),
            (
                "duplicate toleration",
                |e| {
                    let s = e.spec.scheduling.as_mut().unwrap();
                    s.tolerations.push(s.tolerations[0].clone());
                },
                false,
                Some("scheduling.tolerations[1].key: Duplicate value: \"exposure\""),
            ),
            ("labels change", |e| e.metadata.labels = Some([("a".into(), "b".into())].into()), true, None),
            (
                "handler changes",
                |e| e.spec.handler = "other".into(),
                true,
                Some("handler: Invalid value: \"other\": field is immutable"),
            ),
            (
                "scheduling changes",
                |e| e.spec.scheduling = None,
                true,
                Some("scheduling: Invalid value: None: field is immutable"),
            ),
        ];
        for (name, mutate, update, want) in cases {
            let mut e = class();
            mutate(&mut e);
            let old = class();
            let errs = validate(&e, update.then_some(&old));
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(want) => {
                    assert!(errs.iter().any(|x| x.to_string().starts_with(want)), "{name}: want {want:?}, got {errs}")
                }
            }
        }
    }
}
