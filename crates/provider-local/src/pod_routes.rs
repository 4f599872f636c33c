//! The pod routes of a shoot's nodes: `gardener-extension-provider-local pod-routes`, run by the
//! Network's DaemonSet on every node of a shoot ([`crate::network`]) in the node's own network
//! namespace. A machine's CNI (bridge `cni0`, host-local IPAM) serves only its own pod CIDR;
//! a packet to another node's pod would leave through the machine's default route, and the local
//! cluster refuses it there. Each agent keeps, in its node's main routing table, one route per
//! other Node: that Node's `spec.podCIDR` via its `InternalIP`, what a cloud's route controller
//! (or flannel's host-gw backend) provides. The routes carry the protocol number
//! [`ROUTE_PROTOCOL`], so the agent finds its own and removes those of Nodes that are gone,
//! and never touches a route someone else made.
//!
//! The decisions are pure ([`desired`], [`parse_routes`], [`plan`]); the agent watches the
//! Nodes and runs iproute2's `ip` only when the wanted routes change.

use extension_sdk::k8s_openapi::api::core::v1::Node;
use extension_sdk::kube::runtime::{WatchStreamExt, reflector, watcher};
use extension_sdk::kube::{Api, Client, ResourceExt};
use futures::StreamExt;
use ipnet::Ipv4Net;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::process::Command;

/// The protocol number of the agent's routes (`ip route ... proto 201`): routes with another
/// protocol (the kernel's, the CNI's, the machine's default route) are never changed.
pub const ROUTE_PROTOCOL: &str = "201";

/// The `ip` binary (iproute2) in provider-local's image.
pub const IP: &str = "/usr/sbin/ip";

/// What went wrong in the agent.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("running `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
    #[error("reading the routes `{command}` printed: {message}")]
    Parse { command: String, message: String },
    #[error("the watch of Nodes ended")]
    WatchEnded,
}

/// The routes this node wants: destination pod CIDR → gateway (the owning Node's InternalIP),
/// for every Node but `own` that has both. A Node without a pod CIDR (not yet given one by
/// kube-controller-manager) or without an IPv4 InternalIP gets no route yet.
pub fn desired(nodes: &[Node], own: &str) -> BTreeMap<Ipv4Net, Ipv4Addr> {
    let mut routes = BTreeMap::new();
    for node in nodes.iter().filter(|n| n.name_any() != own) {
        let Some(gateway) = internal_ip(node) else { continue };
        let spec = node.spec.as_ref();
        let cidrs = spec.and_then(|s| s.pod_cidrs.clone()).filter(|c| !c.is_empty());
        let cidrs = cidrs.or_else(|| spec.and_then(|s| s.pod_cidr.clone()).map(|c| vec![c])).unwrap_or_default();
        for cidr in cidrs.iter().filter_map(|c| c.parse::<Ipv4Net>().ok()) {
            routes.insert(cidr.trunc(), gateway);
        }
    }
    routes
}

fn internal_ip(node: &Node) -> Option<Ipv4Addr> {
    let addresses = node.status.as_ref()?.addresses.as_ref()?;
    addresses.iter().filter(|a| a.type_ == "InternalIP").find_map(|a| a.address.parse().ok())
}

/// One route as `ip -json route show` prints it (the fields the agent reads).
#[derive(serde::Deserialize)]
struct Shown {
    dst: String,
    gateway: Option<String>,
}

/// The agent's routes now in the table, from `ip -json -4 route show proto 201`'s output.
/// A route without a gateway (not one of ours in shape) maps to `0.0.0.0`, so [`plan`]
/// replaces it.
pub fn parse_routes(json: &str) -> Result<BTreeMap<Ipv4Net, Ipv4Addr>, String> {
    if json.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let shown: Vec<Shown> = serde_json::from_str(json).map_err(|e| e.to_string())?;
    shown
        .into_iter()
        .map(|r| {
            let dst: Ipv4Net = r.dst.parse().map_err(|e| format!("destination {:?}: {e}", r.dst))?;
            let gateway = match r.gateway {
                Some(g) => g.parse().map_err(|e| format!("gateway {g:?} of {dst}: {e}"))?,
                None => Ipv4Addr::UNSPECIFIED,
            };
            Ok((dst, gateway))
        })
        .collect()
}

/// A change to the routing table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Add the route, or point it at a new gateway.
    Replace { dst: Ipv4Net, gateway: Ipv4Addr },
    /// Remove a route of a Node that is gone (or lost its pod CIDR).
    Delete { dst: Ipv4Net },
}

impl Change {
    /// The arguments of `ip` that make the change.
    pub fn args(&self) -> Vec<String> {
        match self {
            Change::Replace { dst, gateway } => ["route", "replace", &dst.to_string(), "via", &gateway.to_string()]
                .into_iter()
                .map(str::to_string)
                .chain(["proto".into(), ROUTE_PROTOCOL.into()])
                .collect(),
            Change::Delete { dst } => {
                ["route", "del", &dst.to_string(), "proto", ROUTE_PROTOCOL].into_iter().map(str::to_string).collect()
            }
        }
    }
}

/// What turns the `current` routes into the `wanted` ones: deletions first (a pod CIDR that
/// moved to another Node is replaced, not deleted), nothing when they are equal.
pub fn plan(current: &BTreeMap<Ipv4Net, Ipv4Addr>, wanted: &BTreeMap<Ipv4Net, Ipv4Addr>) -> Vec<Change> {
    let deletes = current.keys().filter(|dst| !wanted.contains_key(*dst)).map(|dst| Change::Delete { dst: *dst });
    let replaces = wanted
        .iter()
        .filter(|(dst, gateway)| current.get(*dst) != Some(*gateway))
        .map(|(dst, gateway)| Change::Replace { dst: *dst, gateway: *gateway });
    deletes.chain(replaces).collect()
}

/// Runs `ip` with `args`; its standard output.
fn ip(args: &[String]) -> Result<String, Error> {
    let command = format!("{IP} {}", args.join(" "));
    let out =
        Command::new(IP).args(args).output().map_err(|source| Error::Spawn { command: command.clone(), source })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(Error::Failed { command, stderr });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Brings the node's routing table to `wanted`. Every change is tried; the first failure is
/// returned after the others ran (a gateway not on the machine's link fails alone).
pub fn sync(wanted: &BTreeMap<Ipv4Net, Ipv4Addr>) -> Result<usize, Error> {
    let show: Vec<String> = ["-json", "-4", "route", "show", "proto", ROUTE_PROTOCOL].map(str::to_string).to_vec();
    let current = parse_routes(&ip(&show)?)
        .map_err(|message| Error::Parse { command: format!("{IP} {}", show.join(" ")), message })?;
    let changes = plan(&current, wanted);
    let mut first_error = None;
    for change in &changes {
        match ip(&change.args()) {
            Ok(_) => tracing::info!(?change, "route changed"),
            Err(e) => {
                tracing::warn!(?change, error = %e, "route change failed");
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(changes.len()), Err)
}

/// Watches the shoot's Nodes and keeps the routes of `own` (this node) until the watch ends.
/// The table is read and changed only when the wanted routes differ from the last ones made
/// (Node heartbeats change nothing).
pub async fn run(client: Client, own: String) -> Result<(), Error> {
    let (store, writer) = reflector::store::<Node>();
    let mut events =
        reflector(writer, watcher(Api::<Node>::all(client), watcher::Config::default())).default_backoff().boxed();
    let mut made: Option<BTreeMap<Ipv4Net, Ipv4Addr>> = None;
    // The store holds every Node once the first list is complete.
    let mut listed = false;
    tracing::info!(node = %own, "keeping the routes to the other nodes' pods");
    while let Some(event) = events.next().await {
        match event {
            Err(e) => {
                tracing::warn!(error = %e, "watching Nodes");
                continue;
            }
            Ok(watcher::Event::InitDone) => listed = true,
            Ok(_) => {}
        }
        if !listed {
            continue;
        }
        let nodes: Vec<Node> = store.state().iter().map(|n| (**n).clone()).collect();
        let wanted = desired(&nodes, &own);
        if made.as_ref() == Some(&wanted) {
            continue;
        }
        match sync(&wanted) {
            Ok(changed) => {
                tracing::info!(routes = wanted.len(), changed, "routes in place");
                made = Some(wanted);
            }
            // Tried again at the next Node event (or when the wanted routes change).
            Err(e) => tracing::warn!(error = %e, "routes not all in place"),
        }
    }
    Err(Error::WatchEnded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::k8s_openapi::api::core::v1::{NodeAddress, NodeSpec, NodeStatus};
    use extension_sdk::kube::api::ObjectMeta;

    fn node(name: &str, pod_cidr: Option<&str>, internal_ip: Option<&str>) -> Node {
        Node {
            metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
            spec: Some(NodeSpec { pod_cidr: pod_cidr.map(str::to_string), ..Default::default() }),
            status: Some(NodeStatus {
                addresses: Some(
                    [("Hostname", Some(name)), ("InternalIP", internal_ip)]
                        .into_iter()
                        .filter_map(|(t, a)| a.map(|a| NodeAddress { type_: t.into(), address: a.into() }))
                        .collect(),
                ),
                ..Default::default()
            }),
        }
    }

    fn net(s: &str) -> Ipv4Net {
        s.parse().expect("a CIDR")
    }

    fn addr(s: &str) -> Ipv4Addr {
        s.parse().expect("an address")
    }

    #[test]
    fn every_other_node_with_a_pod_cidr_and_an_internal_ip_gets_a_route() {
        let nodes = [
            node("m-0", Some("100.96.0.0/24"), Some("10.244.0.67")),
            node("m-1", Some("100.96.1.0/24"), Some("10.244.0.68")),
            node("m-2", None, Some("10.244.0.69")),
            node("m-3", Some("100.96.3.0/24"), None),
            node("m-4", Some("100.96.4.7/24"), Some("10.244.0.70")),
        ];
        let routes = desired(&nodes, "m-0");
        assert_eq!(
            routes,
            BTreeMap::from([(net("100.96.1.0/24"), addr("10.244.0.68")), (net("100.96.4.0/24"), addr("10.244.0.70")),]),
            "not its own, not without a CIDR or address; a CIDR with host bits is the network"
        );
        assert!(desired(&nodes[..1], "m-0").is_empty(), "a single node routes nothing");
    }

    #[test]
    fn the_pod_cidrs_list_wins_over_the_single_field() {
        let mut n = node("m-1", Some("100.96.1.0/24"), Some("10.244.0.68"));
        if let Some(spec) = n.spec.as_mut() {
            spec.pod_cidrs = Some(vec!["100.96.1.0/24".into(), "fd00::/64".into()]);
        }
        assert_eq!(desired(&[n], "m-0"), BTreeMap::from([(net("100.96.1.0/24"), addr("10.244.0.68"))]));
    }

    #[test]
    fn the_table_is_read_from_ip_json() {
        let json = r#"[{"dst":"100.96.1.0/24","gateway":"10.244.0.68","dev":"eth0","flags":[]},
                       {"dst":"100.96.2.0/24","dev":"eth0","flags":["linkdown"]}]"#;
        assert_eq!(
            parse_routes(json),
            Ok(BTreeMap::from([
                (net("100.96.1.0/24"), addr("10.244.0.68")),
                (net("100.96.2.0/24"), Ipv4Addr::UNSPECIFIED),
            ]))
        );
        assert_eq!(parse_routes(""), Ok(BTreeMap::new()), "ip prints nothing for an empty table");
        assert_eq!(parse_routes("[]"), Ok(BTreeMap::new()));
        let bad = parse_routes(r#"[{"dst":"default","gateway":"10.0.0.1"}]"#).expect_err("not a CIDR");
        assert!(bad.contains("default"), "{bad}");
    }

    #[test]
    fn the_plan_deletes_what_is_gone_and_replaces_what_moved_or_is_new() {
        let current = BTreeMap::from([
            (net("100.96.1.0/24"), addr("10.244.0.68")),
            (net("100.96.2.0/24"), addr("10.244.0.69")),
            (net("100.96.3.0/24"), addr("10.244.0.70")),
        ]);
        let wanted = BTreeMap::from([
            (net("100.96.1.0/24"), addr("10.244.0.68")),
            (net("100.96.3.0/24"), addr("10.244.0.71")),
            (net("100.96.4.0/24"), addr("10.244.0.72")),
        ]);
        assert_eq!(
            plan(&current, &wanted),
            vec![
                Change::Delete { dst: net("100.96.2.0/24") },
                Change::Replace { dst: net("100.96.3.0/24"), gateway: addr("10.244.0.71") },
                Change::Replace { dst: net("100.96.4.0/24"), gateway: addr("10.244.0.72") },
            ]
        );
        assert!(plan(&wanted, &wanted).is_empty(), "nothing to do when the table is right");
    }

    #[test]
    fn changes_are_ip_commands_on_the_agents_protocol_only() {
        let replace = Change::Replace { dst: net("100.96.1.0/24"), gateway: addr("10.244.0.68") };
        assert_eq!(replace.args().join(" "), "route replace 100.96.1.0/24 via 10.244.0.68 proto 201");
        let delete = Change::Delete { dst: net("100.96.1.0/24") };
        assert_eq!(delete.args().join(" "), "route del 100.96.1.0/24 proto 201");
    }
}
