//! `NamespacedCloudProfile`: a project's additions to and overrides of a CloudProfile (its
//! `parent`), such as extra machine types or a later expiration date for a version. Shoots of
//! the project name it in `spec.cloudProfile` (`kind: NamespacedCloudProfile`);
//! `status.cloudProfileSpec` is the parent merged with the additions, which is what those
//! shoots are validated and maintained against.

use super::cloudprofile::{CloudProfileSpec, KubernetesSettings, MachineImage, MachineType, VolumeType};
use super::shoot::CloudProfileReference;
use crate::opaque::Opaque;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "NamespacedCloudProfile",
    plural = "namespacedcloudprofiles",
    doc = "A project's additions to and overrides of a CloudProfile.",
    namespaced,
    status = "NamespacedCloudProfileStatus",
    category = "gardener",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Parent", type_ = "string", json_path = ".spec.parent.name"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedCloudProfileSpec {
    /// The CloudProfile this one extends (`kind: CloudProfile`). Immutable.
    pub parent: CloudProfileReference,
    /// An additional CA bundle for machines (appended to the parent's).
    pub ca_bundle: Option<String>,
    /// Versions whose expiration date is overridden (only versions of the parent).
    pub kubernetes: Option<KubernetesSettings>,
    /// Additional machine images or versions, or overridden expiration dates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_images: Vec<MachineImage>,
    /// Additional machine types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_types: Vec<MachineType>,
    /// Additional volume types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volume_types: Vec<VolumeType>,
    /// Provider-specific configuration (replaces the parent's when set).
    pub provider_config: Option<Opaque>,
}

/// Observed state of a NamespacedCloudProfile.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedCloudProfileStatus {
    /// The parent's spec merged with this profile's additions.
    pub cloud_profile_spec: Option<CloudProfileSpec>,
    pub observed_generation: Option<i64>,
}
