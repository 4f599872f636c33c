//! `ShootState`: the state of a shoot's control plane that cannot be recreated (gardenlet's
//! secrets, every extension's `status.state` and the resources it refers to), kept in the garden
//! so the control plane can be restored on another seed. It has no status.

use crate::common::NamedResourceReference;
use crate::opaque::{AnyJson, Opaque};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "ShootState",
    plural = "shootstates",
    doc = "The state of a shoot's control plane needed to restore it on another seed.",
    namespaced,
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ShootStateSpec {
    /// Data gardenlet needs to regenerate what it deploys (for example CA secrets).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gardener: Vec<GardenerResourceData>,
    /// The last observed state of each extension object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<ExtensionResourceState>,
    /// The data of resources that extension states refer to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceData>,
}

/// Data gardenlet persists to regenerate a resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GardenerResourceData {
    /// The name of the data (for example `ca`).
    pub name: String,
    /// The type of the data (for example `secret`).
    #[serde(rename = "type")]
    pub type_: String,
    /// The payload.
    pub data: AnyJson,
    /// Labels of the original object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// The last observed state of one extension object.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionResourceState {
    /// The extension kind (for example `Infrastructure`).
    pub kind: String,
    /// The object name.
    pub name: Option<String>,
    /// The object's purpose, for kinds with several objects per shoot.
    pub purpose: Option<String>,
    /// The object's `status.state`.
    pub state: Option<Opaque>,
    /// The object's `status.resources`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<NamedResourceReference>,
}

impl ExtensionResourceState {
    /// Whether this entry is for the given extension object.
    pub fn is_for(&self, kind: &str, name: Option<&str>, purpose: Option<&str>) -> bool {
        self.kind == kind && self.name.as_deref() == name && self.purpose.as_deref() == purpose
    }
}

/// The data of a resource an extension state refers to.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceData {
    /// API version of the resource.
    pub api_version: Option<String>,
    /// Kind of the resource.
    pub kind: String,
    /// Name of the resource.
    pub name: String,
    /// The resource's data.
    pub data: AnyJson,
}
