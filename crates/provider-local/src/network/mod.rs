//! Network: the pod network between a shoot's nodes. Each machine's own CNI (bridge `cni0`,
//! host-local IPAM on the Node's pod CIDR, images/machine) connects the pods of that node; the
//! Network makes the nodes' pod CIDRs reach each other, as a networking extension does: it
//! deploys into the shoot (reached with its admin kubeconfig, [`crate::shoot`]) the pod routes
//! agent ([`crate::pod_routes`], [`manifests`]) on every node, writing only what differs
//! ([`crate::controlplane::apply`]). Reconcile validates the CIDRs and records them in
//! `providerStatus`.
//!
//! Nothing is deployed (and `providerStatus` says why) without provider-local's own image
//! (`--volume-provisioner-image`), for shoots without workers, for a shoot being deleted, and
//! while the shoot is hibernated (its API server is down; what was deployed stays). Deletion
//! removes nothing from the shoot: the Network is deleted when the shoot is, and its nodes go too.

pub mod manifests;

use crate::common::describe;
use crate::controlplane::apply::apply_agent;
use crate::controlplane::has_workers;
use crate::error::Error;
use extension_sdk::api::extensions::Network;
use extension_sdk::api::extensions::network::IpFamily;
use extension_sdk::kube::Client;
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use serde_json::json;

/// The field manager and managed-by label: `provider-local/network`.
const COMPONENT: &str = "network";

/// What the description says when the agent is in place.
pub const DESCRIPTION: &str = "the pod routes agent keeps every node's route to every other node's pod CIDR";

/// What a reconcile does in the shoot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShootSide<'a> {
    /// Deploy the pod routes agent running `image`.
    Deploy { image: &'a str },
    /// Nothing, for this reason (recorded in `providerStatus.note`).
    Nothing(&'static str),
}

/// Decides what a reconcile does in the shoot of `cluster`.
pub fn decide<'a>(image: Option<&'a str>, cluster: &ClusterContext) -> ShootSide<'a> {
    match image {
        None => ShootSide::Nothing(
            "provider-local runs without its own image (--volume-provisioner-image): no pod routes agent, so pods reach only the pods of their own node",
        ),
        Some(_) if !cluster.exists() => {
            ShootSide::Nothing("no Cluster resource for this shoot: its workers are unknown")
        }
        Some(_) if !has_workers(cluster.shoot()) => {
            ShootSide::Nothing("the shoot has no workers: there are no nodes to connect")
        }
        Some(_) if cluster.is_shoot_being_deleted() => {
            ShootSide::Nothing("the shoot is being deleted: its nodes go with it")
        }
        Some(_) if cluster.is_hibernated() => ShootSide::Nothing(
            "the shoot is hibernated (its API server is down): the shoot was not looked at; what was deployed stays",
        ),
        Some(image) => ShootSide::Deploy { image },
    }
}

/// Validates the CIDRs and builds the `providerStatus`: the CIDRs, and either the objects the
/// Network manages in the shoot or why there are none.
pub fn provider_status(network: &Network, side: &ShootSide<'_>) -> Result<serde_json::Value, Error> {
    for (field, cidr) in [("spec.podCIDR", &network.spec.pod_cidr), ("spec.serviceCIDR", &network.spec.service_cidr)] {
        cidr.parse::<ipnet::IpNet>()
            .map_err(|e| Error::config(describe(network), field, format!("{cidr:?} is not a CIDR: {e}")))?;
    }
    let families: Vec<&str> = if network.spec.ip_families.is_empty() {
        vec!["IPv4"]
    } else {
        network.spec.ip_families.iter().map(|f| if *f == IpFamily::Ipv4 { "IPv4" } else { "IPv6" }).collect()
    };
    let mut status = json!({
        "podCIDR": network.spec.pod_cidr,
        "serviceCIDR": network.spec.service_cidr,
        "ipFamilies": families,
        "cni": "bridge per machine, routes between the machines",
    });
    match side {
        ShootSide::Deploy { image } => {
            status["managedResources"] = json!(manifests::objects(image).references());
            status["podRoutes"] = json!({"image": image, "protocol": crate::pod_routes::ROUTE_PROTOCOL});
        }
        ShootSide::Nothing(why) => {
            status["managedResources"] = json!([]);
            status["note"] = json!(why);
        }
    }
    Ok(status)
}

/// The Network actuator.
#[derive(Clone)]
pub struct LocalNetwork {
    client: Client,
    image: Option<String>,
}

crate::debug_without_client!(LocalNetwork);

impl LocalNetwork {
    /// `image`: provider-local's own image, which the shoot's pod routes DaemonSet runs; `None`
    /// deploys nothing.
    pub fn new(client: Client, image: Option<String>) -> Self {
        Self { client, image: image.filter(|i| !i.is_empty()) }
    }

    /// Applies the objects into the shoot; returns how many were written.
    #[tracing::instrument(skip_all, fields(network = %describe(network)))]
    async fn deploy(&self, network: &Network, image: &str) -> Result<usize, Error> {
        let shoot = crate::shoot::required_client(&self.client, network).await?;
        apply_agent(&shoot, COMPONENT, &manifests::objects(image)).await
    }
}

impl Actuator<Network> for LocalNetwork {
    async fn reconcile(&self, network: &Network, cluster: &ClusterContext) -> Result<Outcome<Network>, ActuatorError> {
        let side = decide(self.image.as_deref(), cluster);
        let status = provider_status(network, &side)?;
        let outcome = match side {
            ShootSide::Deploy { image } => {
                let written = self.deploy(network, image).await?;
                tracing::info!(network = %describe(network), written, "the pod routes agent is in place");
                Outcome::done().with_description(format!("{DESCRIPTION} ({written} of 4 objects written)"))
            }
            ShootSide::Nothing(why) => {
                tracing::debug!(network = %describe(network), why, "nothing to deploy");
                Outcome::done().with_description(format!("nothing deployed into the shoot: {why}"))
            }
        };
        Ok(outcome.with_provider_status(status))
    }

    /// Nothing to remove: the Network goes with the shoot, whose nodes (and so the agent and its
    /// routes) go too.
    async fn delete(&self, _: &Network, _: &ClusterContext) -> Result<(), ActuatorError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::api::extensions::NetworkSpec;

    #[test]
    fn records_cidrs_and_rejects_invalid_ones() {
        let mut n = Network::new(
            "n",
            NetworkSpec { pod_cidr: "10.1.0.0/16".into(), service_cidr: "fd00::/108".into(), ..Default::default() },
        );
        let side = ShootSide::Deploy { image: "reg/pl:v1" };
        let s = provider_status(&n, &side).unwrap_or_default();
        assert_eq!(s["podCIDR"], "10.1.0.0/16");
        assert_eq!(s["ipFamilies"], json!(["IPv4"]));
        assert_eq!(s["podRoutes"]["image"], "reg/pl:v1");
        assert_eq!(s["managedResources"].as_array().map(Vec::len), Some(4));
        let nothing = provider_status(&n, &ShootSide::Nothing("why")).unwrap_or_default();
        assert_eq!(nothing["note"], "why");
        assert_eq!(nothing["managedResources"], json!([]));
        n.spec.pod_cidr = "10.1.0.0".into();
        let e = provider_status(&n, &side).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("spec.podCIDR"), "{e}");
    }

    #[test]
    fn without_the_image_nothing_is_deployed_and_the_reason_says_what_breaks() {
        match decide(None, &ClusterContext::default()) {
            ShootSide::Nothing(why) => assert!(why.contains("own node"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(decide(Some("i"), &ClusterContext::default()), ShootSide::Nothing(_)), "no Cluster");
    }
}
