//! Cluster DNS: hickory's authoritative server for the cluster domain, answering from records
//! computed from Services and Endpoints ([`super::records`]), and for the extra zones kept in
//! ConfigMaps ([`super::zones`]: provider-local's DNSRecords, so a shoot's API server name
//! resolves). Reverse names of the addresses it knows (cluster IPs, headless endpoints) are
//! zones of their own, one PTR name each. Pod names (`a-b-c-d.<ns>.pod.<domain>`) are answered
//! from a zone built for the query ([`records::pod_records`]): their address is in the name.
//! Queries for any other name, other reverse names included, are refused: nothing is
//! forwarded, so no lookup ever leaves the machine.
//!
//! The zone is rebuilt as a whole when a watched object changes (coalesced over a short
//! window) and swapped in atomically; a rebuild that yields the same records swaps nothing.

use super::records::{self, ClusterRecords, Data, Records};
use super::zones::Zones as ExtraZones;
use crate::error::{Error, Result};
use hickory_server::net::runtime::Time;
use hickory_server::proto::rr::rdata::{A, AAAA, CNAME, PTR, SOA, SRV, TXT};
use hickory_server::proto::rr::{LowerName, Name, RData, Record};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneType};
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Time-to-live of answers: short, so a changed Service is seen quickly.
const TTL: u32 = 5;

/// The request handler: the current catalog, replaced as a whole on changes.
#[derive(Clone)]
pub struct Zones {
    current: Arc<RwLock<Arc<Catalog>>>,
    domain: String,
    /// `pod.<domain>`: queries below it are answered by [`pod_catalog`].
    pod_zone: LowerName,
}

impl std::fmt::Debug for Zones {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zones").field("domain", &self.domain).finish_non_exhaustive()
    }
}

impl Zones {
    pub fn new(domain: &str) -> Result<Self> {
        let catalog = catalog(domain, &ClusterRecords::default(), &ExtraZones::new(), 1)?;
        Ok(Self {
            current: Arc::new(RwLock::new(Arc::new(catalog))),
            domain: domain.to_string(),
            pod_zone: LowerName::new(&name(&records::pod_zone(domain))?),
        })
    }

    /// Replaces the cluster domain's records, the reverse records and the extra zones.
    pub fn replace(&self, cluster: &ClusterRecords, extra: &ExtraZones, serial: u32) -> Result<()> {
        let catalog = catalog(&self.domain, cluster, extra, serial)?;
        if let Ok(mut current) = self.current.write() {
            *current = Arc::new(catalog);
        }
        Ok(())
    }

    fn catalog(&self) -> Arc<Catalog> {
        match self.current.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

#[async_trait::async_trait]
impl RequestHandler for Zones {
    async fn handle_request<R: ResponseHandler, T: Time>(&self, request: &Request, response_handle: R) -> ResponseInfo {
        let pod_query = request.request_info().ok().map(|info| info.query.name()).filter(|q| self.pod_zone.zone_of(q));
        let catalog = match pod_query.map(|q| pod_catalog(&self.domain, &q.to_string())) {
            Some(Ok(pods)) => Arc::new(pods),
            Some(Err(e)) => {
                tracing::warn!(error = %crate::report(&e), "DNS pod zone");
                self.catalog()
            }
            None => self.catalog(),
        };
        catalog.handle_request::<R, T>(request, response_handle).await
    }
}

fn name(fqdn: &str) -> Result<Name> {
    Name::from_ascii(format!("{}.", fqdn.trim_end_matches('.')))
        .map_err(|e| Error::Dns(format!("{fqdn:?} is not a DNS name: {e}").into()))
}

fn catalog(domain: &str, cluster: &ClusterRecords, extra: &ExtraZones, serial: u32) -> Result<Catalog> {
    let mut catalog = Catalog::new();
    let origin = name(domain)?;
    catalog.upsert(LowerName::new(&origin), vec![Arc::new(zone(origin, domain, &cluster.names, serial)?)]);
    // One zone per reverse name: authoritative for the addresses the cluster knows only.
    for (reverse, ptrs) in &cluster.reverse {
        let origin = name(reverse)?;
        let records = Records::from([(reverse.clone(), ptrs.clone())]);
        catalog.upsert(LowerName::new(&origin), vec![Arc::new(zone(origin, domain, &records, serial)?)]);
    }
    for (origin, records) in extra {
        let origin_name = name(origin)?;
        catalog.upsert(LowerName::new(&origin_name), vec![Arc::new(zone(origin_name, origin, records, serial)?)]);
    }
    Ok(catalog)
}

/// The catalog answering one query for `qname` below `pod.<domain>`: the pod zone holding
/// the A record the name stands for, if any, so hickory answers it, NODATA for other types, or
/// NXDOMAIN.
fn pod_catalog(domain: &str, qname: &str) -> Result<Catalog> {
    let origin = name(&records::pod_zone(domain))?;
    let mut catalog = Catalog::new();
    let records = records::pod_records(domain, qname);
    catalog.upsert(LowerName::new(&origin), vec![Arc::new(zone(origin, domain, &records, 1)?)]);
    Ok(catalog)
}

/// One authoritative zone: an SOA (named after `domain`) and `records`.
fn zone(
    origin: Name,
    domain: &str,
    records: &Records,
    serial: u32,
) -> Result<InMemoryZoneHandler<hickory_server::net::runtime::TokioRuntimeProvider>> {
    let mut zone = InMemoryZoneHandler::<hickory_server::net::runtime::TokioRuntimeProvider>::empty(
        origin.clone(),
        ZoneType::Primary,
        AxfrPolicy::Deny,
    );
    let soa =
        SOA::new(name(&format!("ns.dns.{domain}"))?, name(&format!("hostmaster.{domain}"))?, serial, 60, 10, 3600, TTL);
    zone.upsert_mut(Record::from_rdata(origin, TTL, RData::SOA(soa)), serial);
    for (fqdn, datas) in records {
        let owner = name(fqdn)?;
        for data in datas {
            let rdata = match data {
                Data::A(ip) => RData::A(A(*ip)),
                Data::Aaaa(ip) => RData::AAAA(AAAA(*ip)),
                Data::Cname(target) => RData::CNAME(CNAME(name(target)?)),
                Data::Srv { port, target } => RData::SRV(SRV::new(0, 100, *port, name(target)?)),
                Data::Txt(text) => RData::TXT(TXT::new(vec![text.clone()])),
                Data::Ptr(target) => RData::PTR(PTR(name(target)?)),
            };
            zone.upsert_mut(Record::from_rdata(owner.clone(), TTL, rdata), serial);
        }
    }
    Ok(zone)
}

/// Serves `zones` on UDP and TCP at `listen` until the process ends.
pub async fn serve(zones: Zones, listen: SocketAddr) -> Result<()> {
    let udp = tokio::net::UdpSocket::bind(listen)
        .await
        .map_err(|e| Error::Dns(format!("binding UDP {listen}: {e}").into()))?;
    let tcp = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| Error::Dns(format!("binding TCP {listen}: {e}").into()))?;
    let mut server = hickory_server::Server::new(zones);
    server.register_socket(udp);
    server.register_listener(tcp, Duration::from_secs(5), 64 * 1024);
    server.block_until_done().await.map_err(|e| Error::Dns(Box::new(e)))
}

/// What the server answers: the cluster domain's and the reverse records, and the extra zones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub cluster: ClusterRecords,
    pub extra: ExtraZones,
    /// Lines and ConfigMaps of the extra zones that are not served, and why.
    pub problems: Vec<String>,
}

/// Recomputes the records from the reflectors' stores.
pub fn snapshot(
    services: &kube::runtime::reflector::Store<k8s_openapi::api::core::v1::Service>,
    endpoints: &kube::runtime::reflector::Store<k8s_openapi::api::core::v1::Endpoints>,
    config_maps: &kube::runtime::reflector::Store<k8s_openapi::api::core::v1::ConfigMap>,
    domain: &str,
) -> Snapshot {
    let svcs: Vec<_> = services.state().iter().map(|s| (**s).clone()).collect();
    let eps: Vec<_> = endpoints.state().iter().map(|e| (**e).clone()).collect();
    let cms: Vec<_> = config_maps.state().iter().map(|c| (**c).clone()).collect();
    let (extra, problems) = super::zones::from_config_maps(&cms, domain);
    Snapshot { cluster: records::compute(domain, &svcs, &eps), extra, problems }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dnsclient::{Answer, Transport, query_a, query_a_over, query_ptr};
    use std::net::Ipv4Addr;

    /// A loopback address whose port is free for both UDP and TCP (the server binds both).
    fn free_udp_and_tcp_port() -> SocketAddr {
        for _ in 0..100 {
            let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = tcp.local_addr().unwrap();
            if std::net::UdpSocket::bind(addr).is_ok() {
                return addr;
            }
        }
        panic!("no port free for both UDP and TCP")
    }

    /// Asks `listen` with `ask` in a blocking task, retrying while the server may still be
    /// binding.
    async fn retry<F>(what: String, ask: F) -> Answer
    where
        F: Fn() -> std::io::Result<Answer> + Send + 'static,
    {
        tokio::task::spawn_blocking(move || {
            let mut last = None;
            // Up to 30 s (250 ms time-out and 50 ms pause per try): a loaded machine (CI runs
            // the integration tests side by side) can be slow to schedule the server's tasks.
            for _ in 0..100 {
                match ask() {
                    Ok(answer) => return answer,
                    Err(e) => {
                        last = Some(e);
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            }
            panic!("no answer for {what}: {last:?}")
        })
        .await
        .unwrap()
    }

    /// The real server on loopback: a Service name, a name from an extra zone, a name the zone
    /// does not hold, and a name outside every zone (refused, never forwarded); pod names and
    /// reverse names over UDP and TCP.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_cluster_and_extra_zones_and_refuses_the_rest() {
        let listen = free_udp_and_tcp_port();
        let zones = Zones::new("cluster.local").unwrap();
        let cluster = ClusterRecords {
            names: Records::from([("web.a.svc.cluster.local".to_string(), vec![Data::A(Ipv4Addr::new(10, 96, 3, 4))])]),
            reverse: Records::from([(
                "4.3.96.10.in-addr.arpa".to_string(),
                vec![Data::Ptr("web.a.svc.cluster.local".to_string())],
            )]),
        };
        let extra = ExtraZones::from([(
            "local.gardener.cloud".to_string(),
            Records::from([("api.s.p.local.gardener.cloud".to_string(), vec![Data::A(Ipv4Addr::new(10, 96, 9, 9))])]),
        )]);
        zones.replace(&cluster, &extra, 2).unwrap();
        let server = tokio::spawn(serve(zones.clone(), listen));
        let timeout = Duration::from_millis(250);
        let ask = move |name: &'static str| retry(name.to_string(), move || query_a(listen, name, timeout));
        let ask_over = move |name: &'static str, transport: Transport| {
            retry(format!("{name} over {transport:?}"), move || query_a_over(listen, name, transport, timeout))
        };
        let ask_ptr = move |name: &'static str, transport: Transport| {
            retry(format!("{name} PTR over {transport:?}"), move || query_ptr(listen, name, transport, timeout))
        };
        assert_eq!(ask("web.a.svc.cluster.local.").await, Answer::Addresses(vec![Ipv4Addr::new(10, 96, 3, 4)]));
        assert_eq!(ask("api.s.p.local.gardener.cloud.").await, Answer::Addresses(vec![Ipv4Addr::new(10, 96, 9, 9)]));
        assert_eq!(ask("api.gone.p.local.gardener.cloud.").await, Answer::Code("NXDomain".into()));
        assert_eq!(ask("example.com.").await, Answer::Code("Refused".into()));
        for transport in [Transport::Udp, Transport::Tcp] {
            // A pod name resolves to the address it carries, in any namespace.
            assert_eq!(
                ask_over("100-96-1-7.e2e-dns-1.pod.cluster.local.", transport).await,
                Answer::Addresses(vec![Ipv4Addr::new(100, 96, 1, 7)])
            );
            assert_eq!(ask_over("1-2-3.ns.pod.cluster.local.", transport).await, Answer::Code("NXDomain".into()));
            // A cluster IP's reverse name names its Service.
            assert_eq!(
                ask_ptr("4.3.96.10.in-addr.arpa.", transport).await,
                Answer::Names(vec!["web.a.svc.cluster.local.".into()])
            );
            // Reverse names of unknown addresses are other zones: refused, like every name
            // outside the server's zones.
            assert_eq!(ask_ptr("8.8.8.8.in-addr.arpa.", transport).await, Answer::Code("Refused".into()));
            assert_eq!(ask_ptr("5.3.96.10.in-addr.arpa.", transport).await, Answer::Code("Refused".into()));
        }
        // Pod names do not shadow the rest of the cluster domain.
        assert_eq!(ask("web.a.svc.cluster.local.").await, Answer::Addresses(vec![Ipv4Addr::new(10, 96, 3, 4)]));
        // A zone that goes away stops being answered.
        zones.replace(&cluster, &ExtraZones::new(), 3).unwrap();
        assert_eq!(ask("api.s.p.local.gardener.cloud.").await, Answer::Code("Refused".into()));
        server.abort();
    }
}
