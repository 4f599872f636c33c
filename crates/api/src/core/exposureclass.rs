//! `ExposureClass`: a way to expose shoot API servers (for example through a dedicated load
//! balancer or network), chosen by a Shoot's `spec.exposureClassName`. Its scheduling settings
//! narrow the seeds such shoots can land on. Like the reference API it has no `spec`.

use super::shared::{SeedSelector, Toleration};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "ExposureClass",
    plural = "exposureclasses",
    doc = "A way to expose shoot API servers, with the seeds that offer it.",
    no_spec,
    category = "gardener",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Handler", type_ = "string", json_path = ".handler"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ExposureClassFields {
    /// The name of the exposure handler on the seeds (gardenlet's configuration). Immutable.
    pub handler: String,
    /// Where shoots of this class may be scheduled. Immutable.
    pub scheduling: Option<ExposureClassScheduling>,
}

/// The seeds an ExposureClass is offered on.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExposureClassScheduling {
    /// The seeds that offer the class (merged into the shoot's own seed selector).
    pub seed_selector: Option<SeedSelector>,
    /// Taints of those seeds that shoots of the class tolerate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}
