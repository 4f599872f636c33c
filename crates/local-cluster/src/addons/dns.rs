//! Cluster DNS: hickory's authoritative server for the cluster domain, answering from records
//! computed from Services and Endpoints ([`super::records`]). Queries for any other name are
//! refused: nothing is forwarded, so no lookup ever leaves the machine.
//!
//! The zone is rebuilt as a whole when a watched object changes (coalesced over a short
//! window) and swapped in atomically; a rebuild that yields the same records swaps nothing.

use super::records::{self, Data, Records};
use crate::error::{Error, Result};
use hickory_server::net::runtime::Time;
use hickory_server::proto::rr::rdata::{A, CNAME, SOA, SRV};
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
}

impl std::fmt::Debug for Zones {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zones").field("domain", &self.domain).finish_non_exhaustive()
    }
}

impl Zones {
    pub fn new(domain: &str) -> Result<Self> {
        let catalog = catalog(domain, &Records::new(), 1)?;
        Ok(Self { current: Arc::new(RwLock::new(Arc::new(catalog))), domain: domain.to_string() })
    }

    /// Replaces the zone's records.
    pub fn replace(&self, records: &Records, serial: u32) -> Result<()> {
        let catalog = catalog(&self.domain, records, serial)?;
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
        let catalog = self.catalog();
        catalog.handle_request::<R, T>(request, response_handle).await
    }
}

fn name(fqdn: &str) -> Result<Name> {
    Name::from_ascii(format!("{}.", fqdn.trim_end_matches('.')))
        .map_err(|e| Error::Dns(format!("{fqdn:?} is not a DNS name: {e}").into()))
}

fn catalog(domain: &str, records: &Records, serial: u32) -> Result<Catalog> {
    let origin = name(domain)?;
    let mut zone = InMemoryZoneHandler::<hickory_server::net::runtime::TokioRuntimeProvider>::empty(
        origin.clone(),
        ZoneType::Primary,
        AxfrPolicy::Deny,
    );
    let soa =
        SOA::new(name(&format!("ns.dns.{domain}"))?, name(&format!("hostmaster.{domain}"))?, serial, 60, 10, 3600, TTL);
    zone.upsert_mut(Record::from_rdata(origin.clone(), TTL, RData::SOA(soa)), serial);
    for (fqdn, datas) in records {
        let owner = name(fqdn)?;
        for data in datas {
            let rdata = match data {
                Data::A(ip) => RData::A(A(*ip)),
                Data::Cname(target) => RData::CNAME(CNAME(name(target)?)),
                Data::Srv { port, target } => RData::SRV(SRV::new(0, 100, *port, name(target)?)),
            };
            zone.upsert_mut(Record::from_rdata(owner.clone(), TTL, rdata), serial);
        }
    }
    let mut catalog = Catalog::new();
    catalog.upsert(LowerName::new(&origin), vec![Arc::new(zone)]);
    Ok(catalog)
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

/// Recomputes the records from the reflectors' stores; returns them.
pub fn snapshot(
    services: &kube::runtime::reflector::Store<k8s_openapi::api::core::v1::Service>,
    endpoints: &kube::runtime::reflector::Store<k8s_openapi::api::core::v1::Endpoints>,
    domain: &str,
) -> Records {
    let svcs: Vec<_> = services.state().iter().map(|s| (**s).clone()).collect();
    let eps: Vec<_> = endpoints.state().iter().map(|e| (**e).clone()).collect();
    records::compute(domain, &svcs, &eps)
}
