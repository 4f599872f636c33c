//! `operations.gardener.cloud/v1alpha1`: Bastion (SSH access to a shoot's machines).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The CRDs of this group.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![]
}
