//! The machine network guard: shoots' machines in networks of their own on the local seed
//! (`gardener-extension-provider-local machine-network-guard`, a DaemonSet on the seed's nodes
//! with the host's network). A real provider puts a shoot's nodes in the customer's network,
//! which the seed cannot route into and which reaches the seed only through its published
//! entry point; here the machines are Pods on the seed's bridge, so the guard makes that true
//! with iptables rules on the node ([`rules`]), counted by the kernel:
//!
//! * from the seed's host and Pods, a shoot's machines and its pod and service networks are
//!   refused;
//! * a machine reaches the machines of its own shoot, the seed's entry point (443, 8132), the
//!   seed's DNS, its
//!   own kube-apiserver (its Service and Pods: in-cluster clients send no server name the entry
//!   point could route by), and on the host DNS, the image registry and the garden's API;
//!   everything else is refused;
//! * other shoots' machines are refused both ways; the shoot's bastion may reach SSH.
//!
//! The guard watches machine and bastion Pods, the kube-apiserver and entry-point Services and
//! the Clusters (the shoots' networks), finds each Pod's bridge port in the CNI plugins' cache
//! ([`cni`]), and rewrites its chains (`iptables-restore --noflush`) only when the rules change.
//! Rules of a deleted shoot go with its last machine. When the guard stops, its rules stay
//! (closed, not open); the local cluster's teardown removes every `PROVIDER-LOCAL-` chain.

pub mod cni;
pub mod rules;

use crate::common::LABEL_MANAGED_BY;
use crate::host_command::{CommandError, run};
use extension_sdk::api::extensions::Cluster;
use extension_sdk::api::helpers::constants::LABEL_TECHNICAL_ID;
use extension_sdk::k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use extension_sdk::kube::runtime::reflector::{self, Store, reflector};
use extension_sdk::kube::runtime::{WatchStreamExt, watcher};
use extension_sdk::kube::{Api, Client, ResourceExt};
use futures::StreamExt;
use ipnet::Ipv4Net;
use rules::{Inputs, Member, Ruleset};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;

/// How often the rules are checked even when nothing was seen to change (a Pod's CNI record
/// appears on disk, not in the API; someone may have flushed the chains).
const RESYNC: Duration = Duration::from_secs(10);
/// Changes arriving together are applied together.
const SETTLE: Duration = Duration::from_millis(300);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error("reading the CNI cache {dir}: {source}")]
    Cache {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("a watch ended")]
    WatchEnded,
}

/// The guard's settings.
#[derive(Clone, Debug)]
pub struct Settings {
    pub cni_cache: PathBuf,
    /// The seed's entry point Service (`namespace/name`), if the seed has one.
    pub entry: Option<(String, String)>,
    pub host_ports: Vec<(rules::Protocol, u16)>,
}

const WORKER: &str = "provider-local-worker";
/// The kube-apiserver's Service and Endpoints in each shoot's seed namespace.
const APISERVER: &str = "kube-apiserver";
const BASTION: &str = "provider-local-bastion";

/// The Pods that belong to shoots, from the stores and the CNI cache, as rule members.
fn members(pods: &[std::sync::Arc<Pod>], attachments: &[cni::Attachment]) -> (Vec<Member>, Vec<Member>) {
    let mut machines = Vec::new();
    let mut bastions = Vec::new();
    for pod in pods {
        let labels = pod.labels();
        let (Some(shoot), Some(role)) = (labels.get(LABEL_TECHNICAL_ID), labels.get(LABEL_MANAGED_BY)) else {
            continue;
        };
        let Some(ip) = pod.status.as_ref().and_then(|s| s.pod_ip.as_ref()).and_then(|ip| ip.parse::<Ipv4Addr>().ok())
        else {
            continue;
        };
        let namespace = pod.namespace().unwrap_or_default();
        let veth = attachments
            .iter()
            .find(|a| a.namespace == namespace && a.pod == pod.name_any() && a.ip == ip)
            .map(|a| a.veth.clone())
            .unwrap_or_default();
        let member = Member { shoot: shoot.clone(), veth, ip };
        match role.as_str() {
            WORKER => machines.push(member),
            BASTION => bastions.push(member),
            _ => {}
        }
    }
    machines.sort();
    bastions.sort();
    (machines, bastions)
}

/// A Service's cluster IP (IPv4).
fn cluster_ip(svc: &Service) -> Option<Ipv4Addr> {
    svc.spec.as_ref()?.cluster_ip.as_ref()?.parse().ok()
}

/// A Cluster's shoot networks (pods, services).
fn networks(cluster: &Cluster) -> Vec<Ipv4Net> {
    let shoot = serde_json::to_value(&cluster.spec.shoot).unwrap_or_default();
    let networking = &shoot["spec"]["networking"];
    ["pods", "services"].iter().filter_map(|k| networking[*k].as_str()?.parse::<Ipv4Net>().ok()).collect()
}

/// Writes the ruleset, hooks its chains into the built-in ones (first), and deletes chains of
/// ours it no longer declares.
pub fn apply(ruleset: &Ruleset) -> Result<(), Error> {
    run("iptables-restore", &["-w", "5", "--noflush"], Some(&ruleset.restore))?;
    for (builtin, chain) in rules::HOOKS {
        if run("iptables", &["-w", "5", "-C", builtin, "-j", chain], None).is_err() {
            run("iptables", &["-w", "5", "-I", builtin, "1", "-j", chain], None)?;
        }
    }
    let listing = run("iptables", &["-w", "5", "-S"], None)?;
    for chain in rules::stale_chains(&listing, &ruleset.chains) {
        run("iptables", &["-w", "5", "-F", &chain], None)?;
        run("iptables", &["-w", "5", "-X", &chain], None)?;
    }
    Ok(())
}

/// Whether every hook is in place (someone may have flushed the built-in chains).
fn hooked() -> bool {
    rules::HOOKS.iter().all(|(builtin, chain)| run("iptables", &["-w", "5", "-C", builtin, "-j", chain], None).is_ok())
}

/// Runs the guard until a watch ends.
pub async fn run_guard(client: Client, settings: Settings) -> Result<(), Error> {
    let pods: Api<Pod> = Api::all(client.clone());
    let selector = format!("{LABEL_MANAGED_BY} in ({WORKER},{BASTION}),{LABEL_TECHNICAL_ID}");
    let (pod_store, pod_writer) = reflector::store();
    let pod_events = reflector(pod_writer, watcher(pods, watcher::Config::default().labels(&selector)))
        .default_backoff()
        .touched_objects()
        .map(|_| ());
    // All Services: the entry point's and every kube-apiserver's.
    let services: Api<Service> = Api::all(client.clone());
    let (svc_store, svc_writer) = reflector::store::<Service>();
    let svc_events = reflector(svc_writer, watcher(services, watcher::Config::default()))
        .default_backoff()
        .touched_objects()
        .map(|_| ());
    // Only the kube-apiservers' Endpoints: where a shoot's `kubernetes` Service leads.
    let endpoints: Api<Endpoints> = Api::all(client.clone());
    let (endpoint_store, endpoint_writer) = reflector::store::<Endpoints>();
    let endpoint_config = watcher::Config::default().fields(&format!("metadata.name={APISERVER}"));
    let endpoint_events =
        reflector(endpoint_writer, watcher(endpoints, endpoint_config)).default_backoff().touched_objects().map(|_| ());
    let clusters: Api<Cluster> = Api::all(client.clone());
    let (cluster_store, cluster_writer) = reflector::store::<Cluster>();
    let cluster_events = reflector(cluster_writer, watcher(clusters, watcher::Config::default()))
        .default_backoff()
        .touched_objects()
        .map(|_| ());
    let mut events = std::pin::pin!(futures::stream::select_all([
        pod_events.boxed(),
        svc_events.boxed(),
        endpoint_events.boxed(),
        cluster_events.boxed(),
    ]));
    let mut resync = tokio::time::interval(RESYNC);
    let mut applied: Option<Ruleset> = None;
    loop {
        tokio::select! {
            event = events.next() => {
                if event.is_none() {
                    return Err(Error::WatchEnded);
                }
                tokio::time::sleep(SETTLE).await;
            }
            _ = resync.tick() => {}
        }
        // Rules from half-listed stores would drop existing shoots' chains: wait for all lists.
        if !(listed(&pod_store) && listed(&svc_store) && listed(&endpoint_store) && listed(&cluster_store)) {
            continue;
        }
        let wanted = match desired(&settings, &pod_store, &svc_store, &endpoint_store, &cluster_store) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "machine network rules not computed");
                continue;
            }
        };
        if applied.as_ref() == Some(&wanted) && hooked() {
            continue;
        }
        match apply(&wanted) {
            Ok(()) => {
                tracing::info!(chains = wanted.chains.len(), "machine network rules applied");
                applied = Some(wanted);
            }
            Err(e) => tracing::warn!(error = %e, "machine network rules not applied; retrying"),
        }
    }
}

/// Whether a store has its first complete list.
fn listed<K: extension_sdk::kube::Resource + Clone + 'static>(store: &Store<K>) -> bool
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    futures::FutureExt::now_or_never(store.wait_until_ready()).is_some_and(|r| r.is_ok())
}

/// The ready addresses of an Endpoints object, with each of its ports.
fn endpoint_addresses(e: &Endpoints) -> Vec<SocketAddrV4> {
    let mut out = Vec::new();
    for subset in e.subsets.iter().flatten() {
        let ports: Vec<u16> = subset.ports.iter().flatten().filter_map(|p| u16::try_from(p.port).ok()).collect();
        for address in subset.addresses.iter().flatten() {
            if let Ok(ip) = address.ip.parse::<Ipv4Addr>() {
                out.extend(ports.iter().map(|port| SocketAddrV4::new(ip, *port)));
            }
        }
    }
    out
}

fn desired(
    settings: &Settings,
    pods: &Store<Pod>,
    services: &Store<Service>,
    endpoints: &Store<Endpoints>,
    clusters: &Store<Cluster>,
) -> Result<Ruleset, Error> {
    let attachments = cni::read_dir(&settings.cni_cache)
        .map_err(|source| Error::Cache { dir: settings.cni_cache.clone(), source })?;
    let (machines, bastions) = members(&pods.state(), &attachments);
    let services = services.state();
    let entry = settings.entry.as_ref().and_then(|(ns, name)| {
        services
            .iter()
            .find(|s| s.namespace().as_deref() == Some(ns.as_str()) && s.name_any() == *name)
            .and_then(|s| cluster_ip(s))
    });
    let mut apiservers: BTreeMap<String, Vec<SocketAddrV4>> = BTreeMap::new();
    for s in services.iter().filter(|s| s.name_any() == APISERVER) {
        if let (Some(ns), Some(ip)) = (s.namespace(), cluster_ip(s)) {
            apiservers.entry(ns).or_default().push(SocketAddrV4::new(ip, 443));
        }
    }
    for e in endpoints.state().iter().filter(|e| e.name_any() == APISERVER) {
        if let Some(ns) = e.namespace() {
            apiservers.entry(ns).or_default().extend(endpoint_addresses(e));
        }
    }
    let shoot_networks = clusters.state().iter().map(|c| (c.name_any(), networks(c))).collect();
    let dns = services
        .iter()
        .find(|s| s.namespace().as_deref() == Some("kube-system") && s.name_any() == "kube-dns")
        .and_then(|s| cluster_ip(s));
    // The machines' bridge (all Pods of a node share one).
    let bridge = machines
        .iter()
        .find_map(|m| attachments.iter().find(|a| a.veth == m.veth).map(|a| a.bridge.clone()))
        .unwrap_or_default();
    Ok(rules::ruleset(&Inputs {
        machines,
        bastions,
        entry,
        apiservers,
        shoot_networks,
        host_ports: settings.host_ports.clone(),
        dns,
        bridge,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pod(ns: &str, name: &str, role: &str, shoot: &str, ip: Option<&str>) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"namespace": ns, "name": name, "labels": {LABEL_TECHNICAL_ID: shoot, LABEL_MANAGED_BY: role}},
                "status": {"podIP": ip},
            }))
            .unwrap(),
        )
    }

    fn attachment(ns: &str, pod: &str, veth: &str, ip: &str) -> cni::Attachment {
        cni::Attachment {
            namespace: ns.into(),
            pod: pod.into(),
            veth: veth.into(),
            bridge: "lcni0".into(),
            ip: ip.parse().unwrap(),
        }
    }

    #[test]
    fn machines_and_bastions_get_their_bridge_port_by_pod_and_address() {
        let pods = [
            pod("shoot--p--a--machines", "m-0", WORKER, "shoot--p--a", Some("10.244.0.10")),
            pod("shoot--p--a--machines", "m-1", WORKER, "shoot--p--a", Some("10.244.0.11")),
            pod("shoot--p--a", "bastion", BASTION, "shoot--p--a", Some("10.244.0.12")),
            pod("shoot--p--a--machines", "m-2", WORKER, "shoot--p--a", None),
            pod("elsewhere", "other", "provider-local-other", "shoot--p--a", Some("10.244.0.13")),
        ];
        let attachments = [
            attachment("shoot--p--a--machines", "m-0", "veth0", "10.244.0.10"),
            // An old sandbox of m-1 with another address is not m-1's port now.
            attachment("shoot--p--a--machines", "m-1", "vethold", "10.244.0.99"),
            attachment("shoot--p--a", "bastion", "vethb", "10.244.0.12"),
        ];
        let (machines, bastions) = members(&pods, &attachments);
        let ports: Vec<(&str, &str)> = machines.iter().map(|m| (m.veth.as_str(), m.shoot.as_str())).collect();
        assert_eq!(
            ports,
            [("", "shoot--p--a"), ("veth0", "shoot--p--a")],
            "m-1 waits for its current record; m-2 has no address"
        );
        assert_eq!(bastions.len(), 1);
        assert_eq!(bastions[0].veth, "vethb");
    }

    #[test]
    fn endpoint_addresses_with_every_port() {
        let e: Endpoints = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "kube-apiserver", "namespace": "shoot--p--a"},
            "subsets": [{"addresses": [{"ip": "10.244.0.50"}], "ports": [{"port": 8443}, {"port": 8132}]}],
        }))
        .unwrap();
        let got: Vec<String> = endpoint_addresses(&e).iter().map(ToString::to_string).collect();
        assert_eq!(got, ["10.244.0.50:8443", "10.244.0.50:8132"]);
    }
}
