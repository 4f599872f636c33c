//! The agent in the shoot: it dials out to the proxy server (mutual TLS), keeps one stream to
//! each of the `servercount` distinct servers behind that address, and for every dial a server
//! sends it opens the TCP connection inside the shoot, if the destination lies in a network it
//! is allowed to reach, and carries the bytes.

use crate::packets::{self, Frame};
use crate::proto::Packet;
use crate::proto::agent_service_client::AgentServiceClient;
use crate::shared::{lock, send_soon};
use ipnet::IpNet;
use prometheus::{IntCounterVec, IntGauge, Opts, Registry};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, mpsc};
use tokio::task::AbortHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};
use tracing::{debug, info, warn};

type Chunk = Vec<u8>;

#[derive(Clone, Debug)]
pub struct Settings {
    /// The agent's id (`agentid`), e.g. its Pod name.
    pub agent_id: String,
    /// Destinations it may dial: the shoot's node, Pod and Service networks.
    pub allowed: Vec<IpNet>,
    /// And the addresses of the shoot's Nodes, when watched.
    pub nodes: Option<crate::nodes::NodeAddresses>,
    pub dial_timeout: Duration,
    /// Chunks queued per connection and packets toward the server.
    pub queue: usize,
    /// How long a full connection queue may hold up the stream before that connection closes.
    pub stall: Duration,
    /// First and largest pause between attempts while servers are missing.
    pub retry: Duration,
    pub retry_cap: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            agent_id: "konnectivity-agent".into(),
            allowed: Vec::new(),
            nodes: None,
            dial_timeout: Duration::from_secs(5),
            queue: 64,
            stall: Duration::from_secs(10),
            retry: Duration::from_millis(500),
            retry_cap: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("connecting to the proxy server")]
    Transport(#[from] tonic::transport::Error),
    #[error("opening the agent stream: {}", .0.message())]
    Stream(tonic::Status),
    #[error("the server's answer lacks the {0} header")]
    Header(&'static str),
    #[error("agent id {0:?} is not a header value")]
    AgentId(String),
}

/// Whether `address` lies in one of the `allowed` networks (nothing is allowed by an empty list).
pub fn permitted(address: &SocketAddr, allowed: &[IpNet]) -> bool {
    allowed.iter().any(|net| net.contains(&address.ip()))
}

/// The first of `resolved` that may be dialed (`allowed`, or `also` allows it), or why none.
fn choose(
    target: &str,
    resolved: &[SocketAddr],
    allowed: &[IpNet],
    also: impl Fn(&SocketAddr) -> bool,
) -> Result<SocketAddr, String> {
    match resolved.iter().find(|a| permitted(a, allowed) || also(a)) {
        Some(address) => Ok(*address),
        None if resolved.is_empty() => Err(format!("{target} did not resolve")),
        None => Err(format!("{target} is outside the networks this agent may reach")),
    }
}

#[derive(Clone, Debug)]
struct Metrics {
    servers: IntGauge,
    connections: IntGauge,
    dials: IntCounterVec,
}

impl Metrics {
    fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let servers = IntGauge::new("konnectivity_agent_servers", "Servers this agent holds a stream to")?;
        let connections = IntGauge::new("konnectivity_agent_connections", "Connections open through this agent")?;
        let dials = IntCounterVec::new(
            Opts::new("konnectivity_agent_dials_total", "Dials asked for by servers, by result"),
            &["result"],
        )?;
        registry.register(Box::new(servers.clone()))?;
        registry.register(Box::new(connections.clone()))?;
        registry.register(Box::new(dials.clone()))?;
        Ok(Self { servers, connections, dials })
    }
}

#[derive(Debug)]
pub struct Agent {
    endpoint: Endpoint,
    settings: Settings,
    metrics: Metrics,
    next_id: AtomicI64,
    /// Set while at least one server stream is up (the agent's `/readyz`).
    connected: Arc<AtomicBool>,
}

/// One connection opened for a server.
#[derive(Debug)]
struct Conn {
    queue: mpsc::Sender<Chunk>,
    reader: AbortHandle,
}

/// One stream to one server.
struct Session {
    server_id: String,
    server_count: usize,
    inbound: tonic::Streaming<Packet>,
    out: mpsc::Sender<Packet>,
}

impl Agent {
    /// `endpoint`: the server's address with its TLS configuration (CA, the agent's
    /// certificate, the server name).
    pub fn new(endpoint: Endpoint, settings: Settings, registry: &Registry) -> Result<Arc<Self>, prometheus::Error> {
        Ok(Arc::new(Self {
            endpoint,
            settings,
            metrics: Metrics::new(registry)?,
            next_id: AtomicI64::new(1),
            connected: Arc::default(),
        }))
    }

    /// The flag that is set while at least one server stream is up.
    pub fn connected(&self) -> Arc<AtomicBool> {
        self.connected.clone()
    }

    fn held(&self, servers: usize) {
        self.metrics.servers.set(servers as i64);
        self.connected.store(servers > 0, Ordering::Release);
    }

    /// Servers this agent holds a stream to now.
    pub fn servers(&self) -> i64 {
        self.metrics.servers.get()
    }

    /// Keeps streams to `servercount` distinct servers until `shutdown` resolves.
    pub async fn run(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let ended = Arc::new(Notify::new());
        let mut sessions: HashMap<String, tokio::task::JoinHandle<()>> = HashMap::new();
        let mut wanted = 1;
        let mut pause = self.settings.retry;
        loop {
            sessions.retain(|_, task| !task.is_finished());
            self.held(sessions.len());
            if sessions.len() < wanted {
                match self.open().await {
                    Ok(session) => {
                        wanted = session.server_count.max(1);
                        if sessions.contains_key(&session.server_id) {
                            debug!(server = %session.server_id, "already connected to this server");
                        } else {
                            info!(server = %session.server_id, count = wanted, "connected to a proxy server");
                            let id = session.server_id.clone();
                            let (agent, ended) = (self.clone(), ended.clone());
                            sessions.insert(
                                id,
                                tokio::spawn(async move {
                                    agent.serve(session).await;
                                    ended.notify_one();
                                }),
                            );
                            self.held(sessions.len());
                            pause = self.settings.retry;
                            continue;
                        }
                    }
                    Err(e) => warn!(error = %runtime::cli::report(&e), "connecting to the proxy server"),
                }
            }
            let wait = if sessions.len() < wanted { pause } else { self.settings.retry_cap };
            if sessions.len() < wanted {
                pause = (pause.mul_f64(1.5)).min(self.settings.retry_cap);
            }
            tokio::select! {
                () = tokio::time::sleep(wait.mul_f64(0.9 + fastrand::f64() * 0.2)) => {}
                () = ended.notified() => {}
                () = &mut shutdown => break,
            }
        }
        for task in sessions.values() {
            task.abort();
        }
        self.held(0);
    }

    /// A new connection (so that a load balancer may pick another server) and stream.
    async fn open(&self) -> Result<Session, AgentError> {
        let channel: Channel = self.endpoint.connect().await?;
        let mut client = AgentServiceClient::new(channel);
        let (out, rx) = mpsc::channel(self.settings.queue);
        let mut request = tonic::Request::new(ReceiverStream::new(rx));
        let id = &self.settings.agent_id;
        request.metadata_mut().insert("agentid", id.parse().map_err(|_| AgentError::AgentId(id.clone()))?);
        let response = client.connect(request).await.map_err(AgentError::Stream)?;
        let header = |name| response.metadata().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let server_id = header("serverid").ok_or(AgentError::Header("serverID"))?;
        let server_count =
            header("servercount").and_then(|c| c.parse().ok()).ok_or(AgentError::Header("serverCount"))?;
        Ok(Session { server_id, server_count, inbound: response.into_inner(), out })
    }

    /// Serves one server's stream until it ends; its connections close with it.
    async fn serve(self: Arc<Self>, mut session: Session) {
        let conns: Arc<Mutex<HashMap<i64, Conn>>> = Arc::default();
        loop {
            match session.inbound.message().await {
                Ok(Some(packet)) => self.on_server_packet(&session.out, &conns, Frame::from(packet)).await,
                Ok(None) => break,
                Err(status) => {
                    warn!(server = %session.server_id, error = %status.message(), "stream to the proxy server failed");
                    break;
                }
            }
        }
        info!(server = %session.server_id, "disconnected from a proxy server");
        for (_, conn) in lock(&conns).drain() {
            conn.reader.abort();
            self.metrics.connections.dec();
        }
    }

    async fn on_server_packet(
        self: &Arc<Self>,
        out: &mpsc::Sender<Packet>,
        conns: &Arc<Mutex<HashMap<i64, Conn>>>,
        frame: Frame,
    ) {
        match frame {
            Frame::DialRequest { protocol, address, random } => {
                let (agent, out, conns) = (self.clone(), out.clone(), conns.clone());
                tokio::spawn(async move { agent.dial(out, conns, &protocol, &address, random).await });
            }
            Frame::Data { connect_id, data } => {
                let queue = lock(conns).get(&connect_id).map(|c| c.queue.clone());
                if let Some(queue) = queue
                    && queue.send_timeout(data, self.settings.stall).await.is_err()
                {
                    self.close(out, conns, connect_id, "the destination does not take its data");
                }
            }
            Frame::CloseRequest { connect_id } => self.close(out, conns, connect_id, ""),
            Frame::DialResponse { .. } | Frame::CloseResponse { .. } | Frame::Drain | Frame::Other => {
                debug!("ignoring a packet servers do not send");
            }
        }
    }

    /// Closes a connection, if still open, and tells the server so.
    fn close(&self, out: &mpsc::Sender<Packet>, conns: &Mutex<HashMap<i64, Conn>>, connect_id: i64, error: &str) {
        if let Some(conn) = lock(conns).remove(&connect_id) {
            conn.reader.abort();
            self.metrics.connections.dec();
            send_soon(out, packets::close_response(connect_id, error));
        }
    }

    async fn dial(
        self: Arc<Self>,
        out: mpsc::Sender<Packet>,
        conns: Arc<Mutex<HashMap<i64, Conn>>>,
        protocol: &str,
        target: &str,
        random: i64,
    ) {
        let opened = match protocol {
            "tcp" => self.open_tcp(target).await,
            other => Err(format!("protocol {other:?} is not supported")),
        };
        let stream = match opened {
            Ok(stream) => stream,
            Err(error) => {
                info!(%target, %error, "dial refused or failed");
                let result = if error.contains("outside the networks") { "forbidden" } else { "failed" };
                self.metrics.dials.with_label_values(&[result]).inc();
                let _ = out.send(packets::dial_response(random, Err(error))).await;
                return;
            }
        };
        self.metrics.dials.with_label_values(&["ok"]).inc();
        let connect_id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (mut read, mut write) = stream.into_split();
        let (queue, mut chunks) = mpsc::channel::<Chunk>(self.settings.queue);
        tokio::spawn(async move {
            while let Some(chunk) = chunks.recv().await {
                if write.write_all(&chunk).await.is_err() {
                    break;
                }
            }
            let _ = write.shutdown().await;
        });
        // The reader starts after the answer, so the server knows the id before any data.
        let (start, started) = tokio::sync::oneshot::channel::<()>();
        let reader = {
            let (agent, out, conns) = (self.clone(), out.clone(), conns.clone());
            tokio::spawn(async move {
                if started.await.is_err() {
                    return;
                }
                let mut buffer = vec![0u8; 32 * 1024];
                while let Ok(n @ 1..) = read.read(&mut buffer).await {
                    if out.send(packets::data(connect_id, buffer[..n].to_vec())).await.is_err() {
                        return;
                    }
                }
                // The destination closed: tell the server, unasked.
                agent.close(&out, &conns, connect_id, "");
            })
        };
        lock(&conns).insert(connect_id, Conn { queue, reader: reader.abort_handle() });
        self.metrics.connections.inc();
        if out.send(packets::dial_response(random, Ok(connect_id))).await.is_ok() {
            let _ = start.send(());
        } else {
            self.close(&out, &conns, connect_id, "");
        }
    }

    async fn open_tcp(&self, target: &str) -> Result<TcpStream, String> {
        let connect = async {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host(target).await.map_err(|e| format!("resolving {target}: {e}"))?.collect();
            let node = |a: &SocketAddr| self.settings.nodes.as_ref().is_some_and(|n| n.contains(a.ip()));
            let address = choose(target, &resolved, &self.settings.allowed, node)?;
            TcpStream::connect(address).await.map_err(|e| format!("dialing {address}: {e}"))
        };
        tokio::time::timeout(self.settings.dial_timeout, connect)
            .await
            .map_err(|_| format!("dialing {target}: timed out"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().filter_map(|n| n.parse().ok()).collect()
    }

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    #[test]
    fn only_the_allowed_networks_are_dialed() {
        let allowed = nets(&["10.250.0.0/16", "100.64.0.0/13", "fd00::/8"]);
        assert!(permitted(&addr("10.250.1.2:10250"), &allowed));
        assert!(permitted(&addr("[fd00::1]:443"), &allowed));
        assert!(!permitted(&addr("10.251.0.1:10250"), &allowed));
        assert!(!permitted(&addr("169.254.169.254:80"), &allowed));
        assert!(!permitted(&addr("10.250.1.2:10250"), &[]));
    }

    #[test]
    fn the_first_allowed_address_of_a_name_is_chosen() {
        let allowed = nets(&["100.64.0.0/13"]);
        let resolved = [addr("192.168.0.1:443"), addr("100.64.0.10:443")];
        let none = |_: &SocketAddr| false;
        assert_eq!(choose("web.default.svc:443", &resolved, &allowed, none), Ok(addr("100.64.0.10:443")));
        let refused = choose("web:443", &resolved[..1], &allowed, none);
        assert!(refused.is_err_and(|e| e.contains("outside the networks")));
        assert!(choose("web:443", &[], &allowed, none).is_err_and(|e| e.contains("did not resolve")));
        // A node's address outside every range.
        let node = |a: &SocketAddr| a.ip().to_string() == "192.168.0.1";
        assert_eq!(choose("192.168.0.1:10250", &resolved[..1], &allowed, node), Ok(addr("192.168.0.1:443")));
    }
}
