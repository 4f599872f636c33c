//! `extensions.gardener.cloud/v1alpha1`: the objects gardenlet creates in a seed and provider
//! extensions reconcile.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub mod common;
pub mod infrastructure;

pub use common::{DefaultSpec, DefaultStatus, ExtensionClass, ExtensionKind};
pub use infrastructure::{Infrastructure, InfrastructureSpec, InfrastructureStatus};

/// The CRDs of this group.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![Infrastructure::crd()]
}
