//! `Shoot`: a user's Kubernetes cluster. The spec says what the user wants (provider, workers,
//! Kubernetes version and component settings, networking, DNS, maintenance, hibernation); the
//! status says what gardenlet last did and where the control plane runs.
//!
//! The submodules hold the larger parts of the spec: [`kubernetes`] (version and control plane
//! component settings), [`kubelet`], [`provider`] (infrastructure and worker pools) and
//! [`settings`] (everything else); [`credentials`] is the status of credential rotations.
//! Besides the reference API's fields, the GEP-15 example's older spellings are accepted:
//! `status.seed`, `kubernetes.allowPrivilegedContainers` and the `nginx-ingress` /
//! `kubernetes-dashboard` addon keys.

pub mod credentials;
pub mod kubelet;
pub mod kubernetes;
pub mod provider;
pub mod settings;

pub use credentials::ShootCredentials;
pub use kubelet::KubeletConfig;
pub use kubernetes::Kubernetes;
pub use provider::{Provider, Worker};
pub use settings::{Addons, ControlPlane, Dns, Hibernation, Maintenance, Monitoring, Networking, SystemComponents};

use super::shared::{Extension, SeedSelector, Toleration};
use crate::common::{Condition, Gardener, LastError, LastOperation, LastOperationState, NamedResourceReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "Shoot",
    plural = "shoots",
    doc = "A user's Kubernetes cluster, whose control plane runs in a seed.",
    namespaced,
    status = "ShootStatus",
    category = "gardener",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "CloudProfile", type_ = "string", json_path = ".spec.cloudProfileName"),
    printcolumn(name = "Provider", type_ = "string", json_path = ".spec.provider.type"),
    printcolumn(name = "Region", type_ = "string", json_path = ".spec.region"),
    printcolumn(name = "K8S Version", type_ = "string", json_path = ".spec.kubernetes.version"),
    printcolumn(name = "Seed", type_ = "string", json_path = ".spec.seedName"),
    printcolumn(name = "Operation", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Progress", type_ = "integer", json_path = ".status.lastOperation.progress"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ShootSpec {
    /// Addons the system deploys into the cluster.
    pub addons: Option<Addons>,
    /// The CloudProfile the shoot uses.
    pub cloud_profile_name: Option<String>,
    /// The CloudProfile (or NamespacedCloudProfile) the shoot uses; newer spelling of
    /// `cloudProfileName`.
    pub cloud_profile: Option<CloudProfileReference>,
    /// The CredentialsBinding with the provider credentials; alternative to `secretBindingName`.
    pub credentials_binding_name: Option<String>,
    /// DNS settings of the cluster.
    pub dns: Option<Dns>,
    /// Extensions enabled for the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Extension>,
    /// Whether and when the cluster is hibernated.
    pub hibernation: Option<Hibernation>,
    /// Kubernetes version and component settings.
    #[serde(default)]
    pub kubernetes: Kubernetes,
    /// Cluster networking (CNI type and CIDRs).
    pub networking: Option<Networking>,
    /// Maintenance time window and automatic updates.
    pub maintenance: Option<Maintenance>,
    /// Monitoring and alerting settings.
    pub monitoring: Option<Monitoring>,
    /// Provider type, provider configs and worker pools.
    pub provider: Provider,
    /// The purpose class of the cluster.
    pub purpose: Option<ShootPurpose>,
    /// The provider region. Immutable.
    pub region: String,
    /// The SecretBinding with the provider credentials. Immutable.
    pub secret_binding_name: Option<String>,
    /// The seed running the control plane; set by the scheduler when absent.
    pub seed_name: Option<String>,
    /// Labels (and provider types) a seed must match for the shoot to be scheduled onto it.
    pub seed_selector: Option<SeedSelector>,
    /// Resources that extension configs refer to by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<NamedResourceReference>,
    /// Tolerations for seed taints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// The ExposureClass for the control plane endpoint. Immutable.
    pub exposure_class_name: Option<String>,
    /// Settings of system components in the cluster.
    pub system_components: Option<SystemComponents>,
    /// General control plane settings (high availability).
    pub control_plane: Option<ControlPlane>,
    /// The scheduler responsible for the shoot; absent means the default one. Immutable.
    pub scheduler_name: Option<String>,
}

impl ShootSpec {
    /// The name of the CloudProfile, from `cloudProfileName` or `cloudProfile`.
    pub fn cloud_profile_name(&self) -> Option<&str> {
        self.cloud_profile_name.as_deref().or(self.cloud_profile.as_ref().map(|c| c.name.as_str()))
    }

    /// Whether the shoot wants to be hibernated.
    pub fn hibernation_enabled(&self) -> bool {
        self.hibernation.as_ref().and_then(|h| h.enabled).unwrap_or(false)
    }
}

/// A reference to a CloudProfile or NamespacedCloudProfile.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloudProfileReference {
    /// `CloudProfile` or `NamespacedCloudProfile`.
    pub kind: Option<String>,
    /// The profile's name.
    pub name: String,
}

/// The purpose class of a shoot; it selects defaults (for example monitoring, high availability).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ShootPurpose {
    Evaluation,
    Testing,
    Development,
    Production,
    /// Only for shoots in the `garden` namespace.
    Infrastructure,
}

/// The observed state of a shoot.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShootStatus {
    /// Observations of the cluster's health (`APIServerAvailable`, `EveryNodeReady`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Conditions that constrain operations on the shoot (for example `HibernationPossible`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<Condition>,
    /// The gardenlet that last acted on the shoot.
    pub gardener: Option<Gardener>,
    /// Whether the cluster is currently hibernated.
    #[serde(default)]
    pub hibernated: bool,
    /// The last operation on the shoot.
    pub last_operation: Option<LastOperation>,
    /// The errors of the last operation, one per failed flow task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_errors: Vec<LastError>,
    /// The generation of the spec last acted on.
    pub observed_generation: Option<i64>,
    /// Start of the current retry cycle; operations are retried until a deadline after it.
    pub retry_cycle_start_time: Option<Time>,
    /// The seed the control plane ran on after the last successful operation; differs from
    /// `spec.seedName` while the control plane is migrated.
    pub seed_name: Option<String>,
    /// Legacy (GEP-15 example) spelling of `seedName`.
    pub seed: Option<String>,
    /// The technical ID (`shoot--<project>--<name>`): name of the control plane namespace in the
    /// seed and prefix of infrastructure resources. Immutable.
    #[serde(rename = "technicalID", default, skip_serializing_if = "String::is_empty")]
    pub technical_id: String,
    /// A unique ID of the cluster, used for hashes. Immutable.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The identity of the shoot cluster. Immutable.
    pub cluster_identity: Option<String>,
    /// Addresses of the cluster's API server (and service account issuer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advertised_addresses: Vec<ShootAdvertisedAddress>,
    /// When the migration to another seed started.
    pub migration_start_time: Option<Time>,
    /// When the hibernation schedule last changed `spec.hibernation.enabled`.
    pub last_hibernation_trigger_time: Option<Time>,
    /// The last maintenance operation.
    pub last_maintenance: Option<LastMaintenance>,
    /// Resources (besides secrets) that are encrypted in etcd.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encrypted_resources: Vec<String>,
    /// The CIDRs the cluster's networks actually use.
    pub networking: Option<NetworkingStatus>,
    /// Where the rotations of the shoot's credentials stand.
    pub credentials: Option<ShootCredentials>,
}

impl ShootStatus {
    /// The seed of the last successful operation, whichever spelling was used.
    pub fn seed_name(&self) -> Option<&str> {
        self.seed_name.as_deref().or(self.seed.as_deref())
    }

    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// An address of a shoot's API server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShootAdvertisedAddress {
    /// What the address is (for example `external`, `internal`, `service-account-issuer`).
    pub name: String,
    /// The URL (for example `https://api.foo.example.com`).
    pub url: String,
}

/// A maintenance operation on a shoot.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastMaintenance {
    /// What the maintenance did.
    pub description: String,
    /// When the maintenance was triggered.
    pub triggered_time: Time,
    /// How far it got.
    pub state: LastOperationState,
    /// Why it failed, when it did.
    pub failure_reason: Option<String>,
}

/// The CIDRs a shoot's networks actually use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkingStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<String>,
    /// Source addresses of the cluster's egress traffic, when the infrastructure reports them.
    #[serde(rename = "egressCIDRs", default, skip_serializing_if = "Vec::is_empty")]
    pub egress_cidrs: Vec<String>,
}
