//! Decoding the objects of an AdmissionRequest into typed values; a failure names the field
//! that did not decode (`spec.provider.workers[0].minimum: Invalid value: ...`).

use crate::field::{ErrorList, ErrorType, FieldError, Path};
use serde::de::DeserializeOwned;

/// Decodes `value` as `T`, reporting the failing field's path.
pub fn decode<T: DeserializeOwned>(value: &serde_json::Value) -> Result<T, ErrorList> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." || path.is_empty() { "<root>".to_string() } else { path };
        let detail: String = e.inner().to_string().chars().take(512).collect();
        ErrorList(vec![FieldError { path: Path::new(&path), type_: ErrorType::Invalid, value: None, detail }])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::core::Shoot;
    use serde_json::json;

    #[test]
    fn names_the_failing_field() {
        let cases = [
            (
                json!({"spec": {"region": "r", "provider": {"type": "t", "workers": [{"name": "a", "machine": {"type": "m"}, "minimum": "one", "maximum": 1}]}}}),
                "spec.provider.workers[0].minimum: Invalid value: invalid type: string \"one\", expected i32",
            ),
            (json!({"spec": {"provider": {"type": "t"}}}), "spec: Invalid value: missing field `region`"),
            (
                json!({"spec": {"region": "r", "provider": {"type": "t"}, "purpose": "fun"}}),
                "spec.purpose: Invalid value: unknown variant `fun`",
            ),
            (json!("x"), "<root>: Invalid value: invalid type: string"),
        ];
        for (value, want) in cases {
            let err = decode::<Shoot>(&value).unwrap_err().to_string();
            assert!(err.starts_with(want), "want {want:?}, got {err:?}");
        }
    }
}
