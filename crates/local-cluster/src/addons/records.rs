//! The DNS records of the cluster, computed from Services and Endpoints (pure), as Kubernetes'
//! DNS specification describes them:
//! * a ClusterIP Service `s` in `ns`: `s.ns.svc.<domain>` A its cluster IP, and an SRV record
//!   `_port._proto.s.ns.svc.<domain>` per named port;
//! * a headless Service: one A record per ready endpoint address, and
//!   `<hostname>.s.ns.svc.<domain>` per ready endpoint, the hostname being the endpoint's
//!   `hostname` (StatefulSet pods) or else its address with dashes (`10-244-0-8`, CoreDNS'
//!   choice of the spec's "unique, system-assigned identifier"); and per ready endpoint and
//!   named port an SRV record `_port._proto.s.ns.svc.<domain>` naming that endpoint;
//! * an ExternalName Service: a CNAME. The name is answered, never resolved further;
//! * reverse records: `d.c.b.a.in-addr.arpa` PTR `s.ns.svc.<domain>` for every IPv4 cluster IP,
//!   and PTR `<hostname>.s.ns.svc.<domain>` for every ready endpoint of a headless Service;
//! * pod records (CoreDNS' `pods insecure`): `a-b-c-d.<ns>.pod.<domain>` A `a.b.c.d`, the
//!   address read from the name alone ([`pod_address`]); these are answered per query, not
//!   stored.

use k8s_openapi::api::core::v1::{EndpointAddress, Endpoints, Service, ServiceSpec};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The data of one record. Services give A, CNAME, SRV and PTR; the extra zones
/// ([`super::zones`]) also AAAA and TXT.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Data {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Cname(String),
    Srv { port: u16, target: String },
    Txt(String),
    Ptr(String),
}

/// Fully qualified name (without the trailing dot) → its records, sorted.
pub type Records = BTreeMap<String, Vec<Data>>;

/// What Services and Endpoints give: names in the cluster domain and reverse names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterRecords {
    /// Names in the cluster domain.
    pub names: Records,
    /// `d.c.b.a.in-addr.arpa` → its PTR records. Each name is served as a zone of its own, so
    /// the server is authoritative for the addresses it knows and for nothing else.
    pub reverse: Records,
}

/// The reverse name of `ip`: `d.c.b.a.in-addr.arpa`.
pub fn reverse_name(ip: Ipv4Addr) -> String {
    let [a, b, c, d] = ip.octets();
    format!("{d}.{c}.{b}.{a}.in-addr.arpa")
}

/// The IPv4 cluster IPs of a Service (`clusterIP` and `clusterIPs`), sorted; empty for a
/// headless Service or one without an address yet.
fn cluster_ipv4s(spec: &ServiceSpec) -> Vec<Ipv4Addr> {
    let mut ips: Vec<Ipv4Addr> =
        spec.cluster_ip.iter().chain(spec.cluster_ips.iter().flatten()).filter_map(|ip| ip.parse().ok()).collect();
    ips.sort();
    ips.dedup();
    ips
}

/// The spec's _hostname_ of an endpoint: its `hostname`, else its address with dashes.
fn endpoint_hostname(addr: &EndpointAddress, ip: Ipv4Addr) -> String {
    match addr.hostname.as_deref() {
        Some(host) if !host.is_empty() => host.to_string(),
        _ => ip.to_string().replace('.', "-"),
    }
}

/// All records for `services` and their `endpoints` (matched by namespace and name).
pub fn compute(domain: &str, services: &[Service], endpoints: &[Endpoints]) -> ClusterRecords {
    let eps: BTreeMap<(String, String), &Endpoints> =
        endpoints.iter().filter_map(|e| Some(((e.metadata.namespace.clone()?, e.metadata.name.clone()?), e))).collect();
    let mut out = Records::new();
    let mut reverse = Records::new();
    for svc in services {
        let (Some(ns), Some(name)) = (svc.metadata.namespace.as_deref(), svc.metadata.name.as_deref()) else {
            continue;
        };
        let Some(spec) = svc.spec.as_ref() else { continue };
        let fqdn = format!("{name}.{ns}.svc.{domain}");
        if spec.type_.as_deref() == Some("ExternalName") {
            if let Some(target) = spec.external_name.as_deref() {
                out.entry(fqdn).or_default().push(Data::Cname(target.trim_end_matches('.').to_string()));
            }
            continue;
        }
        let cluster_ips = cluster_ipv4s(spec);
        if !cluster_ips.is_empty() {
            for ip in cluster_ips {
                out.entry(fqdn.clone()).or_default().push(Data::A(ip));
                reverse.entry(reverse_name(ip)).or_default().push(Data::Ptr(fqdn.clone()));
            }
            for port in spec.ports.iter().flatten() {
                let (Some(pname), Ok(p)) = (port.name.as_deref(), u16::try_from(port.port)) else { continue };
                let proto = port.protocol.as_deref().unwrap_or("TCP").to_ascii_lowercase();
                out.entry(format!("_{pname}._{proto}.{fqdn}"))
                    .or_default()
                    .push(Data::Srv { port: p, target: fqdn.clone() });
            }
        } else if spec.cluster_ip.as_deref().unwrap_or("None") == "None" {
            let Some(ep) = eps.get(&(ns.to_string(), name.to_string())) else { continue };
            for subset in ep.subsets.iter().flatten() {
                for addr in subset.addresses.iter().flatten() {
                    let Ok(ip) = addr.ip.parse::<Ipv4Addr>() else { continue };
                    let host = format!("{}.{fqdn}", endpoint_hostname(addr, ip));
                    out.entry(fqdn.clone()).or_default().push(Data::A(ip));
                    out.entry(host.clone()).or_default().push(Data::A(ip));
                    // One SRV record per ready endpoint and named port, naming the endpoint.
                    for port in subset.ports.iter().flatten() {
                        let (Some(pname), Ok(p)) = (port.name.as_deref(), u16::try_from(port.port)) else { continue };
                        let proto = port.protocol.as_deref().unwrap_or("TCP").to_ascii_lowercase();
                        out.entry(format!("_{pname}._{proto}.{fqdn}"))
                            .or_default()
                            .push(Data::Srv { port: p, target: host.clone() });
                    }
                    reverse.entry(reverse_name(ip)).or_default().push(Data::Ptr(host));
                }
            }
        }
    }
    for records in out.values_mut().chain(reverse.values_mut()) {
        records.sort();
        records.dedup();
    }
    ClusterRecords { names: out, reverse }
}

/// The zone of pod names: `pod.<domain>`.
pub fn pod_zone(domain: &str) -> String {
    format!("pod.{}", domain.trim_end_matches('.'))
}

/// A DNS-1123 label: what a namespace's name is.
fn is_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 63
        && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// The address a pod name stands for, as CoreDNS' `pods insecure` answers it:
/// `a-b-c-d.<namespace>.pod.<domain>` → `a.b.c.d`, for any namespace (a DNS label), without
/// looking at Pods. `None` for every other name (the answer is then NXDOMAIN), among them a
/// first label that is not an IPv4 address with dashes (`1-2-3`, `300-1-1-1`, `01-2-3-4`).
pub fn pod_address(domain: &str, name: &str) -> Option<Ipv4Addr> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let suffix = format!(".{}", pod_zone(&domain.to_ascii_lowercase()));
    let (dashed, namespace) = name.strip_suffix(&suffix)?.split_once('.')?;
    if !is_label(namespace) || !dashed.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        return None;
    }
    dashed.replace('-', ".").parse().ok()
}

/// The records of the pod zone that answer a query for `name`: its A record when it is a pod
/// name ([`pod_address`]), else none.
pub fn pod_records(domain: &str, name: &str) -> Records {
    pod_address(domain, name)
        .map(|ip| Records::from([(name.trim_end_matches('.').to_ascii_lowercase(), vec![Data::A(ip)])]))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(yaml: &str) -> Service {
        serde_yaml::from_str(yaml).expect("service yaml")
    }

    /// The headless Service `a/db`'s endpoints: two ready addresses (one with a hostname) and
    /// one not ready.
    fn db_endpoints() -> Endpoints {
        serde_yaml::from_str(
            "metadata: {name: db, namespace: a}\nsubsets: [{addresses: [{ip: 10.244.0.7, hostname: db-0}, {ip: 10.244.0.8}], notReadyAddresses: [{ip: 10.244.0.9}]}]",
        )
        .expect("endpoints")
    }

    #[test]
    fn cluster_ip_headless_and_external_name() {
        let services = vec![
            svc("metadata: {name: web, namespace: a}\nspec: {clusterIP: 10.96.3.4, ports: [{name: http, port: 80}]}"),
            svc("metadata: {name: db, namespace: a}\nspec: {clusterIP: None}"),
            svc("metadata: {name: ext, namespace: b}\nspec: {type: ExternalName, externalName: example.test.}"),
            svc("metadata: {name: pending, namespace: b}\nspec: {}"),
        ];
        let endpoints: Vec<Endpoints> = vec![db_endpoints()];
        let r = compute("cluster.local", &services, &endpoints).names;
        assert_eq!(r["web.a.svc.cluster.local"], vec![Data::A(Ipv4Addr::new(10, 96, 3, 4))]);
        assert_eq!(
            r["_http._tcp.web.a.svc.cluster.local"],
            vec![Data::Srv { port: 80, target: "web.a.svc.cluster.local".into() }]
        );
        assert_eq!(
            r["db.a.svc.cluster.local"],
            vec![Data::A(Ipv4Addr::new(10, 244, 0, 7)), Data::A(Ipv4Addr::new(10, 244, 0, 8))]
        );
        assert_eq!(r["db-0.db.a.svc.cluster.local"], vec![Data::A(Ipv4Addr::new(10, 244, 0, 7))]);
        assert_eq!(r["10-244-0-8.db.a.svc.cluster.local"], vec![Data::A(Ipv4Addr::new(10, 244, 0, 8))]);
        assert_eq!(r["ext.b.svc.cluster.local"], vec![Data::Cname("example.test".into())]);
        assert!(!r.contains_key("pending.b.svc.cluster.local"));
        assert_eq!(r.len(), 6);
    }

    #[test]
    fn a_headless_services_named_ports_have_an_srv_record_per_ready_endpoint() {
        let services = vec![svc("metadata: {name: db, namespace: a}\nspec: {clusterIP: None}")];
        let mut endpoints = db_endpoints();
        let subset = endpoints.subsets.as_mut().and_then(|s| s.first_mut());
        if let Some(subset) = subset {
            subset.ports = serde_yaml::from_str("[{name: sql, port: 5432, protocol: TCP}, {port: 9}]").ok();
        }
        let r = compute("cluster.local", &services, &[endpoints]).names;
        assert_eq!(
            r["_sql._tcp.db.a.svc.cluster.local"],
            vec![
                Data::Srv { port: 5432, target: "10-244-0-8.db.a.svc.cluster.local".into() },
                Data::Srv { port: 5432, target: "db-0.db.a.svc.cluster.local".into() },
            ]
        );
        // An unnamed port has none; the endpoint that is not ready is not named.
        assert_eq!(r.keys().filter(|k| k.starts_with('_')).count(), 1);
    }

    #[test]
    fn reverse_records_for_cluster_ips_and_headless_endpoints() {
        let services = vec![
            svc(
                "metadata: {name: web, namespace: a}\nspec: {clusterIP: 10.96.3.4, clusterIPs: [10.96.3.4, 'fd00::4']}",
            ),
            svc(
                "metadata: {name: v6first, namespace: a}\nspec: {clusterIP: 'fd00::5', clusterIPs: ['fd00::5', 10.96.3.5]}",
            ),
            svc("metadata: {name: db, namespace: a}\nspec: {clusterIP: None}"),
            svc("metadata: {name: db2, namespace: b}\nspec: {clusterIP: None}"),
            svc("metadata: {name: ext, namespace: b}\nspec: {type: ExternalName, externalName: example.test.}"),
            svc("metadata: {name: pending, namespace: b}\nspec: {}"),
        ];
        let endpoints: Vec<Endpoints> = vec![
            db_endpoints(),
            // The same pod behind a second headless Service: one PTR per Service.
            serde_yaml::from_str("metadata: {name: db2, namespace: b}\nsubsets: [{addresses: [{ip: 10.244.0.7}]}]")
                .expect("endpoints"),
            // Endpoints of a Service with a cluster IP give no PTR (the spec's are headless only).
            serde_yaml::from_str("metadata: {name: web, namespace: a}\nsubsets: [{addresses: [{ip: 10.244.0.20}]}]")
                .expect("endpoints"),
        ];
        let r = compute("cluster.local", &services, &endpoints);
        let ptr = |s: &str| Data::Ptr(s.to_string());
        assert_eq!(r.reverse["4.3.96.10.in-addr.arpa"], vec![ptr("web.a.svc.cluster.local")]);
        assert_eq!(r.reverse["5.3.96.10.in-addr.arpa"], vec![ptr("v6first.a.svc.cluster.local")]);
        assert_eq!(r.names["v6first.a.svc.cluster.local"], vec![Data::A(Ipv4Addr::new(10, 96, 3, 5))]);
        assert_eq!(
            r.reverse["7.0.244.10.in-addr.arpa"],
            vec![ptr("10-244-0-7.db2.b.svc.cluster.local"), ptr("db-0.db.a.svc.cluster.local")]
        );
        assert_eq!(r.reverse["8.0.244.10.in-addr.arpa"], vec![ptr("10-244-0-8.db.a.svc.cluster.local")]);
        assert!(!r.reverse.contains_key("9.0.244.10.in-addr.arpa"), "not ready");
        assert_eq!(r.reverse.len(), 4, "{:#?}", r.reverse);
        // Every PTR target is a name the cluster domain answers.
        for target in r.reverse.values().flatten() {
            let Data::Ptr(target) = target else { panic!("{target:?}") };
            assert!(r.names.contains_key(target), "{target}");
        }
        assert_eq!(reverse_name(Ipv4Addr::new(1, 2, 3, 4)), "4.3.2.1.in-addr.arpa");
    }

    #[test]
    fn pod_names_carry_their_address() {
        let d = "cluster.local";
        assert_eq!(pod_zone(d), "pod.cluster.local");
        assert_eq!(pod_address(d, "10-244-0-5.default.pod.cluster.local"), Some(Ipv4Addr::new(10, 244, 0, 5)));
        assert_eq!(pod_address(d, "100-96-1-7.e2e-dns-123.pod.cluster.local."), Some(Ipv4Addr::new(100, 96, 1, 7)));
        assert_eq!(pod_address(d, "1-2-3-4.NS.Pod.Cluster.Local"), Some(Ipv4Addr::new(1, 2, 3, 4)), "any case");
        assert_eq!(pod_address(d, "0-0-0-0.any.pod.cluster.local"), Some(Ipv4Addr::UNSPECIFIED));
        for bad in [
            "1-2-3.ns.pod.cluster.local",
            "300-1-1-1.ns.pod.cluster.local",
            "1-2-3-4-5.ns.pod.cluster.local",
            "01-2-3-4.ns.pod.cluster.local",
            "1--2-3-4.ns.pod.cluster.local",
            "-1-2-3-4.ns.pod.cluster.local",
            "a-b-c-d.ns.pod.cluster.local",
            "web.ns.pod.cluster.local",
            "1-2-3-4.pod.cluster.local",
            "ns.pod.cluster.local",
            "pod.cluster.local",
            "x.1-2-3-4.ns.pod.cluster.local",
            "1-2-3-4.-ns.pod.cluster.local",
            "1-2-3-4.ns_x.pod.cluster.local",
            "1-2-3-4.ns.svc.cluster.local",
            "1-2-3-4.ns.pod.other.local",
        ] {
            assert_eq!(pod_address(d, bad), None, "{bad}");
            assert!(pod_records(d, bad).is_empty(), "{bad}");
        }
        assert_eq!(
            pod_records(d, "10-244-0-5.Default.pod.cluster.local."),
            Records::from([(
                "10-244-0-5.default.pod.cluster.local".into(),
                vec![Data::A(Ipv4Addr::new(10, 244, 0, 5))]
            )])
        );
    }
}
