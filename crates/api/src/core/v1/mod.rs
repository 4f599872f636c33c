//! `core.gardener.cloud/v1`: the one kind this version serves, `ControllerDeployment`, with the
//! Helm deployment as a typed field (`helm`) instead of v1beta1's `type` + `providerConfig`.
//!
//! Both versions are served by one CRD; v1beta1 is stored (it can hold every ControllerDeployment
//! either version can express) and the controller-manager's conversion webhook translates with
//! [`conversion`]. A custom (non-Helm) type, such as gardenlet's `manifest`, has no field in v1:
//! as in Gardener it travels in two annotations ([`ANNOTATION_TYPE`], [`ANNOTATION_PROVIDER_CONFIG`]).

pub mod conversion;

pub use crate::common::LocalObjectReference;
use crate::opaque::Opaque;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig, WebhookConversion,
};
use kube::CustomResource;
use kube::CustomResourceExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API version of this module's kind.
pub const API_VERSION: &str = "core.gardener.cloud/v1";
/// Annotation of a v1 ControllerDeployment that holds the v1beta1 `type` of a custom type.
pub const ANNOTATION_TYPE: &str = "migration.controllerdeployment.gardener.cloud/type";
/// Annotation of a v1 ControllerDeployment that holds the v1beta1 `providerConfig` (JSON) of a
/// custom type.
pub const ANNOTATION_PROVIDER_CONFIG: &str = "migration.controllerdeployment.gardener.cloud/providerConfig";
/// The v1beta1 `type` of a Helm deployment.
pub const TYPE_HELM: &str = "helm";
/// Path of the conversion endpoint on the controller-manager's webhook server.
pub const CONVERSION_PATH: &str = "/convert";

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1",
    kind = "ControllerDeployment",
    plural = "controllerdeployments",
    doc = "How an extension controller is deployed (for example a Helm chart and its values).",
    no_spec,
    shortname = "ctrldeploy",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ControllerDeploymentFields {
    /// The controller is deployed with Helm.
    pub helm: Option<HelmControllerDeployment>,
    /// Whether a kubeconfig for the garden is injected into the deployed workloads.
    pub inject_garden_kubeconfig: Option<bool>,
}

/// A controller deployed with Helm.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmControllerDeployment {
    /// The chart: a gzipped tar archive, base64-encoded (v1beta1's `providerConfig.chart`).
    pub raw_chart: Option<String>,
    /// The chart's values.
    pub values: Option<Opaque>,
    /// Where to pull the chart from instead.
    pub oci_repository: Option<OciRepository>,
}

/// An OCI artifact holding a chart.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OciRepository {
    /// The full reference; takes precedence over the other fields.
    pub r#ref: Option<String>,
    /// The repository.
    pub repository: Option<String>,
    /// The tag.
    pub tag: Option<String>,
    /// The digest (`sha256:<hash>`); takes precedence over the tag.
    pub digest: Option<String>,
    /// A `kubernetes.io/dockerconfigjson` Secret in the `garden` namespace.
    pub pull_secret_ref: Option<LocalObjectReference>,
}

/// Where the API server sends conversion requests until the controller-manager registers its
/// own address and CA bundle: the chart's default webhook Service.
pub fn default_conversion_service() -> ServiceReference {
    ServiceReference {
        namespace: "garden".into(),
        name: "gardener-admission".into(),
        path: Some(CONVERSION_PATH.into()),
        port: Some(443),
    }
}

/// The `spec.conversion` of the ControllerDeployment CRD for a webhook reached at `client_config`.
pub fn conversion(client_config: WebhookClientConfig) -> CustomResourceConversion {
    CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            client_config: Some(client_config),
            conversion_review_versions: vec!["v1".into()],
        }),
    }
}

/// The ControllerDeployment CRD: v1beta1 (stored) and v1, converted by the webhook.
pub fn controller_deployment_crd() -> CustomResourceDefinition {
    let versions = vec![super::ControllerDeployment::crd(), ControllerDeployment::crd()];
    let mut crd = match kube::core::crd::merge_crds(versions, "v1beta1") {
        Ok(crd) => crd,
        // Both come from derives of the same kind, group, scope and names; a mismatch is a
        // programming error that the CRD tests catch, and the stored version alone stays usable.
        Err(_) => super::ControllerDeployment::crd(),
    };
    crd.spec.conversion =
        Some(conversion(WebhookClientConfig { service: Some(default_conversion_service()), ..Default::default() }));
    crd
}
