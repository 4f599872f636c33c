//! `core.gardener.cloud/v1beta1`: the objects users and operators write in the garden.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The CRDs of this group.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![]
}
