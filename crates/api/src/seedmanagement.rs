//! `seedmanagement.gardener.cloud/v1alpha1`: ManagedSeed and ManagedSeedSet.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The CRDs of this group.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![]
}
