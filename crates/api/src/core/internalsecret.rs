//! `InternalSecret`: a Secret that lives in the garden like a Secret but is not a `v1` Secret,
//! so project members (who may read the Secrets of their namespace) cannot read it; only the
//! components granted `internalsecrets` can. Gardener uses it for credentials it manages on
//! the user's behalf (for example a shoot's CA bundle or service-account issuer keys).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "InternalSecret",
    plural = "internalsecrets",
    doc = "Secret data in the garden that project members cannot read.",
    namespaced,
    no_spec,
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Type", type_ = "string", json_path = ".type"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct InternalSecretFields {
    /// When true, the data cannot be changed.
    pub immutable: Option<bool>,
    /// The data: key → standard base64 of the value, as in a Secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Write-only convenience, merged into `data` by admission (as the Secret API does).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub string_data: BTreeMap<String, String>,
    /// The Secret type (for example `Opaque`).
    #[serde(rename = "type")]
    pub type_: Option<String>,
}

/// `Debug` names the keys only: the values are secret.
impl std::fmt::Debug for InternalSecretFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InternalSecretFields")
            .field("immutable", &self.immutable)
            .field("data", &self.data.keys().collect::<Vec<_>>())
            .field("string_data", &self.string_data.keys().collect::<Vec<_>>())
            .field("type", &self.type_)
            .finish()
    }
}
