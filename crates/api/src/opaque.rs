//! Opaque JSON carried by the API without interpretation (`providerConfig`, `providerStatus`,
//! extension `state`, the raw objects of a `Cluster`).
//!
//! A plain `serde_json::Value` has no structural schema, and a real kube-apiserver rejects a
//! CRD containing one (`type: Required value: must not be empty for specified object
//! fields`). [`Opaque`] therefore publishes `type: object` with
//! `x-kubernetes-preserve-unknown-fields: true`, which keeps every nested field the user sent.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// An arbitrary JSON object that the API server stores as-is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Opaque(pub serde_json::Value);

impl Opaque {
    /// Wraps any serializable value.
    pub fn from_serializable<T: Serialize>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_value(value).map(Self)
    }

    /// Decodes the content into a concrete type.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.0)
    }

    /// The raw JSON value.
    pub fn as_value(&self) -> &serde_json::Value {
        &self.0
    }
}

impl From<serde_json::Value> for Opaque {
    fn from(value: serde_json::Value) -> Self {
        Self(value)
    }
}

impl JsonSchema for Opaque {
    fn schema_name() -> Cow<'static, str> {
        "Opaque".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

/// An opaque value that may be any JSON type (string, number, object, ...), for the few
/// reference fields that are not objects (for example a ShootState secret's data).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AnyJson(pub serde_json::Value);

impl JsonSchema for AnyJson {
    fn schema_name() -> Cow<'static, str> {
        "AnyJson".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaque_schema_is_structural() {
        let schema = schemars::schema_for!(Opaque);
        let v = serde_json::to_value(&schema).unwrap();
        assert_eq!(v["type"], "object");
        assert_eq!(v["x-kubernetes-preserve-unknown-fields"], true);
    }

    #[test]
    fn opaque_round_trips_nested_content() {
        let raw = serde_json::json!({"apiVersion": "x/v1", "kind": "C", "nested": {"a": [1, 2]}});
        let o: Opaque = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(serde_json::to_value(&o).unwrap(), raw);
    }
}
