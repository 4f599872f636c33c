//! `CloudProfile`: what a provider environment offers shoots (Kubernetes versions, machine images,
//! machine and volume types, regions). The scheduler, the shoot admission checks and the
//! maintenance controller read it; nobody but operators writes it.

use super::shared::{SeedSelector, any_value_schema};
use crate::opaque::Opaque;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "CloudProfile",
    plural = "cloudprofiles",
    doc = "A provider environment: the versions, machine types, volume types and regions shoots may use.",
    shortname = "cprofile",
    shortname = "cpfl",
    category = "gardener",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The provider type"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct CloudProfileSpec {
    /// CA bundle installed onto every machine of shoots using this profile.
    pub ca_bundle: Option<String>,
    /// The Kubernetes versions shoots may use.
    pub kubernetes: KubernetesSettings,
    /// The machine images shoots may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_images: Vec<MachineImage>,
    /// The machine types worker pools may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_types: Vec<MachineType>,
    /// Provider-specific configuration of the profile (for example image IDs per region).
    pub provider_config: Option<Opaque>,
    /// The regions (and their zones) shoots may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<Region>,
    /// Labels of the seeds whose shoots may use this profile; absent means every seed of the
    /// profile's provider type.
    pub seed_selector: Option<SeedSelector>,
    /// The provider type (for example `local`).
    #[serde(rename = "type")]
    pub type_: String,
    /// The volume types worker pools may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volume_types: Vec<VolumeType>,
}

/// The Kubernetes versions offered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesSettings {
    /// The offered versions, with optional expiration dates and classifications.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<ExpirableVersion>,
}

/// A machine image and the versions of it that are offered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineImage {
    /// The image name (for example `gardenlinux`).
    pub name: String,
    /// The offered versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<MachineImageVersion>,
}

/// The lifecycle state of an offered version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VersionClassification {
    /// Recently added; not chosen by automatic updates.
    Preview,
    /// The recommended version.
    Supported,
    /// Should not be used any more; will expire.
    Deprecated,
}

/// A version with an optional expiration date and classification.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpirableVersion {
    /// The version (for example `1.20.4`).
    pub version: String,
    /// When this version stops being offered.
    pub expiration_date: Option<Time>,
    /// The lifecycle state of the version.
    pub classification: Option<VersionClassification>,
}

/// A machine image version: an [`ExpirableVersion`] plus the container runtimes it supports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineImageVersion {
    #[serde(flatten)]
    pub expirable: ExpirableVersion,
    /// The container runtime interfaces the image supports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cri: Vec<CriSupport>,
    /// The CPU architectures the image is built for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architectures: Vec<String>,
}

/// A container runtime interface a machine image supports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CriSupport {
    /// The CRI name (for example `containerd`).
    pub name: String,
    /// Container runtimes usable through this CRI.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_runtimes: Vec<ContainerRuntimeSupport>,
}

/// A container runtime a machine image supports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRuntimeSupport {
    /// The runtime type (for example `gvisor`).
    #[serde(rename = "type")]
    pub type_: String,
}

/// A machine type worker pools may use.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineType {
    /// Number of CPUs.
    pub cpu: Quantity,
    /// Number of GPUs.
    pub gpu: Quantity,
    /// Amount of memory.
    pub memory: Quantity,
    /// The machine type name.
    pub name: String,
    /// The root volume of this machine type, when it is fixed.
    // `default` keeps the field optional in the schema: behind `schema_with`, schemars does not see the `Option`.
    #[serde(default)]
    #[schemars(schema_with = "any_value_schema")]
    pub storage: Option<MachineTypeStorage>,
    /// Whether shoots may use this machine type.
    pub usable: Option<bool>,
    /// CPU architecture of the machine type.
    pub architecture: Option<String>,
}

/// The root volume of a machine type: a plain size (GEP-15 example: `storage: 20Gi`) or the
/// reference API's object (`{class, size, type}`). Both are accepted and kept as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MachineTypeStorage {
    Size(Quantity),
    Volume(MachineTypeStorageVolume),
}

impl MachineTypeStorage {
    /// The volume size, when known.
    pub fn size(&self) -> Option<&Quantity> {
        match self {
            Self::Size(q) => Some(q),
            Self::Volume(v) => v.size.as_ref(),
        }
    }
}

/// The root volume of a machine type in the reference API's shape.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineTypeStorageVolume {
    /// The storage class of the volume.
    pub class: String,
    /// The volume size.
    pub size: Option<Quantity>,
    /// The volume type.
    #[serde(rename = "type")]
    pub type_: String,
    /// The minimum size a worker pool may request.
    pub min_size: Option<Quantity>,
}

/// A region and its zones.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Region {
    /// The region name.
    pub name: String,
    /// The availability zones of the region.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<AvailabilityZone>,
    /// Operator-controlled labels describing the region.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// An availability zone and what is not available in it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvailabilityZone {
    /// The zone name.
    pub name: String,
    /// Machine types (by name) not available in this zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable_machine_types: Vec<String>,
    /// Volume types (by name) not available in this zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable_volume_types: Vec<String>,
}

/// A volume type worker pools may use.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeType {
    /// The storage class (for example `standard`, `premium`).
    pub class: String,
    /// The volume type name.
    pub name: String,
    /// Whether shoots may use this volume type.
    pub usable: Option<bool>,
    /// The minimum size a worker pool may request.
    pub min_size: Option<Quantity>,
}
