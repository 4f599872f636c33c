//! `OperatingSystemConfig`: the systemd units and files a shoot's machines need, which an
//! operating-system extension turns into OS-specific user data (cloud-config, ignition, ...).
//! Purpose `provision` yields the bootstrap script in a machine's user data; purpose `reconcile`
//! yields the full configuration that the node agent applies continuously.

use super::common::{DefaultSpec, DefaultStatus};
use crate::common::SecretReference;
/// The container runtime of the machines: the Shoot's `spec.provider.workers[].cri.name`.
pub use crate::core::shoot::provider::CriName;
use k8s_openapi::NamespaceResourceScope;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the generated configuration is used for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OperatingSystemConfigPurpose {
    /// The bootstrap user data a machine is created with.
    Provision,
    /// The full configuration applied on a running machine.
    #[default]
    Reconcile,
}

/// What to do with a systemd unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UnitCommand {
    Start,
    Stop,
    Restart,
}

/// Desired state of a machine's operating system configuration.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "OperatingSystemConfig",
    plural = "operatingsystemconfigs",
    namespaced,
    status = "OperatingSystemConfigStatus",
    shortname = "osc",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The operating system type"),
    printcolumn(name = "Purpose", type_ = "string", json_path = ".spec.purpose"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct OperatingSystemConfigSpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
    /// The container runtime configuration.
    pub cri_config: Option<CriConfig>,
    /// `provision` or `reconcile`.
    pub purpose: OperatingSystemConfigPurpose,
    /// Where the configuration is written on the machine, for the reload command.
    pub reload_config_file_path: Option<String>,
    /// The systemd units.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<Unit>,
    /// The files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<File>,
}

/// The container runtime configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CriConfig {
    /// The container runtime of the machines.
    pub name: CriName,
}

/// A systemd unit.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Unit {
    /// The unit's name, for example `kubelet.service`.
    pub name: String,
    pub command: Option<UnitCommand>,
    /// Whether the unit is enabled.
    pub enable: Option<bool>,
    /// The unit file's content.
    pub content: Option<String>,
    /// Drop-in files of the unit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_ins: Vec<DropIn>,
    /// Paths of files (from `files`) whose change restarts the unit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_paths: Vec<String>,
}

/// A systemd drop-in file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DropIn {
    /// The file name, for example `10-opts.conf`.
    pub name: String,
    pub content: String,
}

/// A file on the machine.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct File {
    /// The absolute path.
    pub path: String,
    /// The file mode as a decimal number (for example 420 for 0644).
    pub permissions: Option<i32>,
    pub content: FileContent,
}

/// Where a file's content comes from: a Secret key or inline data.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    pub secret_ref: Option<FileContentSecretRef>,
    pub inline: Option<FileContentInline>,
    /// Whether the operating-system extension should write the content as-is, without encoding.
    pub transmit_unencoded: Option<bool>,
}

/// A key of a Secret in the object's namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileContentSecretRef {
    pub name: String,
    pub data_key: String,
}

/// Inline file content.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileContentInline {
    /// How `data` is encoded: empty (plain) or `b64`/`base64`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub encoding: String,
    pub data: String,
}

/// Observed state of an OperatingSystemConfig.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatingSystemConfigStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
    /// Units the extension added on top of the spec.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extension_units: Vec<Unit>,
    /// Files the extension added on top of the spec.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extension_files: Vec<File>,
    /// The Secret holding the generated user data.
    pub cloud_config: Option<CloudConfig>,
    /// The command that (re)applies the configuration on a machine.
    pub command: Option<String>,
    /// Names of the units the configuration manages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<String>,
}

/// The generated user data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloudConfig {
    pub secret_ref: SecretReference,
}

crate::impl_extension_kind!(OperatingSystemConfig, OperatingSystemConfigStatus, NamespaceResourceScope);
