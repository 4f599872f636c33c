//! `SecretBinding`: lets shoots of a project use a provider credentials Secret (possibly in
//! another namespace) and ties the quotas that apply to it. Like the reference API it has no
//! `spec`: its fields sit at the top level of the object (kube's `no_spec` mode).

use crate::common::{ObjectReference, SecretReference};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "SecretBinding",
    plural = "secretbindings",
    doc = "Binds a provider credentials Secret (and the quotas that apply to it) for use by the shoots of a project.",
    namespaced,
    no_spec,
    shortname = "sb",
    category = "gardener",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Secret", type_ = "string", json_path = ".secretRef.name"),
    printcolumn(name = "Provider", type_ = "string", json_path = ".provider.type"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct SecretBindingFields {
    /// The bound Secret; without a namespace, the binding's own. Immutable.
    pub secret_ref: SecretReference,
    /// The quotas that apply to shoots using this binding. Immutable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<ObjectReference>,
    /// The provider type(s) the credentials are for. Immutable.
    pub provider: Option<SecretBindingProvider>,
}

/// The provider type of a SecretBinding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretBindingProvider {
    /// The provider type; for backwards compatibility a comma-separated list is accepted.
    #[serde(rename = "type")]
    pub type_: String,
}

impl SecretBindingProvider {
    /// The individual provider types.
    pub fn types(&self) -> impl Iterator<Item = &str> {
        self.type_.split(',').map(str::trim).filter(|t| !t.is_empty())
    }
}
