//! The kubelet's `KubeletConfiguration` (kubelet.config.k8s.io/v1beta1), serialized from a typed
//! struct with serde (YAML).

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::pki::{self, Files};
use crate::settings::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The fields of `KubeletConfiguration` the local cluster sets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfiguration {
    pub api_version: String,
    pub kind: String,
    pub address: String,
    pub port: u16,
    pub read_only_port: u16,
    pub healthz_bind_address: String,
    pub healthz_port: u16,
    pub authentication: Authentication,
    pub authorization: Authorization,
    pub tls_cert_file: String,
    pub tls_private_key_file: String,
    pub cgroup_driver: String,
    pub fail_swap_on: bool,
    pub node_status_update_frequency: String,
    pub node_status_report_frequency: String,
    #[serde(rename = "clusterDNS")]
    pub cluster_dns: Vec<String>,
    pub cluster_domain: String,
    pub resolv_conf: String,
    #[serde(rename = "podCIDR")]
    pub pod_cidr: String,
    /// Signal → threshold (`memory.available: 100Mi`).
    pub eviction_hard: BTreeMap<String, String>,
    #[serde(rename = "imageGCHighThresholdPercent")]
    pub image_gc_high_threshold_percent: u8,
    #[serde(rename = "imageGCLowThresholdPercent")]
    pub image_gc_low_threshold_percent: u8,
    pub serialize_image_pulls: bool,
    pub max_pods: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Authentication {
    pub anonymous: Enabled,
    pub webhook: Enabled,
    pub x509: X509,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Enabled {
    pub enabled: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct X509 {
    #[serde(rename = "clientCAFile")]
    pub client_ca_file: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Authorization {
    pub mode: String,
}

fn p(path: impl AsRef<Path>) -> String {
    path.as_ref().display().to_string()
}

/// The kubelet's configuration: serving certificate (so the API server can reach it for logs
/// and exec), webhook authentication and authorization, cgroupfs, no swap check, fast status
/// updates, cluster DNS, a `resolv.conf` that resolves nothing outward, and image GC off (the
/// images are built locally and cannot be pulled again).
pub fn config(layout: &Layout, pki: &Files) -> KubeletConfiguration {
    let eviction_hard = [
        ("memory.available", "100Mi"),
        ("nodefs.available", "1%"),
        ("nodefs.inodesFree", "1%"),
        ("imagefs.available", "1%"),
    ];
    KubeletConfiguration {
        api_version: "kubelet.config.k8s.io/v1beta1".into(),
        kind: "KubeletConfiguration".into(),
        address: NODE_IP.to_string(),
        port: KUBELET_PORT,
        read_only_port: 0,
        healthz_bind_address: "127.0.0.1".into(),
        healthz_port: KUBELET_HEALTHZ_PORT,
        authentication: Authentication {
            anonymous: Enabled { enabled: false },
            webhook: Enabled { enabled: true },
            x509: X509 { client_ca_file: p(pki.path(pki::CA, "ca.crt")) },
        },
        authorization: Authorization { mode: "Webhook".into() },
        tls_cert_file: p(pki.path(pki::KUBELET_SERVING, "tls.crt")),
        tls_private_key_file: p(pki.path(pki::KUBELET_SERVING, "tls.key")),
        cgroup_driver: "cgroupfs".into(),
        fail_swap_on: false,
        node_status_update_frequency: "2s".into(),
        node_status_report_frequency: "10s".into(),
        cluster_dns: vec![DNS_SERVICE_IP.to_string()],
        cluster_domain: CLUSTER_DOMAIN.into(),
        resolv_conf: p(layout.resolv_conf()),
        pod_cidr: POD_CIDR.into(),
        eviction_hard: eviction_hard.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        image_gc_high_threshold_percent: 100,
        image_gc_low_threshold_percent: 99,
        serialize_image_pulls: false,
        max_pods: 110,
    }
}

/// [`config`] as YAML.
pub fn kubelet_config(layout: &Layout, pki: &Files) -> Result<String> {
    serde_yaml::to_string(&config(layout, pki))
        .map_err(|source| Error::Yaml { what: "encoding the kubelet's configuration".into(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubelet_config_parses_back_with_dns_cgroups_and_authentication() {
        let (layout, pki) = (Layout::new("/s"), Files::new("/s/pki"));
        let text = kubelet_config(&layout, &pki).unwrap();
        let back: KubeletConfiguration = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back, config(&layout, &pki));
        let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(yaml["kind"].as_str(), Some("KubeletConfiguration"));
        assert_eq!(yaml["clusterDNS"][0].as_str(), Some("10.96.0.10"));
        assert_eq!(yaml["clusterDomain"].as_str(), Some("cluster.local"));
        assert_eq!(yaml["cgroupDriver"].as_str(), Some("cgroupfs"));
        assert_eq!(yaml["podCIDR"].as_str(), Some("10.244.0.0/24"));
        assert_eq!(yaml["authentication"]["anonymous"]["enabled"].as_bool(), Some(false));
        assert_eq!(yaml["authentication"]["webhook"]["enabled"].as_bool(), Some(true));
        assert_eq!(yaml["authentication"]["x509"]["clientCAFile"].as_str(), Some("/s/pki/ca/ca.crt"));
        assert_eq!(yaml["authorization"]["mode"].as_str(), Some("Webhook"));
        assert_eq!(yaml["tlsCertFile"].as_str(), Some("/s/pki/kubelet-serving/tls.crt"));
        assert_eq!(yaml["resolvConf"].as_str(), Some("/s/config/resolv.conf"));
        assert_eq!(yaml["port"].as_u64(), Some(10250));
        assert_eq!(yaml["healthzPort"].as_u64(), Some(10248));
        assert_eq!(yaml["imageGCHighThresholdPercent"].as_u64(), Some(100));
        assert_eq!(yaml["evictionHard"]["nodefs.available"].as_str(), Some("1%"));
        assert_eq!(yaml["nodeStatusUpdateFrequency"].as_str(), Some("2s"));
    }

    #[test]
    fn paths_that_need_escaping_survive_the_round_trip() {
        // `: #` or a leading quote in a path changed the YAML's meaning in a template.
        let root = "/tmp/it's a: \"state\" #dir";
        let text = kubelet_config(&Layout::new(root), &Files::new(format!("{root}/pki"))).unwrap();
        let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(yaml["resolvConf"].as_str(), Some(format!("{root}/config/resolv.conf").as_str()));
        assert_eq!(
            yaml["authentication"]["x509"]["clientCAFile"].as_str(),
            Some(format!("{root}/pki/ca/ca.crt").as_str())
        );
    }
}
