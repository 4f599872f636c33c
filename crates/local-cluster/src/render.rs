//! Pure rendering of every configuration file and command line of the local cluster, from the
//! [`Layout`] and the binaries' directory. Nothing here touches the host.
//!
//! The command lines, the CNI configuration and `resolv.conf` are here; the configuration files
//! with a schema of their own are typed structs serialized with serde, one module each:
//! [`containerd`] (TOML: the daemon's configuration and the registry hosts),
//! [`kubelet`] (`KubeletConfiguration`), [`kube_proxy`] (`KubeProxyConfiguration`) and
//! [`encryption`] (kube-apiserver's `EncryptionConfiguration`).

pub mod containerd;
pub mod encryption;
pub mod kube_proxy;
pub mod kubelet;

pub use containerd::{containerd_config, registry_hosts};
pub use encryption::encryption_config;
pub use kube_proxy::kube_proxy_config;
pub use kubelet::kubelet_config;

use crate::layout::Layout;
use crate::pki::{self, Files};
use crate::settings::*;
use std::path::Path;

fn p(path: impl AsRef<Path>) -> String {
    path.as_ref().display().to_string()
}

/// etcd: TLS for clients and peers, on loopback only.
pub fn etcd_args(layout: &Layout, pki: &Files) -> Vec<String> {
    let client = format!("https://127.0.0.1:{ETCD_CLIENT_PORT}");
    let peer = format!("https://127.0.0.1:{ETCD_PEER_PORT}");
    let cert = p(pki.path(pki::ETCD_SERVER, "tls.crt"));
    let key = p(pki.path(pki::ETCD_SERVER, "tls.key"));
    let ca = p(pki.path(pki::ETCD_CA, "ca.crt"));
    vec![
        "--name=local".into(),
        format!("--data-dir={}", p(layout.etcd_data())),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=local={peer}"),
        format!("--cert-file={cert}"),
        format!("--key-file={key}"),
        format!("--trusted-ca-file={ca}"),
        "--client-cert-auth=true".into(),
        format!("--peer-cert-file={cert}"),
        format!("--peer-key-file={key}"),
        format!("--peer-trusted-ca-file={ca}"),
        "--peer-client-cert-auth=true".into(),
        "--snapshot-count=10000".into(),
    ]
}

/// kube-apiserver on the node address: `Node,RBAC,Webhook` (the webhook is the garden's seed
/// authorizer, [`seed_authorizer_kubeconfig`]; last, so it only sees what Node and RBAC did not
/// allow), `NodeRestriction`, bootstrap tokens, a client certificate for the kubelet (logs,
/// exec), and encryption at rest ([`encryption`], the file at [`Layout::encryption_config`]).
pub fn apiserver_args(layout: &Layout, pki: &Files) -> Vec<String> {
    let ca = p(pki.path(pki::CA, "ca.crt"));
    vec![
        format!("--advertise-address={NODE_IP}"),
        format!("--bind-address={NODE_IP}"),
        format!("--secure-port={APISERVER_PORT}"),
        "--insecure-port=0".into(),
        format!("--etcd-servers=https://127.0.0.1:{ETCD_CLIENT_PORT}"),
        format!("--etcd-cafile={}", p(pki.path(pki::ETCD_CA, "ca.crt"))),
        format!("--etcd-certfile={}", p(pki.path(pki::APISERVER_ETCD_CLIENT, "tls.crt"))),
        format!("--etcd-keyfile={}", p(pki.path(pki::APISERVER_ETCD_CLIENT, "tls.key"))),
        format!("--tls-cert-file={}", p(pki.path(pki::APISERVER, "tls.crt"))),
        format!("--tls-private-key-file={}", p(pki.path(pki::APISERVER, "tls.key"))),
        format!("--client-ca-file={ca}"),
        "--authorization-mode=Node,RBAC,Webhook".into(),
        format!("--authorization-webhook-config-file={}", p(layout.config_file(SEED_AUTHORIZER_KUBECONFIG))),
        "--authorization-webhook-version=v1".into(),
        // No cached decisions: a seed loses access to a shoot the moment it moves away.
        "--authorization-webhook-cache-authorized-ttl=0s".into(),
        "--authorization-webhook-cache-unauthorized-ttl=0s".into(),
        "--enable-admission-plugins=NodeRestriction".into(),
        "--enable-bootstrap-token-auth=true".into(),
        format!("--kubelet-client-certificate={}", p(pki.path(pki::APISERVER_KUBELET_CLIENT, "tls.crt"))),
        format!("--kubelet-client-key={}", p(pki.path(pki::APISERVER_KUBELET_CLIENT, "tls.key"))),
        format!("--kubelet-certificate-authority={ca}"),
        "--kubelet-preferred-address-types=InternalIP".into(),
        format!("--service-cluster-ip-range={SERVICE_CIDR}"),
        format!("--service-account-issuer=https://kubernetes.default.svc.{CLUSTER_DOMAIN}"),
        format!("--service-account-key-file={}", p(pki.path(pki::SERVICE_ACCOUNT, "sa.pub"))),
        format!("--service-account-signing-key-file={}", p(pki.path(pki::SERVICE_ACCOUNT, "sa.key"))),
        "--allow-privileged=true".into(),
        "--profiling=false".into(),
        format!("--encryption-provider-config={}", p(layout.encryption_config())),
    ]
}

/// The file name of the authorization webhook's kubeconfig in the configuration directory.
pub const SEED_AUTHORIZER_KUBECONFIG: &str = "seed-authorizer.kubeconfig";

/// The kubeconfig through which kube-apiserver calls the seed authorizer: the admission
/// server's NodePort on the node address, trusted through the webhook CA (`pki::WEBHOOK_CA`),
/// which signs that server's certificates. The caller presents no client certificate: the
/// server answers decisions only.
pub fn seed_authorizer_kubeconfig(pki: &Files) -> String {
    let ca = p(pki.path(pki::WEBHOOK_CA, "ca.crt"));
    let server = seed_authorizer_url();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: seed-authorizer\n  cluster:\n    certificate-authority: {ca}\n    server: {server}\nusers:\n- name: kube-apiserver\n  user: {{}}\ncontexts:\n- name: seed-authorizer\n  context:\n    cluster: seed-authorizer\n    user: kube-apiserver\ncurrent-context: seed-authorizer\n"
    )
}

fn kubeconfig_flags(layout: &Layout, component: &str) -> Vec<String> {
    let kubeconfig = p(layout.config_file(&format!("{component}.kubeconfig")));
    vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
    ]
}

/// kube-controller-manager: signs CSRs with the cluster CA, one credential per controller.
pub fn controller_manager_args(layout: &Layout, pki: &Files) -> Vec<String> {
    let mut args = kubeconfig_flags(layout, pki::KCM);
    args.extend([
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={KCM_PORT}"),
        "--port=0".into(),
        "--leader-elect=false".into(),
        "--use-service-account-credentials=true".into(),
        "--controllers=*,bootstrapsigner,tokencleaner".into(),
        format!("--cluster-signing-cert-file={}", p(pki.path(pki::CA, "ca.crt"))),
        format!("--cluster-signing-key-file={}", p(pki.path(pki::CA, "ca.key"))),
        format!("--root-ca-file={}", p(pki.path(pki::CA, "ca.crt"))),
        format!("--service-account-private-key-file={}", p(pki.path(pki::SERVICE_ACCOUNT, "sa.key"))),
        format!("--service-cluster-ip-range={SERVICE_CIDR}"),
        "--profiling=false".into(),
    ]);
    args
}

pub fn scheduler_args(layout: &Layout) -> Vec<String> {
    let mut args = kubeconfig_flags(layout, pki::SCHEDULER);
    args.extend([
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={SCHEDULER_PORT}"),
        "--port=0".into(),
        "--leader-elect=false".into(),
        "--profiling=false".into(),
    ]);
    args
}

/// One bridge for every pod, host-local IPAM, no masquerade (pods talk to the node address and
/// to each other only), hairpin so a pod reaches itself through its Service.
pub fn cni_config(layout: &Layout) -> String {
    serde_json::json!({
        "cniVersion": "0.4.0",
        "name": "local-cluster",
        "plugins": [
            {
                "type": "bridge",
                "bridge": CNI_BRIDGE,
                "isGateway": true,
                "ipMasq": false,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "dataDir": p(layout.cni_data()),
                    "ranges": [[{ "subnet": POD_CIDR }]],
                    "routes": [{ "dst": "0.0.0.0/0" }]
                }
            },
            { "type": "portmap", "capabilities": { "portMappings": true } }
        ]
    })
    .to_string()
}

pub fn kubelet_args(layout: &Layout) -> Vec<String> {
    let sock = p(layout.containerd_socket());
    vec![
        format!("--config={}", p(layout.config_file("kubelet.yaml"))),
        format!("--kubeconfig={}", p(layout.config_file("kubelet.kubeconfig"))),
        format!("--root-dir={}", p(layout.kubelet())),
        format!("--cert-dir={}", p(layout.kubelet().join("pki"))),
        "--container-runtime=remote".into(),
        format!("--container-runtime-endpoint=unix://{sock}"),
        format!("--node-ip={NODE_IP}"),
        format!("--hostname-override={NODE_NAME}"),
        format!("--pod-infra-container-image={SANDBOX_IMAGE}"),
        "--v=1".into(),
    ]
}

pub fn kube_proxy_args(layout: &Layout) -> Vec<String> {
    vec![format!("--config={}", p(layout.config_file("kube-proxy.yaml")))]
}

/// The host's resolver for pods with `dnsPolicy: Default`: nothing outside answers.
pub fn resolv_conf() -> String {
    format!("nameserver {DNS_SERVICE_IP}\noptions ndots:1\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_parse_and_name_our_paths() {
        let layout = Layout::new("/s");
        let pki = Files::new("/s/pki");
        let kubelet: serde_yaml::Value =
            serde_yaml::from_str(&kubelet_config(&layout, &pki).unwrap()).expect("kubelet yaml");
        assert_eq!(kubelet["address"].as_str(), Some("10.250.0.1"));
        assert_eq!(kubelet["readOnlyPort"].as_u64(), Some(0));
        assert_eq!(kubelet["authentication"]["anonymous"]["enabled"].as_bool(), Some(false));
        let proxy: serde_yaml::Value = serde_yaml::from_str(&kube_proxy_config(&layout).unwrap()).expect("proxy yaml");
        assert_eq!(proxy["conntrack"]["maxPerCore"].as_u64(), Some(0));
        let cni: serde_json::Value = serde_json::from_str(&cni_config(&layout)).expect("cni json");
        assert_eq!(cni["plugins"][0]["ipMasq"], serde_json::json!(false));
        assert_eq!(cni["plugins"][0]["ipam"]["dataDir"], "/s/cni/ipam");
        let containerd = containerd_config(&layout).unwrap();
        assert!(containerd.contains("restrict_oom_score_adj = true"));
        assert!(containerd.contains(r#"address = "/s/containerd/containerd.sock""#));
    }

    #[test]
    fn the_seed_authorizer_is_called_on_the_node_port_trusting_the_webhook_ca() {
        let text = seed_authorizer_kubeconfig(&Files::new("/p"));
        let config: serde_yaml::Value = serde_yaml::from_str(&text).expect("kubeconfig yaml");
        let cluster = &config["clusters"][0]["cluster"];
        assert_eq!(cluster["server"].as_str(), Some("https://10.250.0.1:30443/webhooks/auth/seed"));
        assert_eq!(cluster["certificate-authority"].as_str(), Some("/p/webhook-ca/ca.crt"));
        assert_eq!(config["current-context"].as_str(), Some("seed-authorizer"));
        assert_eq!(config["contexts"][0]["context"]["user"].as_str(), Some("kube-apiserver"));
    }

    #[test]
    fn the_apiserver_authorizes_nodes_and_uses_tls_to_etcd() {
        let args = apiserver_args(&Layout::new("/s"), &Files::new("/p"));
        assert!(args.contains(&"--authorization-mode=Node,RBAC,Webhook".to_string()));
        assert!(args.contains(&"--authorization-webhook-config-file=/s/config/seed-authorizer.kubeconfig".to_string()));
        assert!(args.contains(&"--encryption-provider-config=/s/config/encryption-config.yaml".to_string()));
        assert!(args.iter().any(|a| a.starts_with("--etcd-servers=https://")));
        assert!(args.contains(&"--kubelet-certificate-authority=/p/ca/ca.crt".to_string()));
    }
}
