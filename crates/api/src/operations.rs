//! `operations.gardener.cloud/v1alpha1`: Bastion (SSH access to a shoot's machines).
//!
//! A user creates a Bastion in the project namespace; gardenlet creates the seed-side
//! `extensions.gardener.cloud` Bastion from it and syncs its ingress address back. The user
//! keeps it alive with the `gardener.cloud/operation: keepalive` annotation until
//! `status.expirationTimestamp`.

pub use crate::common::BastionIngressPolicy;
use crate::common::{Condition, LocalObjectReference};
use k8s_openapi::api::core::v1::LoadBalancerIngress;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a bastion for SSH access to a shoot.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operations.gardener.cloud",
    version = "v1alpha1",
    kind = "Bastion",
    plural = "bastions",
    namespaced,
    status = "BastionStatus",
    derive = "PartialEq",
    printcolumn(name = "Shoot", type_ = "string", json_path = ".spec.shootRef.name"),
    printcolumn(name = "Seed", type_ = "string", json_path = ".spec.seedName"),
    printcolumn(name = "IP", type_ = "string", json_path = ".status.ingress.ip"),
    printcolumn(name = "Hostname", type_ = "string", json_path = ".status.ingress.hostname"),
    printcolumn(name = "Expires", type_ = "date", json_path = ".status.expirationTimestamp"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct BastionSpec {
    /// The shoot (in the Bastion's namespace) whose machines are reached. Immutable.
    pub shoot_ref: LocalObjectReference,
    /// The seed of the shoot; set by the API server.
    pub seed_name: Option<String>,
    /// The shoot's provider type; set by the API server.
    pub provider_type: Option<String>,
    /// The user's SSH public key (base64-encoded). Immutable.
    pub ssh_public_key: String,
    /// Who may connect to the bastion (typically the user's public IP).
    pub ingress: Vec<BastionIngressPolicy>,
}

/// Observed state of a Bastion.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BastionStatus {
    /// The address under which the bastion is reachable.
    pub ingress: Option<LoadBalancerIngress>,
    /// `BastionReady` tells the client that it may connect.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// When the last keepalive was received.
    pub last_heartbeat_timestamp: Option<Time>,
    /// When the bastion is deleted unless kept alive.
    pub expiration_timestamp: Option<Time>,
    pub observed_generation: Option<i64>,
}

/// The CRDs of this group.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![Bastion::crd()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::networking::v1::IPBlock;

    #[test]
    fn crd_has_group_plural_and_scope() {
        let crd = Bastion::crd();
        assert_eq!(crd.spec.group, "operations.gardener.cloud");
        assert_eq!(crd.spec.names.plural, "bastions");
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.metadata.name.as_deref(), Some("bastions.operations.gardener.cloud"));
        assert!(crd.spec.versions[0].subresources.as_ref().and_then(|s| s.status.as_ref()).is_some());
        assert_eq!(crds().len(), 1);
    }

    #[test]
    fn spec_uses_reference_spelling() {
        let spec = BastionSpec {
            shoot_ref: LocalObjectReference { name: "demo".into() },
            ssh_public_key: "c3NoLXJzYSAuLi4K".into(),
            ingress: vec![BastionIngressPolicy { ip_block: IPBlock { cidr: "1.2.3.4/32".into(), except: None } }],
            ..Default::default()
        };
        let v = serde_json::to_value(&spec).unwrap();
        assert_eq!(v["shootRef"]["name"], "demo");
        assert_eq!(v["sshPublicKey"], "c3NoLXJzYSAuLi4K");
        assert_eq!(v["ingress"][0]["ipBlock"]["cidr"], "1.2.3.4/32");
    }
}
