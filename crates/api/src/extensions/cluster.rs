//! `Cluster` (cluster-scoped, one per shoot namespace in a seed, named like the namespace): the
//! shoot's Shoot, Seed and CloudProfile as raw JSON, so that extensions can read their context
//! (hibernation, failure, versions) without access to the garden cluster.
//!
//! The accessors work on the raw JSON only, so that they stay usable whatever API version of the
//! garden objects is embedded.

use crate::opaque::Opaque;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The garden objects an extension may need, embedded as they are.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "Cluster",
    plural = "clusters",
    derive = "PartialEq",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// The shoot's CloudProfile.
    pub cloud_profile: Opaque,
    /// The Seed the shoot runs on.
    pub seed: Opaque,
    /// The Shoot.
    pub shoot: Opaque,
}

impl Cluster {
    /// The raw Shoot.
    pub fn shoot_value(&self) -> &Value {
        self.spec.shoot.as_value()
    }

    /// The raw Seed.
    pub fn seed_value(&self) -> &Value {
        self.spec.seed.as_value()
    }

    /// The raw CloudProfile.
    pub fn cloud_profile_value(&self) -> &Value {
        self.spec.cloud_profile.as_value()
    }

    /// `shoot.metadata.name`.
    pub fn shoot_name(&self) -> Option<&str> {
        self.shoot_value().pointer("/metadata/name").and_then(Value::as_str)
    }

    /// `shoot.metadata.namespace` (the project namespace in the garden).
    pub fn shoot_namespace(&self) -> Option<&str> {
        self.shoot_value().pointer("/metadata/namespace").and_then(Value::as_str)
    }

    /// `seed.metadata.name`.
    pub fn seed_name(&self) -> Option<&str> {
        self.seed_value().pointer("/metadata/name").and_then(Value::as_str)
    }

    /// `shoot.spec.provider.type`.
    pub fn provider_type(&self) -> Option<&str> {
        self.shoot_value().pointer("/spec/provider/type").and_then(Value::as_str)
    }

    /// `shoot.spec.kubernetes.version`.
    pub fn kubernetes_version(&self) -> Option<&str> {
        self.shoot_value().pointer("/spec/kubernetes/version").and_then(Value::as_str)
    }

    /// Whether the shoot is (to be) hibernated: `shoot.spec.hibernation.enabled == true`.
    pub fn is_hibernated(&self) -> bool {
        self.shoot_value().pointer("/spec/hibernation/enabled").and_then(Value::as_bool).unwrap_or(false)
    }

    /// Whether the shoot's last operation failed finally (`shoot.status.lastOperation.state ==
    /// "Failed"`). Extensions do not reconcile the objects of a failed shoot.
    pub fn is_failed(&self) -> bool {
        self.shoot_value().pointer("/status/lastOperation/state").and_then(Value::as_str) == Some("Failed")
    }

    /// Whether the shoot is being deleted (`shoot.metadata.deletionTimestamp` is set).
    pub fn is_shoot_being_deleted(&self) -> bool {
        self.shoot_value().pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(shoot: Value) -> Cluster {
        Cluster::new(
            "shoot--dev--demo",
            ClusterSpec {
                cloud_profile: Opaque(json!({"metadata": {"name": "local"}})),
                seed: Opaque(json!({"metadata": {"name": "local-seed"}})),
                shoot: Opaque(shoot),
            },
        )
    }

    #[test]
    fn reads_names_versions_and_provider() {
        let c = cluster(json!({
            "metadata": {"name": "demo", "namespace": "garden-dev"},
            "spec": {"provider": {"type": "local"}, "kubernetes": {"version": "1.20.2"}},
        }));
        assert_eq!(c.shoot_name(), Some("demo"));
        assert_eq!(c.shoot_namespace(), Some("garden-dev"));
        assert_eq!(c.seed_name(), Some("local-seed"));
        assert_eq!(c.provider_type(), Some("local"));
        assert_eq!(c.kubernetes_version(), Some("1.20.2"));
        assert_eq!(c.cloud_profile_value()["metadata"]["name"], "local");
        assert!(!c.is_hibernated());
        assert!(!c.is_failed());
        assert!(!c.is_shoot_being_deleted());
    }

    #[test]
    fn hibernation_follows_spec_flag() {
        let on = cluster(json!({"spec": {"hibernation": {"enabled": true}}}));
        let off = cluster(json!({"spec": {"hibernation": {"enabled": false}}}));
        let absent = cluster(json!({"spec": {}}));
        assert!(on.is_hibernated());
        assert!(!off.is_hibernated());
        assert!(!absent.is_hibernated());
    }

    #[test]
    fn failed_only_when_last_operation_failed() {
        let failed = cluster(json!({"status": {"lastOperation": {"state": "Failed", "type": "Reconcile"}}}));
        let error = cluster(json!({"status": {"lastOperation": {"state": "Error", "type": "Reconcile"}}}));
        assert!(failed.is_failed());
        assert!(!error.is_failed());
        assert!(!cluster(Value::Null).is_failed());
    }

    #[test]
    fn deletion_timestamp_marks_deletion() {
        let c = cluster(json!({"metadata": {"deletionTimestamp": "2024-01-02T03:04:05Z"}}));
        assert!(c.is_shoot_being_deleted());
    }

    #[test]
    fn missing_fields_yield_none() {
        let c = cluster(json!({}));
        assert_eq!(c.shoot_name(), None);
        assert_eq!(c.kubernetes_version(), None);
        assert_eq!(c.provider_type(), None);
    }
}
