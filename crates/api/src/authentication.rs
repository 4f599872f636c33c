//! `authentication.gardener.cloud/v1alpha1`: AdminKubeconfigRequest (GEP-16, shaped for CRDs).
//!
//! Gardener serves `shoots/adminkubeconfig` as a subresource that answers with a kubeconfig
//! holding a fresh private key. A CRD cannot answer a create, so here the request is an object:
//! the user submits their *public* key and a validity, the controller-manager signs a
//! short-lived client certificate for it with the shoot's client CA (from the ShootState) and
//! writes the certificate and a kubeconfig around it into the status. The private key never
//! leaves the user, and nothing in the object is secret. Admission records the requesting user
//! in `gardener.cloud/created-by`; that user is the certificate's CN.

use crate::common::LocalObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The validity asked for when `spec.expirationSeconds` is left out (Gardener's default).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest validity that may be asked for (Gardener's minimum).
pub const MIN_EXPIRATION_SECONDS: i64 = 600;

/// A request for a short-lived admin kubeconfig of a shoot, for the user's own key pair.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "authentication.gardener.cloud",
    version = "v1alpha1",
    kind = "AdminKubeconfigRequest",
    plural = "adminkubeconfigrequests",
    namespaced,
    status = "AdminKubeconfigRequestStatus",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Shoot", type_ = "string", json_path = ".spec.shootRef.name"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Expires", type_ = "date", json_path = ".status.expirationTimestamp"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct AdminKubeconfigRequestSpec {
    /// The shoot (in the request's namespace). Immutable.
    pub shoot_ref: LocalObjectReference,
    /// The user's public key, a PEM `PUBLIC KEY` block (RSA of at least 2048 bits, ECDSA or
    /// Ed25519), for example from `openssl pkey -in key.pem -pubout`. Immutable.
    pub public_key: String,
    /// How long the certificate is valid, in seconds (default 3600, at least 600; capped by the
    /// controller-manager's configured maximum). Immutable.
    pub expiration_seconds: Option<i64>,
}

impl AdminKubeconfigRequestSpec {
    /// The requested validity with the default applied.
    pub fn expiration_seconds(&self) -> i64 {
        self.expiration_seconds.unwrap_or(DEFAULT_EXPIRATION_SECONDS)
    }
}

/// Where a request stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AdminKubeconfigRequestPhase {
    /// Not issued yet (the shoot's CA may not exist yet).
    Pending,
    /// The certificate and kubeconfig are in the status.
    Issued,
    /// It cannot be issued; `status.message` says why. Create a new request.
    Failed,
}

/// Observed state of an AdminKubeconfigRequest. Written only by the controller-manager.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminKubeconfigRequestStatus {
    pub phase: Option<AdminKubeconfigRequestPhase>,
    /// Why the request is pending or failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The client certificate (PEM), CN the requesting user, organization `system:masters`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub certificate: String,
    /// A kubeconfig for the shoot with the CA bundle and the certificate; add your key as
    /// `client-key-data` (base64 of the PEM) or `client-key` (a path).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubeconfig: String,
    /// When the certificate expires. The request is deleted some time after.
    pub expiration_timestamp: Option<Time>,
}

/// The CRDs of this group.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![AdminKubeconfigRequest::crd()]
}
