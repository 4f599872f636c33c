//! The fixed shape of the local cluster: addresses, ports, names and versions. Everything the
//! renderers and the bring-up agree on lives here, so a change is made once.

use std::net::Ipv4Addr;

/// The node's name (also its hostname override).
pub const NODE_NAME: &str = "local-node";
/// The bridge the project creates for the node and the API server.
pub const BRIDGE: &str = "kbr0";
/// The node's (and the API server's) address, on [`BRIDGE`]. Loopback does not work: Endpoints
/// reject 127.0.0.0/8 and pods cannot reach the host's loopback.
pub const NODE_IP: Ipv4Addr = Ipv4Addr::new(10, 250, 0, 1);
/// Prefix length of [`NODE_IP`] on [`BRIDGE`].
pub const NODE_PREFIX: u8 = 24;
/// The node network (for kube-proxy's `nodePortAddresses`).
pub const NODE_CIDR: &str = "10.250.0.0/24";
/// The CNI bridge the `bridge` plugin creates for pods.
pub const CNI_BRIDGE: &str = "lcni0";
/// Pod addresses of the whole cluster, and the node's share of them.
pub const CLUSTER_CIDR: &str = "10.244.0.0/16";
pub const POD_CIDR: &str = "10.244.0.0/24";
/// Service addresses; the first is the `kubernetes` Service, [`DNS_SERVICE_IP`] the DNS.
pub const SERVICE_CIDR: &str = "10.96.0.0/16";
pub const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);
pub const DNS_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 10);
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// etcd serves clients on loopback only (the API server is its one client).
pub const ETCD_CLIENT_PORT: u16 = 12379;
pub const ETCD_PEER_PORT: u16 = 12380;
pub const APISERVER_PORT: u16 = 6443;
pub const KUBELET_PORT: u16 = 10250;
pub const KUBELET_HEALTHZ_PORT: u16 = 10248;
pub const KUBE_PROXY_HEALTHZ_PORT: u16 = 10256;
pub const KUBE_PROXY_METRICS_PORT: u16 = 10249;
pub const KCM_PORT: u16 = 10257;
pub const SCHEDULER_PORT: u16 = 10259;
/// The image registry (TLS) on the node address; machines pull from it (`registry`).
pub const REGISTRY_PORT: u16 = 5000;
/// The NodePort of the garden admission server's Service (`hack/local-values/controlplane.yaml`
/// sets it), through which the kube-apiserver, a host process outside cluster DNS, calls the
/// seed authorizer on the node address. A NodePort on the node address, not a ClusterIP: before
/// the Service exists, a connection to the node address is refused on the host, while one to an
/// unallocated ClusterIP would follow the host's default route.
pub const SEED_AUTHORIZER_NODE_PORT: u16 = 30443;
/// The registry's writer (TLS, htpasswd) on loopback only: the one way to push images
/// (`registry-writer`); the registry on [`REGISTRY_PORT`] is read-only.
pub const REGISTRY_WRITER_PORT: u16 = 5001;
/// Cluster DNS on the node address; the `kube-dns` Service forwards to it.
pub const DNS_PORT: u16 = 53;

/// The default StorageClass and the provisioner name it names.
pub const STORAGE_CLASS: &str = "local-path";
pub const PROVISIONER: &str = "local-cluster.gardener.cloud/host-path";

/// The sandbox image containerd 1.6 uses (built by `hack/images.sh`).
pub const SANDBOX_IMAGE: &str = "registry.k8s.io/pause:3.6";

/// Host sysctls the cluster's parts change (we, the kubelet, kube-proxy, the CNI bridge
/// plugin). Their values are recorded before the first start and restored at teardown.
pub const SYSCTLS: &[&str] = &[
    "net.ipv4.ip_forward",
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
    "net.ipv4.conf.all.route_localnet",
    "kernel.panic",
    "kernel.panic_on_oops",
    "vm.overcommit_memory",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
];

/// Directories the kubelet, libcni and containerd write outside the state directory. Those
/// that did not exist before the first start are removed at teardown.
pub const OUTSIDE_DIRS: &[&str] =
    &["/var/lib/kubelet", "/var/log/pods", "/var/log/containers", "/var/lib/cni", "/run/containerd", "/etc/kubernetes"];

/// The API server's address as clients use it.
pub fn apiserver_url() -> String {
    format!("https://{NODE_IP}:{APISERVER_PORT}")
}

/// The seed authorizer's URL (the garden admission server, docs/security.md).
pub fn seed_authorizer_url() -> String {
    format!("https://{NODE_IP}:{SEED_AUTHORIZER_NODE_PORT}/webhooks/auth/seed")
}
