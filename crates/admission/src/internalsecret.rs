//! InternalSecret admission, as the Secret API treats a Secret (Gardener validates an
//! InternalSecret with the Secret rules): defaulting merges `stringData` into `data`; validation
//! checks keys, base64 values and the 1 MiB limit, and an `immutable: true` object keeps its data
//! and stays immutable. The type never changes. Values never appear in errors.

use crate::common::immutable_str;
use crate::field::{ErrorList, ErrorType, FieldError, Path};
use api::core::InternalSecret;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use std::collections::BTreeMap;

/// The most data a Secret (and so an InternalSecret) may hold, in decoded bytes.
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

/// Merges `stringData` into `data` (base64-encoded; a `stringData` key wins over the same key in
/// `data`, as the Secret API does) and clears `stringData`.
pub fn default(s: &mut InternalSecret) {
    for (k, v) in std::mem::take(&mut s.spec.string_data) {
        s.spec.data.insert(k, STANDARD.encode(v));
    }
}

/// `data` with `stringData` merged in (what is stored once defaulting ran).
fn effective(s: &InternalSecret) -> BTreeMap<String, String> {
    let mut data = s.spec.data.clone();
    for (k, v) in &s.spec.string_data {
        data.insert(k.clone(), STANDARD.encode(v));
    }
    data
}

/// A Secret key: `[-._a-zA-Z0-9]+`, at most 253 characters, not `.` or `..`.
fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 253
        && k != "."
        && k != ".."
        && k.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

/// Every rule for a new or updated InternalSecret (`old` on update).
pub fn validate(s: &InternalSecret, old: Option<&InternalSecret>) -> ErrorList {
    let mut errs = ErrorList::default();
    let dp = Path::new("data");
    let mut size = 0usize;
    for (k, v) in &s.spec.data {
        if !valid_key(k) {
            errs.push(FieldError::invalid(
                dp.clone(),
                k,
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            ));
        }
        match STANDARD.decode(v) {
            Ok(bytes) => size += bytes.len(),
            Err(_) => errs.push(FieldError::invalid(dp.key(k), "<redacted>", "must be base64-encoded")),
        }
    }
    for (k, v) in &s.spec.string_data {
        if !valid_key(k) {
            errs.push(FieldError::invalid(
                Path::new("stringData"),
                k,
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            ));
        }
        size += v.len();
    }
    if size > MAX_DATA_BYTES {
        errs.push(FieldError {
            path: dp.clone(),
            type_: ErrorType::Invalid,
            value: None,
            detail: format!("may not be more than {MAX_DATA_BYTES} bytes (is {size})"),
        });
    }
    if let Some(old) = old {
        errs.0.extend(immutable_str(&Path::new("type"), s.spec.type_.as_deref(), old.spec.type_.as_deref()));
        if old.spec.immutable == Some(true) {
            if s.spec.immutable != Some(true) {
                errs.push(FieldError::forbidden(Path::new("immutable"), "field is immutable when `immutable` is set"));
            }
            if effective(s) != effective(old) {
                errs.push(FieldError::forbidden(dp, "field is immutable when `immutable` is set"));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::core::InternalSecretFields;

    fn secret(immutable: Option<bool>) -> InternalSecret {
        InternalSecret::new(
            "shoot.ca-client",
            InternalSecretFields {
                immutable,
                data: [("ca.crt".to_string(), STANDARD.encode("pem"))].into(),
                string_data: BTreeMap::new(),
                type_: Some("Opaque".into()),
            },
        )
    }

    #[test]
    fn string_data_is_merged_into_data() {
        let mut s = secret(None);
        s.spec.string_data = [("ca.crt".to_string(), "new".to_string()), ("b".to_string(), "x".to_string())].into();
        default(&mut s);
        assert!(s.spec.string_data.is_empty());
        assert_eq!(s.spec.data.get("ca.crt").map(String::as_str), Some(STANDARD.encode("new").as_str()));
        assert_eq!(s.spec.data.get("b").map(String::as_str), Some("eA=="));
        let again = s.clone();
        default(&mut s);
        assert_eq!(s, again, "defaulting is idempotent");
    }

    type Mutation = fn(&mut InternalSecret);
    /// `None`: a create; `Some(immutable)`: an update of an object with that `immutable`.
    type Old = Option<Option<bool>>;

    #[test]
    fn rules() {
        // (name, old immutable?, change, want); old None means create.
        let cases: Vec<(&str, Old, Mutation, Option<&str>)> = vec![
            ("valid", None, |_| {}, None),
            (
                "bad key",
                None,
                |s| {
                    s.spec.data.insert("a/b".into(), "eA==".into());
                },
                Some("data: Invalid value: \"a/b\""),
            ),
            (
                "not base64",
                None,
                |s| {
                    s.spec.data.insert("k".into(), "top secret!".into());
                },
                Some("data[k]: Invalid value: \"<redacted>\": must be base64-encoded"),
            ),
            (
                "too big",
                None,
                |s| {
                    s.spec.string_data.insert("big".into(), "x".repeat(MAX_DATA_BYTES + 1));
                },
                Some("data: Invalid value: may not be more than 1048576 bytes"),
            ),
            (
                "mutable data changes",
                Some(None),
                |s| {
                    s.spec.data.insert("k".into(), "eA==".into());
                },
                None,
            ),
            ("becomes immutable", Some(None), |s| s.spec.immutable = Some(true), None),
            (
                "immutable, labels change",
                Some(Some(true)),
                |s| {
                    s.spec.immutable = Some(true);
                    s.metadata.labels = Some([("a".into(), "b".into())].into());
                },
                None,
            ),
            (
                "immutable data changes",
                Some(Some(true)),
                |s| {
                    s.spec.immutable = Some(true);
                    s.spec.data.insert("k".into(), "eA==".into());
                },
                Some("data: Forbidden: field is immutable when `immutable` is set"),
            ),
            (
                "immutable data changes through stringData",
                Some(Some(true)),
                |s| {
                    s.spec.immutable = Some(true);
                    s.spec.string_data.insert("ca.crt".into(), "other".into());
                },
                Some("data: Forbidden: field is immutable when `immutable` is set"),
            ),
            (
                "immutable is unset",
                Some(Some(true)),
                |s| s.spec.immutable = Some(false),
                Some("immutable: Forbidden: field is immutable when `immutable` is set"),
            ),
            (
                "type changes",
                Some(None),
                |s| s.spec.type_ = Some("other".into()),
                Some("type: Invalid value: \"other\": field is immutable"),
            ),
        ];
        for (name, old, mutate, want) in cases {
            let mut s = secret(None);
            mutate(&mut s);
            let old = old.map(secret);
            let errs = validate(&s, old.as_ref());
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(want) => {
                    assert!(errs.iter().any(|e| e.to_string().starts_with(want)), "{name}: want {want:?}, got {errs}")
                }
            }
            assert!(!errs.to_string().contains("top secret"), "{name}: a value leaked: {errs}");
        }
    }
}
