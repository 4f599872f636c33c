//! How extensions get onto seeds: a `ControllerRegistration` says which extension kinds/types a
//! controller serves and how it is deployed, a `ControllerDeployment` holds the deployment
//! (for example a Helm chart), and a `ControllerInstallation` asks one seed's gardenlet to
//! install one registration.
//!
//! Like the reference API, `ControllerDeployment` has no `spec`: `type` and `providerConfig`
//! sit at the top level (kube's `no_spec` mode).

use crate::common::{Condition, ObjectReference};
use crate::opaque::Opaque;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The ControllerDeployment type gardenlet installs itself: `providerConfig.manifests` holds the
/// controller's Kubernetes objects, rendered (for example `helm template` output). Namespaced
/// objects without a namespace go into `extension-<installation>`.
pub const DEPLOYMENT_TYPE_MANIFEST: &str = "manifest";
/// Label gardenlet puts on every object it deploys for a ControllerInstallation.
pub const LABEL_CONTROLLER_INSTALLATION: &str = "controllerinstallation.core.gardener.cloud/name";
/// Finalizer gardenlet keeps on a ControllerInstallation while its objects exist in the seed.
pub const FINALIZER_CONTROLLER_INSTALLATION: &str = "core.gardener.cloud/controllerinstallation";

/// The `providerConfig` of a `manifest` ControllerDeployment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestDeployment {
    /// The objects to deploy into the seed, each a complete Kubernetes object.
    #[serde(default)]
    pub manifests: Vec<Opaque>,
}

/// Condition type of a ControllerInstallation: the request is valid.
pub const CONDITION_VALID: &str = "Valid";
/// Condition type of a ControllerInstallation: the controller has been installed.
pub const CONDITION_INSTALLED: &str = "Installed";
/// Condition type of a ControllerInstallation: the controller is healthy.
pub const CONDITION_HEALTHY: &str = "Healthy";
/// Condition type of a ControllerInstallation: the controller is still rolling out.
pub const CONDITION_PROGRESSING: &str = "Progressing";
/// Condition type of a ControllerInstallation: extension objects of the controller still exist.
pub const CONDITION_REQUIRED: &str = "Required";

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "ControllerRegistration",
    plural = "controllerregistrations",
    doc = "Registers an extension controller: the extension kinds and types it serves and how it is deployed.",
    shortname = "ctrlreg",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ControllerRegistrationSpec {
    /// The extension kinds and types the controller serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ControllerResource>,
    /// How the controller is deployed.
    pub deployment: Option<ControllerRegistrationDeployment>,
}

/// An extension kind and type a controller serves.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControllerResource {
    /// The extension kind (for example `Infrastructure`, `Extension`).
    pub kind: String,
    /// The extension type (for example `local`).
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether every shoot gets this extension (kind `Extension` only).
    pub globally_enabled: Option<bool>,
    /// How long gardenlet waits for the extension object to be reconciled (default `3m0s` for
    /// kind `Extension`).
    pub reconcile_timeout: Option<String>,
    /// Whether this controller is responsible for the extension objects' lifecycle (default
    /// true). Immutable.
    pub primary: Option<bool>,
    /// When in the shoot flow the extension objects are handled (kind `Extension` only).
    pub lifecycle: Option<ControllerResourceLifecycle>,
    /// Whether the extension supports shoots without workers.
    pub workerless_supported: Option<bool>,
    /// Cluster types the extension is enabled for automatically.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_enable: Vec<ClusterType>,
    /// Cluster types the extension can be used for (default `shoot`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_compatibility: Vec<ClusterType>,
}

/// A cluster type an extension may apply to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClusterType {
    Shoot,
    Seed,
}

/// When in the shoot flow the objects of an extension are handled.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControllerResourceLifecycle {
    /// During reconciliation (default `AfterKubeAPIServer`).
    pub reconcile: Option<ControllerResourceLifecycleStrategy>,
    /// During deletion (default `BeforeKubeAPIServer`).
    pub delete: Option<ControllerResourceLifecycleStrategy>,
    /// During migration (default `BeforeKubeAPIServer`).
    pub migrate: Option<ControllerResourceLifecycleStrategy>,
}

/// Where in the shoot flow an extension's objects are handled, relative to the kube-apiserver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ControllerResourceLifecycleStrategy {
    BeforeKubeAPIServer,
    AfterKubeAPIServer,
    /// Reconciliation only.
    AfterWorker,
}

/// How a registered controller is deployed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControllerRegistrationDeployment {
    /// When the controller is deployed to a seed (default `OnDemand`).
    pub policy: Option<ControllerDeploymentPolicy>,
    /// The seeds the controller may be deployed to; absent means all.
    pub seed_selector: Option<LabelSelector>,
    /// The ControllerDeployments to use (one is supported).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployment_refs: Vec<DeploymentRef>,
}

/// When a controller is deployed to a seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ControllerDeploymentPolicy {
    /// Only when a shoot or seed on the seed needs it.
    OnDemand,
    /// Always.
    Always,
    /// Always, as long as the seed has shoots.
    AlwaysExceptNoShoots,
}

/// A reference to a ControllerDeployment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRef {
    /// The ControllerDeployment's name.
    pub name: String,
}

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "ControllerDeployment",
    plural = "controllerdeployments",
    doc = "How an extension controller is deployed (for example a Helm chart and its values).",
    no_spec,
    shortname = "ctrldeploy",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Type", type_ = "string", json_path = ".type"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ControllerDeploymentFields {
    /// The deployment type (for example `helm`).
    #[serde(rename = "type")]
    pub type_: String,
    /// The type-specific deployment (for a `helm` deployment: `chart`, `values`,
    /// `ociRepository`).
    pub provider_config: Option<Opaque>,
    /// Whether a kubeconfig for the garden is injected into the deployed workloads.
    pub inject_garden_kubeconfig: Option<bool>,
}

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "ControllerInstallation",
    plural = "controllerinstallations",
    doc = "Asks the gardenlet of one seed to install one registered extension controller.",
    status = "ControllerInstallationStatus",
    shortname = "ctrlinst",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Registration", type_ = "string", json_path = ".spec.registrationRef.name"),
    printcolumn(name = "Seed", type_ = "string", json_path = ".spec.seedRef.name"),
    printcolumn(name = "Valid", type_ = "string", json_path = ".status.conditions[?(@.type==\"Valid\")].status"),
    printcolumn(
        name = "Installed",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Installed\")].status"
    ),
    printcolumn(name = "Healthy", type_ = "string", json_path = ".status.conditions[?(@.type==\"Healthy\")].status"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ControllerInstallationSpec {
    /// The ControllerRegistration to install. Its name is immutable.
    pub registration_ref: ObjectReference,
    /// The seed to install it on. Its name is immutable.
    pub seed_ref: Option<ObjectReference>,
    /// The ControllerDeployment to use.
    pub deployment_ref: Option<ObjectReference>,
}

/// The observed state of a ControllerInstallation.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControllerInstallationStatus {
    /// `Valid`, `Installed`, `Healthy`, `Progressing`, `Required`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Type-specific status.
    pub provider_status: Option<Opaque>,
}

impl ControllerInstallationStatus {
    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}
