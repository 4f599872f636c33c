//! kube-proxy's `KubeProxyConfiguration` (kubeproxy.config.k8s.io/v1alpha1), serialized from a
//! typed struct with serde (YAML).

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::settings::*;
use serde::{Deserialize, Serialize};

/// The fields of `KubeProxyConfiguration` the local cluster sets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeProxyConfiguration {
    pub api_version: String,
    pub kind: String,
    pub client_connection: ClientConnection,
    pub mode: String,
    pub bind_address: String,
    pub hostname_override: String,
    #[serde(rename = "clusterCIDR")]
    pub cluster_cidr: String,
    pub healthz_bind_address: String,
    pub metrics_bind_address: String,
    pub node_port_addresses: Vec<String>,
    pub conntrack: Conntrack,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientConnection {
    pub kubeconfig: String,
}

/// All zero: kube-proxy leaves the host's conntrack sysctls alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conntrack {
    pub max_per_core: u32,
    pub min: u32,
    pub tcp_established_timeout: String,
    pub tcp_close_wait_timeout: String,
}

/// kube-proxy in iptables mode; it leaves the conntrack sysctls alone.
pub fn config(layout: &Layout) -> KubeProxyConfiguration {
    KubeProxyConfiguration {
        api_version: "kubeproxy.config.k8s.io/v1alpha1".into(),
        kind: "KubeProxyConfiguration".into(),
        client_connection: ClientConnection {
            kubeconfig: layout.config_file("kube-proxy.kubeconfig").display().to_string(),
        },
        mode: "iptables".into(),
        bind_address: NODE_IP.to_string(),
        hostname_override: NODE_NAME.into(),
        cluster_cidr: CLUSTER_CIDR.into(),
        healthz_bind_address: format!("127.0.0.1:{KUBE_PROXY_HEALTHZ_PORT}"),
        metrics_bind_address: format!("127.0.0.1:{KUBE_PROXY_METRICS_PORT}"),
        node_port_addresses: vec![NODE_CIDR.into()],
        conntrack: Conntrack {
            max_per_core: 0,
            min: 0,
            tcp_established_timeout: "0s".into(),
            tcp_close_wait_timeout: "0s".into(),
        },
    }
}

/// [`config`] as YAML.
pub fn kube_proxy_config(layout: &Layout) -> Result<String> {
    serde_yaml::to_string(&config(layout))
        .map_err(|source| Error::Yaml { what: "encoding kube-proxy's configuration".into(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kube_proxy_config_parses_back_with_its_mode_and_cluster_cidr() {
        let layout = Layout::new("/s");
        let text = kube_proxy_config(&layout).unwrap();
        let back: KubeProxyConfiguration = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back, config(&layout));
        let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(yaml["kind"].as_str(), Some("KubeProxyConfiguration"));
        assert_eq!(yaml["mode"].as_str(), Some("iptables"));
        assert_eq!(yaml["clusterCIDR"].as_str(), Some("10.244.0.0/16"));
        assert_eq!(yaml["clientConnection"]["kubeconfig"].as_str(), Some("/s/config/kube-proxy.kubeconfig"));
        assert_eq!(yaml["healthzBindAddress"].as_str(), Some("127.0.0.1:10256"));
        assert_eq!(yaml["nodePortAddresses"][0].as_str(), Some("10.250.0.0/24"));
        assert_eq!(yaml["conntrack"]["maxPerCore"].as_u64(), Some(0));
        assert_eq!(yaml["conntrack"]["tcpEstablishedTimeout"].as_str(), Some("0s"));
    }

    #[test]
    fn a_kubeconfig_path_with_a_space_and_a_quote_survives_the_round_trip() {
        let root = "/tmp/my 'state' dir: x";
        let yaml: serde_yaml::Value = serde_yaml::from_str(&kube_proxy_config(&Layout::new(root)).unwrap()).unwrap();
        assert_eq!(
            yaml["clientConnection"]["kubeconfig"].as_str(),
            Some(format!("{root}/config/kube-proxy.kubeconfig").as_str())
        );
    }
}
