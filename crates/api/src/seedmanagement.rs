//! `seedmanagement.gardener.cloud/v1alpha1`: ManagedSeed and ManagedSeedSet.
//!
//! A ManagedSeed registers a Shoot as a Seed (a "shooted seed") and optionally deploys gardenlet
//! into it; a ManagedSeedSet keeps a number of identical ManagedSeeds (and their Shoots) alive,
//! like a StatefulSet with in-place rolling updates.

use crate::common::Condition;
use crate::opaque::Opaque;
use k8s_openapi::api::core::v1::{EnvVar, ResourceRequirements, VolumeMount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The labels and annotations of an object created from a template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateMetadata {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Desired state of a shoot registered as a seed.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "seedmanagement.gardener.cloud",
    version = "v1alpha1",
    kind = "ManagedSeed",
    plural = "managedseeds",
    namespaced,
    status = "ManagedSeedStatus",
    shortname = "ms",
    derive = "PartialEq",
    printcolumn(
        name = "Shoot",
        type_ = "string",
        json_path = ".spec.shoot.name",
        description = "The shoot registered as seed"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedSeedSpec {
    /// The shoot to register as seed. Filled by the controller for ManagedSeeds of a set.
    pub shoot: Option<ShootReference>,
    /// The Seed to create, when no gardenlet is deployed.
    pub seed_template: Option<SeedTemplate>,
    /// The gardenlet to deploy into the shoot, which then registers the seed itself.
    pub gardenlet: Option<Gardenlet>,
}

/// A Shoot in the ManagedSeed's namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShootReference {
    pub name: String,
}

/// Metadata and spec of the Seed to create.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedTemplate {
    #[serde(default)]
    pub metadata: TemplateMetadata,
    /// The Seed spec, as in `core.gardener.cloud` Seed.
    pub spec: Opaque,
}

/// How gardenlet is deployed into a managed seed and configured.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Gardenlet {
    pub deployment: Option<GardenletDeployment>,
    /// The GardenletConfiguration (including its `seedConfig`).
    pub config: Option<Opaque>,
    /// How gardenlet authenticates to the garden initially.
    pub bootstrap: Option<Bootstrap>,
    /// Whether the configuration is merged with the parent gardenlet's.
    pub merge_with_parent: Option<bool>,
}

/// The mechanism gardenlet uses to obtain its garden credentials.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Bootstrap {
    #[default]
    BootstrapToken,
    ServiceAccount,
    None,
}

/// The gardenlet Deployment.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GardenletDeployment {
    pub replica_count: Option<i32>,
    pub revision_history_limit: Option<i32>,
    pub service_account_name: Option<String>,
    pub image: Option<Image>,
    pub resources: Option<ResourceRequirements>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_annotations: BTreeMap<String, String>,
    /// Additional Pod volumes (core/v1 Volume objects).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_volumes: Vec<Opaque>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_volume_mounts: Vec<VolumeMount>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Whether a VerticalPodAutoscaler is created for gardenlet.
    pub vpa: Option<bool>,
}

/// The gardenlet container image.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    pub repository: Option<String>,
    pub tag: Option<String>,
    pub pull_policy: Option<PullPolicy>,
}

/// When the image is pulled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum PullPolicy {
    Always,
    Never,
    IfNotPresent,
}

/// Observed state of a ManagedSeed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedSeedStatus {
    /// `ShootReconciled`, `SeedRegistered`, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default)]
    pub observed_generation: i64,
}

/// Desired state of a set of identical managed seeds.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "seedmanagement.gardener.cloud",
    version = "v1alpha1",
    kind = "ManagedSeedSet",
    plural = "managedseedsets",
    namespaced,
    status = "ManagedSeedSetStatus",
    shortname = "mss",
    derive = "PartialEq",
    scale(spec_replicas_path = ".spec.replicas", status_replicas_path = ".status.replicas"),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedSeedSetSpec {
    /// The desired number of replicas (default 1).
    pub replicas: Option<i32>,
    /// Selects the ManagedSeeds (and Shoots) of the set; must match the templates' labels.
    pub selector: LabelSelector,
    /// The template of the set's ManagedSeeds.
    pub template: ManagedSeedTemplate,
    /// The template of the set's Shoots.
    pub shoot_template: ShootTemplate,
    pub update_strategy: Option<UpdateStrategy>,
    /// How many old revisions are kept (default 10).
    pub revision_history_limit: Option<i32>,
}

/// Metadata and spec of a ManagedSeed created by a set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedSeedTemplate {
    #[serde(default)]
    pub metadata: TemplateMetadata,
    pub spec: ManagedSeedSpec,
}

/// Metadata and spec of a Shoot created by a set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShootTemplate {
    #[serde(default)]
    pub metadata: TemplateMetadata,
    /// The Shoot spec, as in `core.gardener.cloud` Shoot.
    pub spec: Opaque,
}

/// How the set's replicas are updated.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    #[serde(rename = "type")]
    pub type_: Option<UpdateStrategyType>,
    pub rolling_update: Option<RollingUpdateStrategy>,
}

/// The only update strategy: in-place rolling updates, in ordinal order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum UpdateStrategyType {
    #[default]
    RollingUpdate,
}

/// Parameters of a rolling update.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateStrategy {
    /// Only replicas with an ordinal at or above the partition are updated.
    pub partition: Option<i32>,
}

/// Observed state of a ManagedSeedSet.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedSeedSetStatus {
    #[serde(default)]
    pub observed_generation: i64,
    /// How many replicas exist.
    #[serde(default)]
    pub replicas: i32,
    /// How many replicas are ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// The ordinal the next replica gets.
    #[serde(default)]
    pub next_replica_number: i32,
    /// How many replicas are at `currentRevision`.
    #[serde(default)]
    pub current_replicas: i32,
    /// How many replicas are at `updateRevision`.
    #[serde(default)]
    pub updated_replicas: i32,
    #[serde(default)]
    pub current_revision: String,
    #[serde(default)]
    pub update_revision: String,
    /// Counts hash collisions of revision names.
    pub collision_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The replica currently being created, updated or deleted, and why it is not done yet.
    pub pending_replica: Option<PendingReplica>,
}

/// Why a replica is pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum PendingReplicaReason {
    ShootReconciling,
    ShootDeleting,
    ShootReconcileFailed,
    ShootDeleteFailed,
    ManagedSeedPreparing,
    ManagedSeedDeleting,
    SeedNotReady,
    ShootNotHealthy,
}

/// A replica the set is waiting for.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingReplica {
    pub name: String,
    pub reason: PendingReplicaReason,
    pub since: Time,
    pub retries: Option<i32>,
}

/// The CRDs of this group.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![ManagedSeed::crd(), ManagedSeedSet::crd()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crds_have_group_plural_and_scope() {
        let crds = crds();
        let got: Vec<_> =
            crds.iter().map(|c| (c.spec.group.as_str(), c.spec.names.plural.as_str(), c.spec.scope.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("seedmanagement.gardener.cloud", "managedseeds", "Namespaced"),
                ("seedmanagement.gardener.cloud", "managedseedsets", "Namespaced"),
            ]
        );
        for crd in &crds {
            let sub = crd.spec.versions[0].subresources.as_ref();
            assert!(sub.and_then(|s| s.status.as_ref()).is_some(), "{}", crd.spec.names.kind);
        }
    }

    #[test]
    fn managed_seed_set_has_scale_subresource() {
        let crd = ManagedSeedSet::crd();
        let scale = crd.spec.versions[0].subresources.as_ref().and_then(|s| s.scale.as_ref()).unwrap();
        assert_eq!(scale.spec_replicas_path, ".spec.replicas");
        assert_eq!(scale.status_replicas_path, ".status.replicas");
    }

    #[test]
    fn bootstrap_spelling() {
        assert_eq!(serde_json::to_value(Bootstrap::BootstrapToken).unwrap(), "BootstrapToken");
        assert_eq!(serde_json::to_value(Bootstrap::None).unwrap(), "None");
    }
}
