//! The DNS records of the cluster, computed from Services and Endpoints (pure), as Kubernetes'
//! DNS specification describes them:
//! * a ClusterIP Service `s` in `ns`: `s.ns.svc.<domain>` A its cluster IP, and an SRV record
//!   `_port._proto.s.ns.svc.<domain>` per named port;
//! * a headless Service: one A record per ready endpoint address, and
//!   `<hostname>.s.ns.svc.<domain>` for endpoints with a hostname (StatefulSet pods);
//! * an ExternalName Service: a CNAME. The name is answered, never resolved further.

use k8s_openapi::api::core::v1::{Endpoints, Service};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The data of one record. Services give A, CNAME and SRV; the extra zones ([`super::zones`])
/// also AAAA and TXT.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Data {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Cname(String),
    Srv { port: u16, target: String },
    Txt(String),
}

/// Fully qualified name (without the trailing dot) → its records, sorted.
pub type Records = BTreeMap<String, Vec<Data>>;

/// All records for `services` and their `endpoints` (matched by namespace and name).
pub fn compute(domain: &str, services: &[Service], endpoints: &[Endpoints]) -> Records {
    let eps: BTreeMap<(String, String), &Endpoints> =
        endpoints.iter().filter_map(|e| Some(((e.metadata.namespace.clone()?, e.metadata.name.clone()?), e))).collect();
    let mut out = Records::new();
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
        let cluster_ip = spec.cluster_ip.as_deref().unwrap_or("None");
        if let Ok(ip) = cluster_ip.parse::<Ipv4Addr>() {
            out.entry(fqdn.clone()).or_default().push(Data::A(ip));
            for port in spec.ports.iter().flatten() {
                let (Some(pname), Ok(p)) = (port.name.as_deref(), u16::try_from(port.port)) else { continue };
                let proto = port.protocol.as_deref().unwrap_or("TCP").to_ascii_lowercase();
                out.entry(format!("_{pname}._{proto}.{fqdn}"))
                    .or_default()
                    .push(Data::Srv { port: p, target: fqdn.clone() });
            }
        } else if cluster_ip == "None" {
            let Some(ep) = eps.get(&(ns.to_string(), name.to_string())) else { continue };
            for subset in ep.subsets.iter().flatten() {
                for addr in subset.addresses.iter().flatten() {
                    let Ok(ip) = addr.ip.parse::<Ipv4Addr>() else { continue };
                    out.entry(fqdn.clone()).or_default().push(Data::A(ip));
                    if let Some(host) = addr.hostname.as_deref() {
                        out.entry(format!("{host}.{fqdn}")).or_default().push(Data::A(ip));
                    }
                }
            }
        }
    }
    for records in out.values_mut() {
        records.sort();
        records.dedup();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(yaml: &str) -> Service {
        serde_yaml::from_str(yaml).expect("service yaml")
    }

    #[test]
    fn cluster_ip_headless_and_external_name() {
        let services = vec![
            svc("metadata: {name: web, namespace: a}\nspec: {clusterIP: 10.96.3.4, ports: [{name: http, port: 80}]}"),
            svc("metadata: {name: db, namespace: a}\nspec: {clusterIP: None}"),
            svc("metadata: {name: ext, namespace: b}\nspec: {type: ExternalName, externalName: example.test.}"),
            svc("metadata: {name: pending, namespace: b}\nspec: {}"),
        ];
        let endpoints: Vec<Endpoints> = vec![
            serde_yaml::from_str(
                "metadata: {name: db, namespace: a}\nsubsets: [{addresses: [{ip: 10.244.0.7, hostname: db-0}, {ip: 10.244.0.8}], notReadyAddresses: [{ip: 10.244.0.9}]}]",
            )
            .expect("endpoints"),
        ];
        let r = compute("cluster.local", &services, &endpoints);
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
        assert_eq!(r["ext.b.svc.cluster.local"], vec![Data::Cname("example.test".into())]);
        assert!(!r.contains_key("pending.b.svc.cluster.local"));
        assert_eq!(r.len(), 5);
    }
}
