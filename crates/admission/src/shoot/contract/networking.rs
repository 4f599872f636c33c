//! The contract of the shoot's networking: DNS records and providers, the networks and the
//! Network extension, and the DNS components in the shoot.

use super::{Field, honoured, only_as, refused};

/// The shoot's DNS: its domain and the providers of its records.
pub const DNS: &[Field] = &[
    honoured(
        "spec.dns.domain",
        "the external domain: `api.<domain>` gets a DNSRecord and is in the API server's certificate",
        "deploy_dns_records",
    ),
    honoured(
        "spec.dns.providers[].type",
        "the primary provider's type is the DNSRecords' type",
        "records_of_two_shoots_in_one_zone_do_not_clobber_each_other",
    ),
    honoured(
        "spec.dns.providers[].primary",
        "selects the provider whose type the DNSRecords use",
        "records_of_two_shoots_in_one_zone_do_not_clobber_each_other",
    ),
    refused(
        "spec.dns.providers[].secretName",
        "DNS records use the shoot's provider credentials; a separate DNS secret is not supported yet",
    ),
    refused(
        "spec.dns.providers[].domains",
        "the DNS provider serves every domain; include/exclude filters are not supported yet",
    ),
    refused(
        "spec.dns.providers[].zones",
        "the DNS provider serves every zone; include/exclude filters are not supported yet",
    ),
];

/// The cluster's networks and the Network extension.
pub const NETWORKING: &[Field] = &[
    honoured("spec.networking.type", "the Network extension's type", "network_conforms"),
    honoured("spec.networking.providerConfig", "passed unchanged to the Network extension", "network_conforms"),
    honoured(
        "spec.networking.pods",
        "the pod network of the cluster (kube-controller-manager, Network extension)",
        "derives_ids_domains_and_networks",
    ),
    honoured(
        "spec.networking.services",
        "the service network (kube-apiserver `--service-cluster-ip-range`, cluster DNS address)",
        "derives_ids_domains_and_networks",
    ),
    honoured(
        "spec.networking.nodes",
        "the machines' network; provider-local places the nodes in it",
        "node_network_prefers_config_then_shoot_then_default",
    ),
    only_as(
        "spec.networking.ipFamilies",
        &["[\"IPv4\"]"],
        "the cluster is IPv4 only",
        "the_contract_accepts_what_the_system_does_anyway",
        "only IPv4 clusters are supported",
    ),
];

/// The system components in the shoot: the cluster DNS and node-local DNS.
pub const SYSTEM_COMPONENTS: &[Field] = &[
    only_as(
        "spec.systemComponents.nodeLocalDNS.enabled",
        &["false"],
        "no node-local DNS cache runs",
        "cluster_dns_autoscaling_rewriting_and_node_local_dns_are_refused",
        "node-local DNS needs a DNS cache on every node that the machines do not carry",
    ),
    refused(
        "spec.systemComponents",
        "the cluster DNS runs one replica of this system's own server, authoritative for cluster.local only: HPA autoscaling needs a metrics API the shoot lacks, cluster-proportional scaling an autoscaler the machines do not carry, and rewriting has nothing to forward to",
    ),
];
