//! The shoot's node addresses, from a watch of its Nodes: an agent may dial the kubelets
//! wherever the provider placed the machines, without a network range covering them (a
//! provider's real node addresses need not lie in `spec.networking.nodes`).

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::Store;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use std::net::IpAddr;

/// Whether `ip` is one of `node`'s addresses.
pub fn has_address(node: &Node, ip: IpAddr) -> bool {
    let addresses = node.status.as_ref().and_then(|s| s.addresses.as_ref());
    addresses.is_some_and(|list| list.iter().any(|a| a.address.parse::<IpAddr>() == Ok(ip)))
}

/// The addresses of the Nodes the watch has seen.
#[derive(Clone)]
pub struct NodeAddresses {
    store: Store<Node>,
}

impl std::fmt::Debug for NodeAddresses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeAddresses").field("nodes", &self.store.state().len()).finish()
    }
}

impl NodeAddresses {
    /// The addresses, and the watch that keeps them (run it for the agent's lifetime).
    pub fn watch(client: kube::Client) -> (Self, impl std::future::Future<Output = ()> + Send) {
        let (store, writer) = reflector::store();
        let stream = reflector(writer, watcher(kube::Api::<Node>::all(client), watcher::Config::default()))
            .default_backoff()
            .touched_objects();
        let run = stream.for_each(|event| {
            if let Err(e) = event {
                tracing::warn!(error = %e, "watching the Nodes");
            }
            std::future::ready(())
        });
        (Self { store }, run)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        self.store.state().iter().any(|node| has_address(node, ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_has_each_of_its_status_addresses() {
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "a"},
            "status": {"addresses": [
                {"type": "InternalIP", "address": "10.244.0.7"},
                {"type": "Hostname", "address": "machine-a"},
            ]},
        }))
        .unwrap_or_default();
        assert!(has_address(&node, "10.244.0.7".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))));
        assert!(!has_address(&node, "10.244.0.8".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))));
        assert!(!has_address(&Node::default(), "10.244.0.7".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))));
    }
}
