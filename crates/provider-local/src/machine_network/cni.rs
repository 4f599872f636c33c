//! Which bridge port a Pod of the seed is on: the seed's CNI plugins record every attachment in
//! their cache (`/var/lib/cni/results/<network>-<container>-<ifname>`, libcni's `cniCacheV1`):
//! the Pod (from the kubelet's CNI arguments), the interfaces (the bridge, the host-side veth,
//! the Pod's own) and the addresses. Parsing is pure; a file that is not such a record is
//! skipped.

use serde::Deserialize;
use std::net::Ipv4Addr;
use std::path::Path;

/// The default cache directory of libcni.
pub const DEFAULT_CACHE_DIR: &str = "/var/lib/cni/results";

/// One Pod's attachment to the bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    pub namespace: String,
    pub pod: String,
    /// The host-side veth: the Pod's bridge port.
    pub veth: String,
    /// The bridge (the first interface outside the sandbox).
    pub bridge: String,
    pub ip: Ipv4Addr,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CacheFile {
    kind: String,
    #[serde(default)]
    cni_args: Vec<(String, String)>,
    result: Option<CacheResult>,
}

#[derive(Deserialize)]
struct CacheResult {
    #[serde(default)]
    interfaces: Vec<Interface>,
    #[serde(default)]
    ips: Vec<IpConfig>,
}

#[derive(Deserialize)]
struct Interface {
    name: String,
    #[serde(default)]
    sandbox: Option<String>,
}

#[derive(Deserialize)]
struct IpConfig {
    address: String,
}

/// The attachment one cache file records, if it is a Pod's IPv4 attachment with a host veth.
pub fn parse(content: &str) -> Option<Attachment> {
    let file: CacheFile = serde_json::from_str(content).ok()?;
    if file.kind != "cniCacheV1" {
        return None;
    }
    let arg = |key: &str| file.cni_args.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let (namespace, pod) = (arg("K8S_POD_NAMESPACE")?, arg("K8S_POD_NAME")?);
    let result = file.result?;
    // The bridge plugin lists the bridge, then the host-side veth, then the Pod's interface
    // (the one in a sandbox): the host-side veth is the last one outside the sandbox.
    let host: Vec<&Interface> =
        result.interfaces.iter().filter(|i| i.sandbox.as_deref().unwrap_or("").is_empty()).collect();
    let (bridge, veth) = match host.as_slice() {
        [bridge, .., veth] => (bridge.name.clone(), veth.name.clone()),
        _ => return None,
    };
    let ip = result.ips.iter().find_map(|c| c.address.split('/').next()?.parse::<Ipv4Addr>().ok())?;
    Some(Attachment { namespace, pod, veth, bridge, ip })
}

/// Every attachment recorded in `dir` (unreadable files skipped).
pub fn read_dir(dir: &Path) -> std::io::Result<Vec<Attachment>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        if let Ok(content) = std::fs::read_to_string(entry.path())
            && let Some(a) = parse(&content)
        {
            found.push(a);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BRIDGED: &str = r#"{"kind": "cniCacheV1", "containerId": "096d", "ifName": "eth0", "networkName": "local-cluster",
        "cniArgs": [["IgnoreUnknown", "1"], ["K8S_POD_NAMESPACE", "shoot--p--a--machines"], ["K8S_POD_NAME", "pool-1234-0"],
                    ["K8S_POD_INFRA_CONTAINER_ID", "096d"]],
        "result": {"cniVersion": "0.4.0", "interfaces": [{"mac": "46:e3", "name": "lcni0"}, {"mac": "06:b4", "name": "vethe219c353"},
                   {"mac": "3a:d8", "name": "eth0", "sandbox": "/run/netns/cni-fb95"}],
                   "ips": [{"address": "10.244.0.9/24", "gateway": "10.244.0.1", "interface": 2, "version": "4"}]}}"#;

    #[test]
    fn a_bridge_attachment_names_the_pod_its_veth_and_address() {
        assert_eq!(
            parse(BRIDGED),
            Some(Attachment {
                namespace: "shoot--p--a--machines".into(),
                pod: "pool-1234-0".into(),
                veth: "vethe219c353".into(),
                bridge: "lcni0".into(),
                ip: "10.244.0.9".parse().unwrap(),
            })
        );
    }

    #[test]
    fn loopback_and_foreign_files_are_skipped() {
        let loopback = r#"{"kind": "cniCacheV1", "cniArgs": [["K8S_POD_NAMESPACE", "x"], ["K8S_POD_NAME", "y"]],
            "result": {"interfaces": [{"name": "lo", "sandbox": "/run/netns/x"}], "ips": [{"address": "127.0.0.1/8"}]}}"#;
        assert_eq!(parse(loopback), None);
        assert_eq!(parse("not json"), None);
        assert_eq!(parse(&BRIDGED.replace("cniCacheV1", "other")), None);
        assert_eq!(parse(&BRIDGED.replace("K8S_POD_NAME", "K8S_OTHER")), None);
    }
}
