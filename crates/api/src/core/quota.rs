//! `Quota`: limits on what shoots may consume, per project or per provider secret, and an
//! optional maximum lifetime for clusters.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "Quota",
    plural = "quotas",
    doc = "Limits on the resources shoots may consume, per project or per provider secret.",
    namespaced,
    shortname = "squota",
    category = "gardener",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Scope", type_ = "string", json_path = ".spec.scope.kind"),
    printcolumn(
        name = "Lifetime",
        type_ = "integer",
        json_path = ".spec.clusterLifetimeDays",
        description = "Cluster lifetime in days"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct QuotaSpec {
    /// How many days a shoot may live before it is deleted automatically.
    pub cluster_lifetime_days: Option<i32>,
    /// The limited resources and their limits (for example `cpu`, `memory`, `storage.standard`,
    /// `loadbalancer`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, Quantity>,
    /// What the quota applies to: a `Project` or a `Secret`. Immutable.
    pub scope: QuotaScope,
}

/// The kind of object a quota applies to (the reference's `ObjectReference`, of which only
/// `apiGroup`/`apiVersion` and `kind` are used).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuotaScope {
    /// The API group of the scope kind (`core.gardener.cloud` for projects, empty for secrets).
    pub api_group: Option<String>,
    /// The API version of the scope kind.
    pub api_version: Option<String>,
    /// The scope kind: `Project`, `Secret` or `WorkloadIdentity`.
    pub kind: String,
}
