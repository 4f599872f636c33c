//! The secret configs of one shoot control plane, kubeadm-grade: names, CNs, organizations,
//! SANs and usages as kubeadm issues them, with the CA split Gardener uses (a separate client
//! CA from the start, so every CA rotation has the same shape).
//!
//! | secret | signed by | CN | O | usage |
//! |---|---|---|---|---|
//! | `ca` | self | `kubernetes` | | CA (signs serving certificates of the kube-apiserver) |
//! | `ca-client` | self | `kubernetes-client` | | CA (signs kube-apiserver client certificates) |
//! | `ca-etcd` | self | `etcd` | | CA |
//! | `ca-front-proxy` | self | `front-proxy` | | CA |
//! | `ca-kubelet` | self | `kubelet` | | CA |
//! | `etcd-server` | `ca-etcd` | `etcd-server` | | server + client (peers) |
//! | `etcd-client` | `ca-etcd` | `kube-apiserver-etcd-client` | | client |
//! | `front-proxy-client` | `ca-front-proxy` | `front-proxy-client` | | client |
//! | `kube-apiserver-kubelet` | `ca-kubelet` | `kube-apiserver-kubelet-client` | `system:masters` | client |
//! | `kube-apiserver` | `ca` | `kube-apiserver` | | server |
//! | `kubeconfig-admin` | `ca-client` | `system:admin` | `system:masters` | client + kubeconfig |
//! | `kubeconfig-kube-controller-manager` | `ca-client` | `system:kube-controller-manager` | | client + kubeconfig |
//! | `kubeconfig-kube-scheduler` | `ca-client` | `system:kube-scheduler` | | client + kubeconfig |
//! | `konnectivity-agent` | `ca-client` | `konnectivity-agent` | | client (the tunnel's agents; no RBAC grants it anything in the API) |
//! | `service-account-key` | | | | token signing key pair |
//! | `etcd-encryption-key` | | | | 32 random bytes: kube-apiserver's key for Secrets in etcd |
//! | `ssh-keypair` | | | | Ed25519 key pair for SSH to the nodes (only when they run sshd) |

use crate::config::{
    CaConfig, CertificateConfig, KeyAlgorithm, KubeconfigSpec, RandomConfig, SecretConfig, ServiceAccountKeyConfig,
    SshKeypairConfig, Usage,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Secret names of the shoot set.
pub mod names {
    pub const CA: &str = "ca";
    pub const CA_CLIENT: &str = "ca-client";
    pub const CA_ETCD: &str = "ca-etcd";
    pub const CA_FRONT_PROXY: &str = "ca-front-proxy";
    pub const CA_KUBELET: &str = "ca-kubelet";
    pub const ETCD_SERVER: &str = "etcd-server";
    pub const ETCD_CLIENT: &str = "etcd-client";
    pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";
    pub const KUBE_APISERVER_KUBELET: &str = "kube-apiserver-kubelet";
    pub const KUBE_APISERVER: &str = "kube-apiserver";
    pub const KUBECONFIG_ADMIN: &str = "kubeconfig-admin";
    pub const KUBECONFIG_KUBE_CONTROLLER_MANAGER: &str = "kubeconfig-kube-controller-manager";
    pub const KUBECONFIG_KUBE_SCHEDULER: &str = "kubeconfig-kube-scheduler";
    /// The client certificate the tunnel's agents present to its server.
    pub const KONNECTIVITY_AGENT: &str = "konnectivity-agent";
    pub const SERVICE_ACCOUNT_KEY: &str = "service-account-key";
    /// The key kube-apiserver encrypts Secrets in etcd with (32 random bytes, base64).
    pub const ETCD_ENCRYPTION_KEY: &str = "etcd-encryption-key";
    /// The nodes' SSH key pair (`<shoot>.ssh-keypair` in the garden).
    pub const SSH_KEYPAIR: &str = "ssh-keypair";
}

/// Well-known subjects.
pub mod subjects {
    /// The group that RBAC lets do everything.
    pub const SYSTEM_MASTERS: &str = "system:masters";
    pub const ADMIN: &str = "system:admin";
    pub const KUBE_CONTROLLER_MANAGER: &str = "system:kube-controller-manager";
    pub const KUBE_SCHEDULER: &str = "system:kube-scheduler";
    /// Must match kube-apiserver's `--requestheader-allowed-names`.
    pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";
    pub const KUBE_APISERVER_KUBELET_CLIENT: &str = "kube-apiserver-kubelet-client";
    pub const KUBE_APISERVER_ETCD_CLIENT: &str = "kube-apiserver-etcd-client";
    pub const KONNECTIVITY_AGENT: &str = "konnectivity-agent";
}

/// Name of the etcd that the SANs of `etcd-server` are made for (`etcd-main-client`,
/// `etcd-main-peer` services).
pub const ETCD_NAME: &str = "etcd-main";

/// The most members an etcd of a shoot has (three for a highly available control plane).
pub const ETCD_MAX_MEMBERS: usize = 3;

/// The seed's cluster domain, in which its DNS names the etcd members' addresses.
pub const SEED_CLUSTER_DOMAIN: &str = "cluster.local";

/// What the shoot set depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShootInputs {
    /// The shoot's control-plane namespace in the seed (`shoot--<project>--<name>`); also the
    /// cluster name inside kubeconfigs.
    pub namespace: String,
    /// The shoot's cluster domain (`cluster.local`).
    pub cluster_domain: String,
    /// The first address of the shoot's service range: the `kubernetes` Service's IP.
    pub service_ip: IpAddr,
    /// The API server's internal domain (`api.<shoot>.<project>.internal.<domain>`).
    pub internal_domain: String,
    /// The API server's external domain, when the shoot has one.
    pub external_domain: Option<String>,
    /// Further names or addresses the API server is reached by.
    pub extra_sans: Vec<String>,
    /// Server in the admin kubeconfig; default `https://<external or internal domain>`.
    pub admin_server: Option<String>,
    /// Server in the control-plane components' kubeconfigs; default `https://kube-apiserver`
    /// (the Service in the control-plane namespace).
    pub component_server: Option<String>,
    /// Key type of the CAs.
    pub ca_key: KeyAlgorithm,
    /// Key type of certificates and the service-account key.
    pub leaf_key: KeyAlgorithm,
    /// The nodes' SSH key pair, when they are reached over SSH: the start time of its last
    /// rotation (empty: never rotated; see [`SshKeypairConfig`]).
    pub ssh_keypair: Option<String>,
}

impl ShootInputs {
    /// Inputs with the defaults: cluster domain `cluster.local`, ECDSA keys, no external domain.
    pub fn new(namespace: impl Into<String>, internal_domain: impl Into<String>, service_ip: IpAddr) -> Self {
        Self {
            namespace: namespace.into(),
            cluster_domain: "cluster.local".into(),
            service_ip,
            internal_domain: internal_domain.into(),
            external_domain: None,
            extra_sans: Vec::new(),
            admin_server: None,
            component_server: None,
            ca_key: KeyAlgorithm::EcdsaP256,
            leaf_key: KeyAlgorithm::EcdsaP256,
            ssh_keypair: None,
        }
    }

    pub fn admin_server(&self) -> String {
        self.admin_server
            .clone()
            .unwrap_or_else(|| format!("https://{}", self.external_domain.as_deref().unwrap_or(&self.internal_domain)))
    }

    pub fn component_server(&self) -> String {
        self.component_server.clone().unwrap_or_else(|| format!("https://{}", names::KUBE_APISERVER))
    }

    /// The SANs of the kube-apiserver serving certificate.
    pub fn kube_apiserver_sans(&self) -> Vec<String> {
        let ns = &self.namespace;
        let mut sans = vec![
            self.service_ip.to_string(),
            "kubernetes".to_string(),
            "kubernetes.default".to_string(),
            "kubernetes.default.svc".to_string(),
            format!("kubernetes.default.svc.{}", self.cluster_domain),
            names::KUBE_APISERVER.to_string(),
            format!("{}.{ns}", names::KUBE_APISERVER),
            format!("{}.{ns}.svc", names::KUBE_APISERVER),
            self.internal_domain.clone(),
        ];
        sans.extend(self.external_domain.iter().cloned());
        sans.extend(self.extra_sans.iter().cloned());
        sans
    }

    /// The SANs of the etcd member certificate: client Service, peer Service (per-member
    /// names), and loopback for the member's own sidecars.
    ///
    /// A member that accepts a peer connection checks the *dialing* member's certificate
    /// against the dialer's address (etcd's `checkSAN`): an IP SAN equal to it, else a PTR
    /// name of the address that equals a plain SAN or ends in a wildcard SAN without its `*`,
    /// else a plain SAN whose forward lookup gives the address. The seed's DNS answers a
    /// member's address with `<pod>.etcd-main-peer.<ns>.svc.<seed domain>`, which the
    /// `*.etcd-main-peer.<ns>.svc` wildcard does not end; so the certificate names the members
    /// plainly (found by forward lookup) and carries the wildcard with the seed's domain
    /// (found by PTR), as Gardener's peer certificate does.
    pub fn etcd_sans(&self) -> Vec<String> {
        let ns = &self.namespace;
        let client = format!("{ETCD_NAME}-client");
        let peer = format!("{ETCD_NAME}-peer");
        let mut sans = vec![
            client.clone(),
            format!("{client}.{ns}"),
            format!("{client}.{ns}.svc"),
            format!("*.{peer}"),
            format!("*.{peer}.{ns}"),
            format!("*.{peer}.{ns}.svc"),
            format!("*.{peer}.{ns}.svc.{SEED_CLUSTER_DOMAIN}"),
        ];
        sans.extend((0..ETCD_MAX_MEMBERS).map(|i| format!("{ETCD_NAME}-{i}.{peer}.{ns}.svc")));
        sans.extend([
            "localhost".to_string(),
            IpAddr::V4(Ipv4Addr::LOCALHOST).to_string(),
            IpAddr::V6(Ipv6Addr::LOCALHOST).to_string(),
        ]);
        sans
    }
}

/// The configs of a shoot's control-plane secrets.
pub fn shoot_set(inputs: &ShootInputs) -> Vec<SecretConfig> {
    use names::*;
    let ca = |name: &str, cn: &str| SecretConfig::from(CaConfig::new(name, cn).with_key(inputs.ca_key));
    let cert = |name: &str, ca: &str, cn: &str, usage: Usage| {
        CertificateConfig::new(name, ca, cn, usage).with_key(inputs.leaf_key)
    };
    let kubeconfig =
        |server: String| KubeconfigSpec { cluster_name: inputs.namespace.clone(), server, trust: CA.to_string() };
    let mut set = vec![
        ca(CA, "kubernetes"),
        ca(CA_CLIENT, "kubernetes-client"),
        ca(CA_ETCD, "etcd"),
        ca(CA_FRONT_PROXY, "front-proxy"),
        ca(CA_KUBELET, "kubelet"),
        cert(ETCD_SERVER, CA_ETCD, "etcd-server", Usage::ServerAndClient).with_sans(inputs.etcd_sans()).into(),
        cert(ETCD_CLIENT, CA_ETCD, subjects::KUBE_APISERVER_ETCD_CLIENT, Usage::Client).into(),
        cert(FRONT_PROXY_CLIENT, CA_FRONT_PROXY, subjects::FRONT_PROXY_CLIENT, Usage::Client).into(),
        cert(KUBE_APISERVER_KUBELET, CA_KUBELET, subjects::KUBE_APISERVER_KUBELET_CLIENT, Usage::Client)
            .with_organization(subjects::SYSTEM_MASTERS)
            .into(),
        cert(KUBE_APISERVER, CA, "kube-apiserver", Usage::Server).with_sans(inputs.kube_apiserver_sans()).into(),
        cert(KUBECONFIG_ADMIN, CA_CLIENT, subjects::ADMIN, Usage::Client)
            .with_organization(subjects::SYSTEM_MASTERS)
            .with_kubeconfig(kubeconfig(inputs.admin_server()))
            .into(),
        cert(KUBECONFIG_KUBE_CONTROLLER_MANAGER, CA_CLIENT, subjects::KUBE_CONTROLLER_MANAGER, Usage::Client)
            .with_kubeconfig(kubeconfig(inputs.component_server()))
            .into(),
        cert(KUBECONFIG_KUBE_SCHEDULER, CA_CLIENT, subjects::KUBE_SCHEDULER, Usage::Client)
            .with_kubeconfig(kubeconfig(inputs.component_server()))
            .into(),
        cert(KONNECTIVITY_AGENT, CA_CLIENT, subjects::KONNECTIVITY_AGENT, Usage::Client).into(),
        ServiceAccountKeyConfig { name: SERVICE_ACCOUNT_KEY.into(), key: inputs.leaf_key }.into(),
        // Kept in the ShootState like the CAs and never regenerated silently: losing it loses
        // every Secret of the shoot.
        RandomConfig { name: ETCD_ENCRYPTION_KEY.into(), bytes: 32 }.into(),
    ];
    if let Some(rotation) = &inputs.ssh_keypair {
        set.push(SshKeypairConfig { name: SSH_KEYPAIR.into(), rotation: rotation.clone() }.into());
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::validate;

    fn inputs() -> ShootInputs {
        let mut i = ShootInputs::new("shoot--p--s", "api.s.p.internal.example.com", "100.64.0.1".parse().unwrap());
        i.external_domain = Some("api.s.p.example.com".into());
        i.extra_sans = vec!["127.0.0.1".into()];
        i
    }

    #[test]
    fn set_is_valid_and_complete() {
        let configs = shoot_set(&inputs());
        validate(&configs).unwrap();
        let names: Vec<&str> = configs.iter().map(SecretConfig::name).collect();
        assert_eq!(names.len(), 16);
        for n in [
            "ca",
            "ca-client",
            "ca-etcd",
            "ca-front-proxy",
            "ca-kubelet",
            "kube-apiserver",
            "service-account-key",
            "etcd-encryption-key",
        ] {
            assert!(names.contains(&n), "{n}");
        }
    }

    #[test]
    fn kube_apiserver_sans_cover_service_and_domains() {
        let sans = inputs().kube_apiserver_sans();
        for want in [
            "100.64.0.1",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "api.s.p.internal.example.com",
            "api.s.p.example.com",
            "127.0.0.1",
            "kube-apiserver.shoot--p--s.svc",
        ] {
            assert!(sans.iter().any(|s| s == want), "{want} missing from {sans:?}");
        }
    }

    /// etcd's peer check (`isHostInDNS` in etcd 3.4's `pkg/transport/listener_tls.go`) on
    /// the names the seed's DNS gives a member's pod address: its PTR name, or a plain SAN
    /// whose forward lookup is that address.
    fn etcd_accepts(sans: &[String], ptr: &str, forward: &[&str]) -> bool {
        let wildcard = sans.iter().filter_map(|s| s.strip_prefix('*')).any(|suffix| ptr.ends_with(suffix));
        let plain = sans.iter().filter(|s| !s.starts_with('*'));
        wildcard || plain.clone().any(|s| s == ptr) || plain.into_iter().any(|s| forward.contains(&s.as_str()))
    }

    #[test]
    fn etcd_members_accept_each_other_by_the_names_the_seed_dns_gives_them() {
        let sans = inputs().etcd_sans();
        // The seed's DNS answers a member's pod address with its FQDN; `*.etcd-main-peer.<ns>.svc`
        // alone does not end it (the three-member defect this guards against).
        let ptr = "etcd-main-2.etcd-main-peer.shoot--p--s.svc.cluster.local";
        assert!(etcd_accepts(&sans, ptr, &[]), "PTR {ptr} not covered by {sans:?}");
        assert!(!etcd_accepts(&["*.etcd-main-peer.shoot--p--s.svc".to_string()], ptr, &[]));
        // With no PTR answer, the member's plain name resolves to its address.
        for i in 0..ETCD_MAX_MEMBERS {
            let name = format!("etcd-main-{i}.etcd-main-peer.shoot--p--s.svc");
            assert!(etcd_accepts(&sans, "", &[&name]), "{name} missing from {sans:?}");
        }
        // Another shoot's members are not covered.
        assert!(!etcd_accepts(&sans, "etcd-main-0.etcd-main-peer.shoot--p--other.svc.cluster.local", &[]));
    }

    #[test]
    fn servers_default_to_domains_and_service() {
        let i = inputs();
        assert_eq!(i.admin_server(), "https://api.s.p.example.com");
        assert_eq!(i.component_server(), "https://kube-apiserver");
        let mut internal_only = i.clone();
        internal_only.external_domain = None;
        assert_eq!(internal_only.admin_server(), "https://api.s.p.internal.example.com");
    }

    #[test]
    fn subjects_follow_kubeadm() {
        let configs = shoot_set(&inputs());
        let cert = |name: &str| {
            configs
                .iter()
                .find_map(|c| match c {
                    SecretConfig::Certificate(c) if c.name == name => Some(c.clone()),
                    _ => None,
                })
                .unwrap()
        };
        let admin = cert(names::KUBECONFIG_ADMIN);
        assert_eq!(admin.organization.as_deref(), Some("system:masters"));
        assert_eq!(admin.ca, names::CA_CLIENT);
        assert_eq!(cert(names::KUBECONFIG_KUBE_CONTROLLER_MANAGER).common_name, "system:kube-controller-manager");
        assert_eq!(cert(names::KUBECONFIG_KUBE_SCHEDULER).common_name, "system:kube-scheduler");
        let kubelet = cert(names::KUBE_APISERVER_KUBELET);
        assert_eq!((kubelet.ca.as_str(), kubelet.organization.as_deref()), ("ca-kubelet", Some("system:masters")));
        assert_eq!(cert(names::ETCD_SERVER).usage, Usage::ServerAndClient);
        assert_eq!(cert(names::FRONT_PROXY_CLIENT).common_name, "front-proxy-client");
        let agent = cert(names::KONNECTIVITY_AGENT);
        assert_eq!((agent.ca.as_str(), agent.usage, agent.organization), ("ca-client", Usage::Client, None));
    }
}
