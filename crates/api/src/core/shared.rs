//! Small types several `core.gardener.cloud` kinds share (tolerations, seed selectors, extension
//! entries, ...) and the JSON-schema helpers for the few fields whose shape differs between the
//! reference API and the GEP-15 example manifests.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::opaque::Opaque;

/// Fields of a reference-API struct that this crate does not model. Kept verbatim (the struct's
/// schema preserves unknown fields), so a manifest written for the reference system loses nothing.
pub type UnmodeledFields = BTreeMap<String, serde_json::Value>;

/// A toleration of a seed taint (Shoot `spec.tolerations[]`, Project tolerations).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    /// The taint key this toleration matches.
    pub key: String,
    /// The taint value this toleration matches; absent matches any value.
    pub value: Option<String>,
}

/// A label selector for seeds, optionally restricted to seeds of some provider types.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedSelector {
    /// The labels a seed must carry.
    #[serde(flatten)]
    pub label_selector: LabelSelector,
    /// Provider types of the seeds that may be selected; `*` allows every type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_types: Vec<String>,
}

/// An extension to enable for a shoot or seed (`spec.extensions[]`).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Extension {
    /// The extension type (the `type` of the `Extension` object gardenlet creates).
    #[serde(rename = "type")]
    pub type_: String,
    /// Configuration handed to the extension as-is.
    pub provider_config: Option<Opaque>,
    /// Disables an extension that is enabled globally (`globallyEnabled`) for this object.
    pub disabled: Option<bool>,
}

/// An IP family of a network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum IpFamily {
    #[serde(rename = "IPv4")]
    Ipv4,
    #[serde(rename = "IPv6")]
    Ipv6,
}

/// How nodes distribute traffic of a load balancer service (`Service.spec.externalTrafficPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ExternalTrafficPolicy {
    Cluster,
    Local,
}

/// A string, or a list of strings. The reference API spells `oidcConfig.signingAlgs` as a list;
/// the GEP-15 example manifest as one comma-separated string. Both are accepted and kept as
/// written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StringOrList {
    One(String),
    Many(Vec<String>),
}

impl StringOrList {
    /// The entries, splitting a single string at commas.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            Self::One(s) => s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect(),
            Self::Many(v) => v.clone(),
        }
    }
}

impl JsonSchema for StringOrList {
    fn schema_name() -> Cow<'static, str> {
        "StringOrList".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        any_value_schema(generator)
    }
}

/// The schema of a field that may hold values of different JSON types: structural schemas
/// have no union types, so the field is typeless and the API server keeps whatever it holds.
pub fn any_value_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Lists of names to include and exclude.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DnsIncludeExclude {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_or_list_splits_a_single_string() {
        let one: StringOrList = serde_json::from_value(serde_json::json!("RS256, ES256")).unwrap();
        assert_eq!(one.to_vec(), vec!["RS256", "ES256"]);
        let many: StringOrList = serde_json::from_value(serde_json::json!(["RS256"])).unwrap();
        assert_eq!(many.to_vec(), vec!["RS256"]);
        assert_eq!(serde_json::to_value(&one).unwrap(), "RS256, ES256");
    }

    #[test]
    fn seed_selector_flattens_the_label_selector() {
        let raw = serde_json::json!({"matchLabels": {"a": "b"}, "providerTypes": ["local"]});
        let s: SeedSelector = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(s.provider_types, vec!["local"]);
        assert_eq!(serde_json::to_value(&s).unwrap(), raw);
    }
}
