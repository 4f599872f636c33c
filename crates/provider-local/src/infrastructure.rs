//! Infrastructure: a namespace for the shoot's machines and NetworkPolicies that isolate it.
//!
//! The namespace `<technical-id>--machines` is the shoot's "real infrastructure": Worker puts
//! its machine Pods there. Ingress to the machines is allowed only from the machines themselves
//! and from the shoot's control-plane namespace (`<technical-id>`); egress is left open (the
//! machines must reach their kube-apiserver). Migrate keeps everything; restore adopts it, since
//! the names follow from the technical ID and server-side apply takes existing objects over.

use crate::common::{
    apply_params, delete_if_exists, describe, ensure_namespace, provider_config, shoot_labels, technical_id,
};
use crate::error::Error;
use extension_sdk::api::extensions::Infrastructure;
use extension_sdk::k8s_openapi::api::core::v1::Namespace;
use extension_sdk::k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicySpec,
};
use extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use extension_sdk::kube::api::{ObjectMeta, Patch};
use extension_sdk::kube::{Api, Client};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

const COMPONENT: &str = "infrastructure";
/// Node network reported when neither the provider config nor the shoot names one.
pub const DEFAULT_NODE_NETWORK: &str = "10.250.0.0/16";
/// The NetworkPolicy isolating a shoot's machines.
pub const POLICY_ISOLATE: &str = "isolate-machines";

/// `spec.providerConfig` of a `local` Infrastructure.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InfrastructureConfig {
    /// The node network to report; defaults to the shoot's `spec.networking.nodes`.
    pub node_network: Option<String>,
}

/// What Infrastructure created, kept in `status.state` so that a restore finds it again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InfrastructureState {
    pub namespace: String,
    pub network_policies: Vec<String>,
}

/// The namespace holding a shoot's machines.
pub fn machine_namespace(technical_id: &str) -> String {
    format!("{technical_id}--machines")
}

/// The labels of the machine namespace as `component` (infrastructure, worker) applies them:
/// the shoot's, and pod security level `privileged` (label `pod-security.kubernetes.io/enforce`,
/// which the garden's admission server enforces): a machine Pod runs a kubelet and containerd
/// (privileged, host devices), which `baseline` refuses.
pub fn machine_namespace_labels(technical_id: &str, component: &str) -> BTreeMap<String, String> {
    let mut labels = shoot_labels(technical_id, component);
    labels.insert("pod-security.kubernetes.io/enforce".into(), "privileged".into());
    labels
}

/// The node network: provider config, else the shoot's `spec.networking.nodes`, else the default.
pub fn node_network(config: &InfrastructureConfig, cluster: &ClusterContext) -> String {
    config
        .node_network
        .clone()
        .or_else(|| cluster.shoot().pointer("/spec/networking/nodes").and_then(|v| v.as_str()).map(str::to_string))
        .unwrap_or_else(|| DEFAULT_NODE_NETWORK.to_string())
}

/// The isolating NetworkPolicy: ingress only from the namespace itself and from the shoot's
/// control plane.
pub fn isolation_policy(technical_id: &str) -> NetworkPolicy {
    let namespace = machine_namespace(technical_id);
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(POLICY_ISOLATE.into()),
            namespace: Some(namespace),
            labels: Some(shoot_labels(technical_id, COMPONENT)),
            ..Default::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector::default()),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![
                    NetworkPolicyPeer { pod_selector: Some(LabelSelector::default()), ..Default::default() },
                    NetworkPolicyPeer {
                        namespace_selector: Some(LabelSelector {
                            match_labels: Some(BTreeMap::from([(
                                "kubernetes.io/metadata.name".to_string(),
                                technical_id.to_string(),
                            )])),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                ]),
                ports: None,
            }]),
            egress: None,
        }),
    }
}

/// The Infrastructure actuator.
#[derive(Clone)]
pub struct LocalInfrastructure {
    client: Client,
}

crate::debug_without_client!(LocalInfrastructure);

impl LocalInfrastructure {
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    async fn ensure(&self, infra: &Infrastructure, cluster: &ClusterContext) -> Result<Outcome<Infrastructure>, Error> {
        let object = describe(infra);
        let config: InfrastructureConfig =
            provider_config(infra.spec.default.provider_config.as_ref(), &object, "spec.providerConfig")?;
        let id = technical_id(infra)?;
        let network = node_network(&config, cluster);
        network.parse::<ipnet::IpNet>().map_err(|e| {
            Error::config(&object, "spec.providerConfig.nodeNetwork", format!("{network:?} is not a CIDR: {e}"))
        })?;
        let namespace = machine_namespace(&id);
        ensure_namespace(&self.client, &namespace, machine_namespace_labels(&id, COMPONENT), COMPONENT).await?;
        let policy = isolation_policy(&id);
        Api::<NetworkPolicy>::namespaced(self.client.clone(), &namespace)
            .patch(POLICY_ISOLATE, &apply_params(COMPONENT), &Patch::Apply(&policy))
            .await
            .map_err(Error::kube(format!("applying NetworkPolicy {namespace}/{POLICY_ISOLATE}")))?;

        let state = InfrastructureState { namespace: namespace.clone(), network_policies: vec![POLICY_ISOLATE.into()] };
        let state = serde_json::to_value(&state).map_err(|e| Error::config(&object, "status.state", e.to_string()))?;
        let provider_status = json!({
            "apiVersion": "local.provider.extensions.gardener.cloud/v1alpha1",
            "kind": "InfrastructureStatus",
            "machineNamespace": namespace,
            "networks": {"nodes": network},
        });
        Ok(Outcome::done().with_state(state).with_provider_status(provider_status).with_status(
            move |s: &mut extension_sdk::api::extensions::InfrastructureStatus| s.node_network = Some(network),
        ))
    }
}

impl Actuator<Infrastructure> for LocalInfrastructure {
    #[tracing::instrument(skip_all, fields(infrastructure = %describe(infra)))]
    async fn reconcile(
        &self,
        infra: &Infrastructure,
        cluster: &ClusterContext,
    ) -> Result<Outcome<Infrastructure>, ActuatorError> {
        Ok(self.ensure(infra, cluster).await?)
    }

    #[tracing::instrument(skip_all, fields(infrastructure = %describe(infra)))]
    async fn delete(&self, infra: &Infrastructure, _: &ClusterContext) -> Result<(), ActuatorError> {
        let id = technical_id(infra)?;
        let namespace = machine_namespace(&id);
        let policies: Api<NetworkPolicy> = Api::namespaced(self.client.clone(), &namespace);
        delete_if_exists(&policies, POLICY_ISOLATE, "NetworkPolicy").await?;
        // Deleting the namespace removes whatever is left in it (machines of a Worker that was
        // not deleted first, for instance).
        delete_if_exists(&Api::<Namespace>::all(self.client.clone()), &namespace, "Namespace").await?;
        tracing::info!(namespace, "removed the machine namespace");
        Ok(())
    }

    async fn migrate(
        &self,
        infra: &Infrastructure,
        _: &ClusterContext,
    ) -> Result<Outcome<Infrastructure>, ActuatorError> {
        // The namespace and its policies are the real infrastructure: they stay. The state
        // already on the object tells the destination what to adopt.
        tracing::info!(infrastructure = %describe(infra), "migrating: keeping the machine namespace");
        Ok(Outcome::done())
    }

    // restore = reconcile: the names follow from the technical ID and server-side apply adopts
    // the existing namespace and policy.
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::api::Opaque;
    use extension_sdk::api::extensions::{Cluster, ClusterSpec};

    fn cluster(shoot: serde_json::Value) -> ClusterContext {
        ClusterContext::new(Cluster::new(
            "shoot--dev--a",
            ClusterSpec { cloud_profile: Opaque(json!({})), seed: Opaque(json!({})), shoot: Opaque(shoot) },
        ))
    }

    #[test]
    fn node_network_prefers_config_then_shoot_then_default() {
        let c = cluster(json!({"spec": {"networking": {"nodes": "10.1.0.0/16"}}}));
        let cfg = InfrastructureConfig { node_network: Some("10.2.0.0/16".into()) };
        assert_eq!(node_network(&cfg, &c), "10.2.0.0/16");
        assert_eq!(node_network(&InfrastructureConfig::default(), &c), "10.1.0.0/16");
        assert_eq!(node_network(&InfrastructureConfig::default(), &ClusterContext::none()), DEFAULT_NODE_NETWORK);
    }

    #[test]
    fn the_machine_namespace_is_privileged_and_labelled_for_the_shoot() {
        let labels = machine_namespace_labels("shoot--dev--a", "worker");
        assert_eq!(labels.get("pod-security.kubernetes.io/enforce").map(String::as_str), Some("privileged"));
        assert_eq!(labels.get("shoot.gardener.cloud/technical-id").map(String::as_str), Some("shoot--dev--a"));
        assert!(shoot_labels("shoot--dev--a", "worker").iter().all(|(k, v)| labels.get(k) == Some(v)));
    }

    #[test]
    fn policy_isolates_the_machine_namespace() {
        let p = isolation_policy("shoot--dev--a");
        assert_eq!(p.metadata.namespace.as_deref(), Some("shoot--dev--a--machines"));
        let v = serde_json::to_value(&p).unwrap_or_default();
        assert_eq!(v["spec"]["policyTypes"], json!(["Ingress"]));
        assert_eq!(
            v["spec"]["ingress"][0]["from"][1]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
            "shoot--dev--a"
        );
        assert_eq!(v["metadata"]["labels"]["shoot.gardener.cloud/technical-id"], "shoot--dev--a");
    }
}
