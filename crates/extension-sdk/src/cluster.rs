//! The shoot context an actuator gets: the `Cluster` object named like the shoot's namespace,
//! carrying the Shoot, Seed and CloudProfile as raw JSON.
//!
//! The garden types are read through JSON accessors (and [`ClusterContext::shoot_as`] for a
//! typed view), so the SDK does not depend on which API version of them is embedded.

use api::extensions::Cluster;
use kube::Api;
use serde::de::DeserializeOwned;
use serde_json::Value;

static NULL: Value = Value::Null;

/// The decoded `Cluster` of an extension object, or an empty context for objects that have
/// none (BackupBucket).
#[derive(Clone, Debug, Default)]
pub struct ClusterContext {
    cluster: Option<Cluster>,
}

impl ClusterContext {
    /// A context for an object without a Cluster.
    pub fn none() -> Self {
        Self { cluster: None }
    }

    /// Wraps a Cluster.
    pub fn new(cluster: Cluster) -> Self {
        Self { cluster: Some(cluster) }
    }

    /// Reads the Cluster `name`; `Ok(None)` when it does not exist.
    pub async fn read(client: &kube::Client, name: &str) -> Result<Option<Self>, kube::Error> {
        let api: Api<Cluster> = Api::all(client.clone());
        Ok(api.get_opt(name).await?.map(Self::new))
    }

    /// Whether there is a Cluster behind this context.
    pub fn exists(&self) -> bool {
        self.cluster.is_some()
    }

    /// The Cluster object.
    pub fn raw(&self) -> Option<&Cluster> {
        self.cluster.as_ref()
    }

    /// The Cluster's name (the shoot's namespace in the seed).
    pub fn name(&self) -> Option<&str> {
        self.cluster.as_ref().and_then(|c| c.metadata.name.as_deref())
    }

    /// The raw Shoot (`null` without a Cluster).
    pub fn shoot(&self) -> &Value {
        self.cluster.as_ref().map_or(&NULL, Cluster::shoot_value)
    }

    /// The raw Seed (`null` without a Cluster).
    pub fn seed(&self) -> &Value {
        self.cluster.as_ref().map_or(&NULL, Cluster::seed_value)
    }

    /// The raw CloudProfile (`null` without a Cluster).
    pub fn cloud_profile(&self) -> &Value {
        self.cluster.as_ref().map_or(&NULL, Cluster::cloud_profile_value)
    }

    /// Decodes the Shoot into a typed value.
    pub fn shoot_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self.shoot())
    }

    /// Decodes the Seed into a typed value.
    pub fn seed_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self.seed())
    }

    /// Decodes the CloudProfile into a typed value.
    pub fn cloud_profile_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self.cloud_profile())
    }

    /// `shoot.metadata.name`.
    pub fn shoot_name(&self) -> Option<&str> {
        self.cluster.as_ref().and_then(Cluster::shoot_name)
    }

    /// `shoot.spec.kubernetes.version`.
    pub fn kubernetes_version(&self) -> Option<&str> {
        self.cluster.as_ref().and_then(Cluster::kubernetes_version)
    }

    /// Whether the shoot is (to be) hibernated.
    pub fn is_hibernated(&self) -> bool {
        self.cluster.as_ref().is_some_and(Cluster::is_hibernated)
    }

    /// Whether the shoot has failed finally; its extension objects are then left alone.
    pub fn is_failed(&self) -> bool {
        self.cluster.as_ref().is_some_and(Cluster::is_failed)
    }

    /// Whether the shoot is being deleted.
    pub fn is_shoot_being_deleted(&self) -> bool {
        self.cluster.as_ref().is_some_and(Cluster::is_shoot_being_deleted)
    }

    /// A fingerprint of what the shoot, seed and cloud profile ask for (their `spec`s), so that
    /// a controller reacting to Cluster changes ignores status-only updates.
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for v in [self.shoot(), self.seed(), self.cloud_profile()] {
            v.get("spec").unwrap_or(&NULL).to_string().hash(&mut h);
        }
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::Opaque;
    use api::extensions::ClusterSpec;
    use serde_json::json;

    fn ctx(shoot: Value) -> ClusterContext {
        ClusterContext::new(Cluster::new(
            "shoot--dev--demo",
            ClusterSpec {
                cloud_profile: Opaque(json!({"spec": {"type": "local"}})),
                seed: Opaque(json!({"metadata": {"name": "seed"}})),
                shoot: Opaque(shoot),
            },
        ))
    }

    #[test]
    fn empty_context_answers_without_panicking() {
        let c = ClusterContext::none();
        assert!(!c.exists() && !c.is_failed() && !c.is_hibernated());
        assert_eq!(c.shoot(), &Value::Null);
        assert_eq!(c.name(), None);
    }

    #[test]
    fn reads_shoot_state() {
        let c = ctx(json!({
            "metadata": {"name": "demo"},
            "spec": {"hibernation": {"enabled": true}, "kubernetes": {"version": "1.33.0"}},
            "status": {"lastOperation": {"state": "Failed"}}
        }));
        assert_eq!(c.name(), Some("shoot--dev--demo"));
        assert_eq!(c.shoot_name(), Some("demo"));
        assert_eq!(c.kubernetes_version(), Some("1.33.0"));
        assert!(c.is_hibernated() && c.is_failed());
        #[derive(serde::Deserialize)]
        struct Meta {
            name: String,
        }
        #[derive(serde::Deserialize)]
        struct Shoot {
            metadata: Meta,
        }
        assert_eq!(c.shoot_as::<Shoot>().map(|s| s.metadata.name).ok().as_deref(), Some("demo"));
    }

    #[test]
    fn fingerprint_ignores_status_changes_only() {
        let a = ctx(json!({"spec": {"x": 1}, "status": {"a": 1}}));
        let b = ctx(json!({"spec": {"x": 1}, "status": {"a": 2}}));
        let c = ctx(json!({"spec": {"x": 2}, "status": {"a": 1}}));
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_ne!(a.fingerprint(), c.fingerprint());
    }
}
