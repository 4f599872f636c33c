//! The table of `up`: every process of the local cluster as a value ([`Component`]: how to
//! start it, the address it listens on, what says it is ready) and the [`plan`] that one loop
//! (`up::run`) follows, stage by stage: start these, wait for those, run that. The order is the
//! bring-up's: containerd and the registry (reader and writer) are readied (and the images
//! imported and pushed) while the API server starts; the node's parts start once the objects
//! are applied.

use super::Options;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::pki::Files;
use crate::process::Spec;
use crate::render;
use crate::settings::*;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// One process of the local cluster.
#[derive(Clone, Debug)]
pub struct Component {
    /// Binary, command line and environment (its files are written before, `up::configs`).
    pub spec: Spec,
    /// Where it listens; held by another process, that is reported before starting.
    pub address: Option<SocketAddr>,
    /// What says it is ready, waited for where the plan says [`Item::Ready`].
    pub readiness: Option<Wait>,
}

/// A readiness wait: a probe asked until it holds, while the named processes keep running.
#[derive(Clone, Debug, PartialEq)]
pub struct Wait {
    pub what: String,
    pub alive: Vec<&'static str>,
    pub probe: Probe,
}

impl Wait {
    fn new(what: impl Into<String>, alive: &[&'static str], probe: Probe) -> Self {
        Self { what: what.into(), alive: alive.to_vec(), probe }
    }
}

/// What a [`Wait`] asks (`up::probes`).
#[derive(Clone, Debug, PartialEq)]
pub enum Probe {
    /// containerd's socket exists and `ctr version` answers.
    ContainerdSocket,
    /// The image registry answers `GET /v2/` with 200 over TLS.
    Registry,
    /// The registry's writer answers `GET /v2/` with 200 over TLS to its credentials.
    RegistryWriter,
    /// The API server's `/readyz` says `ok`.
    ApiServerReady,
    /// A plain HTTP health endpoint answers `GET /healthz` with 200.
    Healthz(SocketAddr),
    /// The node is Ready.
    NodeReady,
    /// The cluster DNS answers the `kubernetes` Service's name with its cluster IP.
    ClusterDns,
    /// The `default` ServiceAccount exists (kube-controller-manager's controllers run).
    DefaultServiceAccount,
    /// Every pod in `kube-system` is Ready (or Succeeded).
    SystemPodsReady,
}

/// A step of the plan that is not a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Import the image archives into containerd.
    ImportImages,
    /// Push the images the registry lacks.
    PushImages,
    /// Apply the cluster's own objects (`manifests`).
    ApplyObjects,
    /// Move the egress guard back to the top of FORWARD.
    EgressGuard,
}

/// One item of a [`Stage`].
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// Start the named component unless it runs.
    Start(&'static str),
    /// Wait for the named component's readiness.
    Ready(&'static str),
    /// Wait for something of the cluster as a whole.
    Check(Wait),
    Run(Action),
}

/// A logged step of the bring-up and its items, in order.
#[derive(Clone, Debug)]
pub struct Stage {
    pub step: &'static str,
    pub items: Vec<Item>,
}

fn loopback(port: u16) -> Option<SocketAddr> {
    Some(loopback_addr(port))
}

fn node(port: u16) -> Option<SocketAddr> {
    Some(SocketAddr::from((IpAddr::V4(NODE_IP), port)))
}

/// Every component, with its command line from [`render`].
pub fn components(layout: &Layout, options: &Options, pki: &Files) -> Result<Vec<Component>> {
    let bin = |name: &str| options.assets.join(name);
    let config = |name: &str| layout.config_file(name).display().to_string();
    let own = std::env::current_exe().map_err(Error::io("finding the own binary", "/proc/self/exe"))?;
    let component =
        |spec: Spec, address: Option<SocketAddr>, readiness: Option<Wait>| Component { spec, address, readiness };
    Ok(vec![
        component(Spec::new("etcd", bin("etcd"), render::etcd_args(layout, pki)), loopback(ETCD_CLIENT_PORT), None),
        component(
            Spec::new("kube-apiserver", bin("kube-apiserver"), render::apiserver_args(layout, pki)),
            node(APISERVER_PORT),
            Some(Wait::new("kube-apiserver /readyz", &["etcd", "kube-apiserver"], Probe::ApiServerReady)),
        ),
        component(
            Spec::new("containerd", "/usr/bin/containerd", vec!["--config".into(), config("containerd.toml")]),
            None,
            Some(Wait::new("containerd's socket", &["containerd"], Probe::ContainerdSocket)),
        ),
        component(
            Spec::new("registry", &options.registry, vec!["serve".into(), config("registry.yaml")]),
            node(REGISTRY_PORT),
            Some(Wait::new("the image registry", &["registry"], Probe::Registry)),
        ),
        component(
            Spec::new("registry-writer", &options.registry, vec!["serve".into(), config("registry-writer.yaml")]),
            loopback(REGISTRY_WRITER_PORT),
            Some(Wait::new("the image registry's writer", &["registry-writer"], Probe::RegistryWriter)),
        ),
        component(
            Spec::new(
                "kube-controller-manager",
                bin("kube-controller-manager"),
                render::controller_manager_args(layout, pki),
            ),
            loopback(KCM_PORT),
            Some(Wait::new("the default ServiceAccount", &["kube-controller-manager"], Probe::DefaultServiceAccount)),
        ),
        component(
            Spec::new("kube-scheduler", bin("kube-scheduler"), render::scheduler_args(layout)),
            loopback(SCHEDULER_PORT),
            None,
        ),
        component(
            Spec::new("kubelet", bin("kubelet"), render::kubelet_args(layout)).env("AWS_EC2_METADATA_DISABLED", "true"),
            node(KUBELET_PORT),
            Some(Wait::new("kubelet healthy", &["kubelet"], Probe::Healthz(loopback_addr(KUBELET_HEALTHZ_PORT)))),
        ),
        component(
            Spec::new("kube-proxy", bin("kube-proxy"), render::kube_proxy_args(layout)),
            loopback(KUBE_PROXY_HEALTHZ_PORT),
            Some(Wait::new(
                "kube-proxy healthy",
                &["kube-proxy"],
                Probe::Healthz(loopback_addr(KUBE_PROXY_HEALTHZ_PORT)),
            )),
        ),
        component(
            Spec::new("addons", own, vec!["addons".into(), format!("--state-dir={}", layout.root().display())]),
            node(DNS_PORT),
            Some(Wait::new("cluster DNS", &["addons"], Probe::ClusterDns)),
        ),
    ])
}

fn loopback_addr(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// The bring-up after the PKI, the configuration files and the host network are in place.
pub fn plan() -> Vec<Stage> {
    use Item::*;
    vec![
        Stage {
            step: "control plane",
            items: vec![
                Start("etcd"),
                Start("kube-apiserver"),
                // containerd and the registry are readied, and the images imported and pushed,
                // while the API server starts.
                Start("containerd"),
                Start("registry"),
                Start("registry-writer"),
                Ready("containerd"),
                Run(Action::ImportImages),
                Ready("registry"),
                Ready("registry-writer"),
                Run(Action::PushImages),
                Ready("kube-apiserver"),
                Start("kube-controller-manager"),
                Start("kube-scheduler"),
            ],
        },
        Stage { step: "objects", items: vec![Run(Action::ApplyObjects)] },
        Stage {
            step: "node",
            items: vec![
                Start("kubelet"),
                Start("kube-proxy"),
                Start("addons"),
                Ready("kubelet"),
                Check(Wait::new(format!("node {NODE_NAME} Ready"), &["kubelet", "containerd"], Probe::NodeReady)),
                // kube-proxy and the kubelet put their FORWARD jumps in front of the guard; it
                // moves back to the top once kube-proxy has synced (it does not reorder later).
                Ready("kube-proxy"),
                Run(Action::EgressGuard),
            ],
        },
        Stage {
            step: "system",
            items: vec![
                Ready("addons"),
                Ready("kube-controller-manager"),
                Check(Wait::new("kube-system pods Ready", &["kubelet"], Probe::SystemPodsReady)),
            ],
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn table() -> Vec<Component> {
        let options = Options {
            assets: "/bin-dir".into(),
            images: "/images".into(),
            timeout: Duration::from_secs(1),
            registry: "/usr/bin/docker-registry".into(),
        };
        components(&Layout::new("/s"), &options, &Files::new("/s/pki")).unwrap()
    }

    fn line(item: &Item) -> String {
        match item {
            Item::Start(name) => format!("start {name}"),
            Item::Ready(name) => format!("ready {name}"),
            Item::Check(wait) => format!("check {}", wait.what),
            Item::Run(action) => format!("run {action:?}"),
        }
    }

    #[test]
    fn the_plan_keeps_the_order_of_the_bring_up() {
        let lines: Vec<String> = plan()
            .iter()
            .flat_map(|s| std::iter::once(format!("[{}]", s.step)).chain(s.items.iter().map(line)))
            .collect();
        let expected = [
            "[control plane]",
            "start etcd",
            "start kube-apiserver",
            "start containerd",
            "start registry",
            "start registry-writer",
            "ready containerd",
            "run ImportImages",
            "ready registry",
            "ready registry-writer",
            "run PushImages",
            "ready kube-apiserver",
            "start kube-controller-manager",
            "start kube-scheduler",
            "[objects]",
            "run ApplyObjects",
            "[node]",
            "start kubelet",
            "start kube-proxy",
            "start addons",
            "ready kubelet",
            "check node local-node Ready",
            "ready kube-proxy",
            "run EgressGuard",
            "[system]",
            "ready addons",
            "ready kube-controller-manager",
            "check kube-system pods Ready",
        ];
        assert_eq!(lines, expected);
    }

    #[test]
    fn every_component_starts_once_and_is_waited_for_after_it_started() {
        let table = table();
        let items: Vec<Item> = plan().into_iter().flat_map(|s| s.items).collect();
        for component in &table {
            let name = component.spec.name;
            let starts: Vec<usize> =
                items.iter().enumerate().filter(|(_, i)| **i == Item::Start(name)).map(|(n, _)| n).collect();
            let readies: Vec<usize> =
                items.iter().enumerate().filter(|(_, i)| **i == Item::Ready(name)).map(|(n, _)| n).collect();
            assert_eq!(starts.len(), 1, "{name} starts once");
            assert_eq!(
                readies.len(),
                usize::from(component.readiness.is_some()),
                "{name}'s readiness is waited for once"
            );
            assert!(readies.iter().all(|r| *r > starts[0]), "{name} is waited for after it started");
        }
        for item in &items {
            if let Item::Start(name) | Item::Ready(name) = item {
                assert!(table.iter().any(|c| c.spec.name == *name), "{name} is in the table");
            }
        }
    }

    #[test]
    fn components_listen_where_the_settings_say_and_carry_their_flags() {
        let table = table();
        let get = |name: &str| table.iter().find(|c| c.spec.name == name).unwrap();
        assert_eq!(get("etcd").address, Some("127.0.0.1:12379".parse().unwrap()));
        assert_eq!(get("kube-apiserver").address, Some("10.250.0.1:6443".parse().unwrap()));
        assert_eq!(get("registry").address, Some("10.250.0.1:5000".parse().unwrap()));
        assert_eq!(get("addons").address, Some("10.250.0.1:53".parse().unwrap()));
        assert_eq!(get("containerd").address, None);
        assert_eq!(get("containerd").spec.args, ["--config", "/s/config/containerd.toml"]);
        assert_eq!(get("registry").spec.args, ["serve", "/s/config/registry.yaml"]);
        assert_eq!(get("registry-writer").address, Some("127.0.0.1:5001".parse().unwrap()));
        assert_eq!(get("registry-writer").spec.args, ["serve", "/s/config/registry-writer.yaml"]);
        assert_eq!(get("registry-writer").spec.binary, get("registry").spec.binary);
        assert_eq!(get("kubelet").spec.env, [("AWS_EC2_METADATA_DISABLED".to_string(), "true".to_string())]);
        assert_eq!(get("kubelet").spec.binary, std::path::Path::new("/bin-dir/kubelet"));
        assert_eq!(get("addons").spec.args, ["addons", "--state-dir=/s"]);
        assert_eq!(
            get("kube-proxy").readiness.as_ref().map(|w| &w.probe),
            Some(&Probe::Healthz("127.0.0.1:10256".parse().unwrap()))
        );
    }
}
