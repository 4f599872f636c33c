//! containerd's configuration files, serialized from typed structs with the `toml` crate: the
//! daemon's `config.toml` (version 2) and the `hosts.toml` of its registry configuration
//! directory.

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::settings::SANDBOX_IMAGE;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// containerd's `config.toml` (version 2), the parts the local cluster sets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub version: u32,
    pub root: String,
    pub state: String,
    pub grpc: Address,
    pub ttrpc: Address,
    pub debug: Debug,
    pub plugins: Plugins,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Address {
    pub address: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Debug {
    pub level: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plugins {
    #[serde(rename = "io.containerd.internal.v1.opt")]
    pub opt: Opt,
    #[serde(rename = "io.containerd.grpc.v1.cri")]
    pub cri: Cri,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Opt {
    pub path: String,
}

/// The CRI plugin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cri {
    pub sandbox_image: String,
    pub restrict_oom_score_adj: bool,
    pub netns_mounts_under_state_dir: bool,
    pub disable_apparmor: bool,
    pub enable_selinux: bool,
    pub stream_server_address: String,
    /// A string in containerd's schema.
    pub stream_server_port: String,
    pub cni: Cni,
    pub registry: Registry,
    pub containerd: CriContainerd,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cni {
    pub bin_dir: String,
    pub conf_dir: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    /// The `certs.d` directory with one `hosts.toml` per registry host.
    pub config_path: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CriContainerd {
    pub snapshotter: String,
    pub runtimes: Runtimes,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Runtimes {
    pub runc: Runtime,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Runtime {
    pub runtime_type: String,
    pub options: RuncOptions,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RuncOptions {
    pub binary_name: String,
    pub root: String,
    pub systemd_cgroup: bool,
}

/// A `hosts.toml` of containerd's registry configuration directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hosts {
    pub server: String,
    pub host: BTreeMap<String, Host>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub capabilities: Vec<String>,
}

fn p(path: impl AsRef<Path>) -> String {
    path.as_ref().display().to_string()
}

/// containerd: private root, state, socket and runc root; the CRI with the settings this kind
/// of machine needs (`restrict_oom_score_adj`, netns under the state directory), the project's
/// own CNI configuration directory, and a registry configuration that sends every pull to a
/// closed local port so that nothing is ever fetched from outside.
pub fn config(layout: &Layout) -> Config {
    let dir = layout.containerd();
    let d = |sub: &str| p(dir.join(sub));
    let sock = p(layout.containerd_socket());
    Config {
        version: 2,
        root: d("root"),
        state: d("state"),
        ttrpc: Address { address: format!("{sock}.ttrpc") },
        grpc: Address { address: sock },
        debug: Debug { level: "warn".into() },
        plugins: Plugins {
            opt: Opt { path: d("opt") },
            cri: Cri {
                sandbox_image: SANDBOX_IMAGE.into(),
                restrict_oom_score_adj: true,
                netns_mounts_under_state_dir: true,
                disable_apparmor: true,
                enable_selinux: false,
                stream_server_address: "127.0.0.1".into(),
                stream_server_port: "0".into(),
                cni: Cni { bin_dir: "/usr/lib/cni".into(), conf_dir: p(layout.cni_conf()) },
                registry: Registry { config_path: d("certs.d") },
                containerd: CriContainerd {
                    snapshotter: "overlayfs".into(),
                    runtimes: Runtimes {
                        runc: Runtime {
                            runtime_type: "io.containerd.runc.v2".into(),
                            options: RuncOptions {
                                binary_name: "/usr/sbin/runc".into(),
                                root: d("runc"),
                                systemd_cgroup: false,
                            },
                        },
                    },
                },
            },
        },
    }
}

/// [`config`] as TOML.
pub fn containerd_config(layout: &Layout) -> Result<String> {
    to_toml(&config(layout), "containerd's configuration")
}

/// The closed loopback port every registry resolves to.
const NOWHERE: &str = "http://127.0.0.1:1";

/// `hosts.toml` for `certs.d/_default`: every registry resolves to a closed loopback port, so
/// a missing image fails at once with a clear error instead of leaving the machine.
pub fn hosts() -> Hosts {
    let capabilities = vec!["pull".to_string(), "resolve".to_string()];
    Hosts { server: NOWHERE.into(), host: BTreeMap::from([(NOWHERE.to_string(), Host { capabilities })]) }
}

/// [`hosts`] as TOML.
pub fn registry_hosts() -> Result<String> {
    to_toml(&hosts(), "containerd's registry hosts")
}

fn to_toml(value: &impl Serialize, what: &str) -> Result<String> {
    toml::to_string(value).map_err(|source| Error::Toml { what: format!("encoding {what}"), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_containerd_config_parses_back_with_its_sandbox_image_registry_path_and_cgroups() {
        let text = containerd_config(&Layout::new("/s")).unwrap();
        let back: Config = toml::from_str(&text).unwrap();
        assert_eq!(back, config(&Layout::new("/s")));
        let value: toml::Value = toml::from_str(&text).unwrap();
        let cri = &value["plugins"]["io.containerd.grpc.v1.cri"];
        assert_eq!(value["version"].as_integer(), Some(2));
        assert_eq!(value["grpc"]["address"].as_str(), Some("/s/containerd/containerd.sock"));
        assert_eq!(value["ttrpc"]["address"].as_str(), Some("/s/containerd/containerd.sock.ttrpc"));
        assert_eq!(cri["sandbox_image"].as_str(), Some("registry.k8s.io/pause:3.6"));
        assert_eq!(cri["stream_server_port"].as_str(), Some("0"), "a string in containerd's schema");
        assert_eq!(cri["registry"]["config_path"].as_str(), Some("/s/containerd/certs.d"));
        assert_eq!(cri["cni"]["conf_dir"].as_str(), Some("/s/cni/net.d"));
        let runc = &cri["containerd"]["runtimes"]["runc"];
        assert_eq!(runc["runtime_type"].as_str(), Some("io.containerd.runc.v2"));
        assert_eq!(runc["options"]["SystemdCgroup"].as_bool(), Some(false));
        assert_eq!(runc["options"]["Root"].as_str(), Some("/s/containerd/runc"));
        assert_eq!(value["plugins"]["io.containerd.internal.v1.opt"]["path"].as_str(), Some("/s/containerd/opt"));
    }

    #[test]
    fn paths_that_need_escaping_survive_the_round_trip() {
        // A quote or a backslash in the state directory ended the string early in a template.
        let root = r#"/tmp/my "state" \dir"#;
        let text = containerd_config(&Layout::new(root)).unwrap();
        let value: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(value["root"].as_str(), Some(format!("{root}/containerd/root").as_str()));
        assert_eq!(
            value["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["config_path"].as_str(),
            Some(format!("{root}/containerd/certs.d").as_str())
        );
    }

    #[test]
    fn every_registry_resolves_to_a_closed_loopback_port() {
        let value: toml::Value = toml::from_str(&registry_hosts().unwrap()).unwrap();
        assert_eq!(value["server"].as_str(), Some("http://127.0.0.1:1"));
        let caps = value["host"]["http://127.0.0.1:1"]["capabilities"].as_array().unwrap();
        assert_eq!(caps.iter().filter_map(|c| c.as_str()).collect::<Vec<_>>(), ["pull", "resolve"]);
    }
}
