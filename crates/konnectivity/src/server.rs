//! The proxy server beside a kube-apiserver: agents connect to it (`AgentService.Connect`, a
//! stream per agent that carries all of that agent's connections), and the API server sends it
//! one HTTP CONNECT request per connection over a Unix socket. Each request becomes a dial on
//! one agent (round robin, agents that announced a drain last); its bytes then flow as `DATA`
//! packets in both directions until either side closes.
//!
//! One agent stream carries every connection through that agent, so the stream's read loop
//! never waits long on one connection: each connection has a bounded queue, and a connection
//! whose reader does not take its data within [`Settings::stall`] is closed alone.

use crate::connect;
use crate::packets::{self, Frame};
use crate::proto::Packet;
use crate::proto::agent_service_server::{AgentService, AgentServiceServer};
use crate::shared::{lock, send_soon};
use prometheus::{IntCounterVec, IntGauge, Opts, Registry};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};
use tracing::{Instrument, debug, info, info_span, warn};

/// A chunk of a connection's bytes.
type Chunk = Vec<u8>;
type DialResult = Result<(i64, mpsc::Receiver<Chunk>), String>;

#[derive(Clone, Debug)]
pub struct Settings {
    /// This server's id, sent to agents (`serverid`): an agent keeps one stream per distinct id.
    pub server_id: String,
    /// How many servers run behind the agents' address (`servercount`): agents keep dialing
    /// until they hold a stream to that many distinct servers.
    pub server_count: u32,
    /// How long a dial may take on the agent before the API server gets a 504.
    pub dial_timeout: Duration,
    /// Chunks queued per connection and packets per agent stream.
    pub queue: usize,
    /// How long a full connection queue may hold up its agent's stream before that connection
    /// is closed.
    pub stall: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            server_id: "konnectivity-server".into(),
            server_count: 1,
            dial_timeout: Duration::from_secs(10),
            queue: 64,
            stall: Duration::from_secs(10),
        }
    }
}

#[derive(Clone, Debug)]
struct Metrics {
    agents: IntGauge,
    connections: IntGauge,
    dials: IntCounterVec,
}

impl Metrics {
    fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let agents = IntGauge::new("konnectivity_server_agents", "Agent streams connected to this server")?;
        let connections = IntGauge::new("konnectivity_server_connections", "Tunnelled connections open")?;
        let dials = IntCounterVec::new(
            Opts::new("konnectivity_server_dials_total", "Dials asked for by the API server, by result"),
            &["result"],
        )?;
        registry.register(Box::new(agents.clone()))?;
        registry.register(Box::new(connections.clone()))?;
        registry.register(Box::new(dials.clone()))?;
        Ok(Self { agents, connections, dials })
    }
}

/// One connected agent stream.
#[derive(Debug)]
struct Agent {
    id: String,
    serial: u64,
    out: mpsc::Sender<Result<Packet, Status>>,
    /// Dials sent and not yet answered, by their `random`.
    dials: Mutex<HashMap<i64, oneshot::Sender<DialResult>>>,
    /// Open connections' queues toward the API server, by `connectID`.
    conns: Mutex<HashMap<i64, mpsc::Sender<Chunk>>>,
    draining: AtomicBool,
}

impl Agent {
    /// Sends a control packet without waiting in a read loop.
    fn send_control(&self, packet: Packet) {
        send_soon(&self.out, Ok(packet));
    }
}

/// Which agent takes the next dial: round robin over those not draining, else over all.
fn pick(agents: &[Arc<Agent>], turn: usize) -> Option<Arc<Agent>> {
    let ready: Vec<&Arc<Agent>> = agents.iter().filter(|a| !a.draining.load(Ordering::Acquire)).collect();
    let pool: Vec<&Arc<Agent>> = if ready.is_empty() { agents.iter().collect() } else { ready };
    (!pool.is_empty()).then(|| pool[turn % pool.len()].clone())
}

/// The server's state, shared by the agent endpoint and the API server's socket.
#[derive(Debug)]
pub struct Tunnel {
    settings: Settings,
    agents: Mutex<Vec<Arc<Agent>>>,
    turn: AtomicUsize,
    serial: AtomicU64,
    metrics: Metrics,
}

impl Tunnel {
    pub fn new(settings: Settings, registry: &Registry) -> Result<Arc<Self>, prometheus::Error> {
        Ok(Arc::new(Self {
            settings,
            agents: Mutex::default(),
            turn: AtomicUsize::new(0),
            serial: AtomicU64::new(0),
            metrics: Metrics::new(registry)?,
        }))
    }

    /// Agent streams connected now.
    pub fn agents(&self) -> usize {
        lock(&self.agents).len()
    }

    /// The gRPC service agents connect to.
    pub fn agent_service(self: &Arc<Self>) -> AgentServiceServer<AgentEndpoint> {
        AgentServiceServer::new(AgentEndpoint { tunnel: self.clone() })
    }

    fn remove(&self, agent: &Agent) {
        lock(&self.agents).retain(|a| a.serial != agent.serial);
        self.metrics.agents.set(self.agents() as i64);
        // Dropping the queues ends their connections toward the API server; dropped dial
        // senders fail the dials still waiting.
        lock(&agent.conns).clear();
        lock(&agent.dials).clear();
    }

    /// Reads one agent's stream until it ends.
    async fn serve_agent(self: Arc<Self>, agent: Arc<Agent>, mut inbound: Streaming<Packet>) {
        loop {
            match inbound.message().await {
                Ok(Some(packet)) => self.on_agent_packet(&agent, Frame::from(packet)).await,
                Ok(None) => break,
                Err(status) => {
                    warn!(agent = %agent.id, error = %status.message(), "agent stream failed");
                    break;
                }
            }
        }
        info!(agent = %agent.id, "agent disconnected");
        self.remove(&agent);
    }

    async fn on_agent_packet(&self, agent: &Agent, frame: Frame) {
        match frame {
            Frame::DialResponse { random, connect_id, error } => {
                let waiting = lock(&agent.dials).remove(&random);
                match (waiting, error.is_empty()) {
                    (Some(waiting), true) => {
                        let (tx, rx) = mpsc::channel(self.settings.queue);
                        lock(&agent.conns).insert(connect_id, tx);
                        if waiting.send(Ok((connect_id, rx))).is_err() {
                            lock(&agent.conns).remove(&connect_id);
                            agent.send_control(packets::close_request(connect_id));
                        }
                    }
                    (Some(waiting), false) => {
                        let _ = waiting.send(Err(error));
                    }
                    // Answered after the API server's request gave up: close the orphan.
                    (None, true) => agent.send_control(packets::close_request(connect_id)),
                    (None, false) => {}
                }
            }
            Frame::Data { connect_id, data } => {
                let queue = lock(&agent.conns).get(&connect_id).cloned();
                if let Some(queue) = queue
                    && queue.send_timeout(data, self.settings.stall).await.is_err()
                {
                    debug!(agent = %agent.id, connect_id, "connection stalled or gone; closing it");
                    lock(&agent.conns).remove(&connect_id);
                    agent.send_control(packets::close_request(connect_id));
                }
            }
            Frame::CloseResponse { connect_id, .. } => {
                lock(&agent.conns).remove(&connect_id);
            }
            Frame::Drain => agent.draining.store(true, Ordering::Release),
            Frame::DialRequest { .. } | Frame::CloseRequest { .. } | Frame::Other => {
                debug!(agent = %agent.id, "ignoring a packet agents do not send");
            }
        }
    }

    /// Serves the API server's CONNECT requests on `listener` until `shutdown` resolves.
    pub async fn serve_api_server(
        self: Arc<Self>,
        listener: UnixListener,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let tunnel = self.clone();
                        tokio::spawn(async move { tunnel.serve_connection(stream).await });
                    }
                    Err(e) => {
                        warn!(error = %e, "accepting on the API server's socket");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                () = &mut shutdown => return,
            }
        }
    }

    async fn serve_connection(self: Arc<Self>, mut stream: UnixStream) {
        let (target, early) = match read_head(&mut stream).await {
            Ok(head) => head,
            Err(message) => {
                let _ = stream.write_all(&connect::failure(400, "Bad Request", &message)).await;
                return;
            }
        };
        let span = info_span!("tunnel", %target);
        self.tunnel(stream, target, early).instrument(span).await;
    }

    async fn tunnel(&self, mut stream: UnixStream, target: String, early: Vec<u8>) {
        let dial = self.dial(&target).await;
        let (agent, connect_id, mut inbound) = match dial {
            Ok(opened) => opened,
            Err((code, reason, message)) => {
                debug!(code, %message, "dial failed");
                let _ = stream.write_all(&connect::failure(code, reason, &message)).await;
                return;
            }
        };
        self.metrics.connections.inc();
        if stream.write_all(connect::ESTABLISHED).await.is_ok() {
            let (mut read, mut write) = stream.into_split();
            let toward_api_server = async {
                while let Some(chunk) = inbound.recv().await {
                    if write.write_all(&chunk).await.is_err() {
                        break;
                    }
                }
                let _ = write.shutdown().await;
            };
            let toward_agent = async {
                if !early.is_empty() && agent.out.send(Ok(packets::data(connect_id, early))).await.is_err() {
                    return;
                }
                let mut buffer = vec![0u8; 32 * 1024];
                while let Ok(n @ 1..) = read.read(&mut buffer).await {
                    let packet = packets::data(connect_id, buffer[..n].to_vec());
                    if agent.out.send(Ok(packet)).await.is_err() {
                        return;
                    }
                }
            };
            tokio::pin!(toward_api_server);
            tokio::select! {
                // The destination closed (or the agent went): the API server's side ends.
                () = &mut toward_api_server => {}
                // The API server closed: ask the agent to close, and pass on what is still in
                // flight until it confirms (bounded).
                () = toward_agent => {
                    agent.send_control(packets::close_request(connect_id));
                    let _ = tokio::time::timeout(self.settings.dial_timeout, &mut toward_api_server).await;
                }
            }
        }
        if lock(&agent.conns).remove(&connect_id).is_some() {
            agent.send_control(packets::close_request(connect_id));
        }
        self.metrics.connections.dec();
    }

    /// Asks an agent to dial `target`; the failure as status code, reason and message.
    async fn dial(
        &self,
        target: &str,
    ) -> Result<(Arc<Agent>, i64, mpsc::Receiver<Chunk>), (u16, &'static str, String)> {
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        let Some(agent) = pick(&lock(&self.agents), turn) else {
            self.metrics.dials.with_label_values(&["no_agent"]).inc();
            return Err((503, "Service Unavailable", "no agent is connected to the tunnel".into()));
        };
        let random = fastrand::i64(1..);
        let (tx, rx) = oneshot::channel();
        lock(&agent.dials).insert(random, tx);
        if agent.out.send(Ok(packets::dial_request(target, random))).await.is_err() {
            lock(&agent.dials).remove(&random);
            self.metrics.dials.with_label_values(&["no_agent"]).inc();
            return Err((503, "Service Unavailable", "the agent went away".into()));
        }
        match tokio::time::timeout(self.settings.dial_timeout, rx).await {
            Ok(Ok(Ok((connect_id, inbound)))) => {
                self.metrics.dials.with_label_values(&["ok"]).inc();
                Ok((agent, connect_id, inbound))
            }
            Ok(Ok(Err(error))) => {
                self.metrics.dials.with_label_values(&["failed"]).inc();
                Err((502, "Bad Gateway", format!("agent {}: {error}", agent.id)))
            }
            Ok(Err(_)) => {
                self.metrics.dials.with_label_values(&["no_agent"]).inc();
                Err((503, "Service Unavailable", "the agent went away".into()))
            }
            Err(_) => {
                lock(&agent.dials).remove(&random);
                self.metrics.dials.with_label_values(&["timeout"]).inc();
                Err((504, "Gateway Timeout", format!("agent {} did not answer the dial in time", agent.id)))
            }
        }
    }
}

/// Reads the CONNECT head (bounded in size and time): the target and any bytes after the head.
async fn read_head(stream: &mut UnixStream) -> Result<(String, Vec<u8>), String> {
    let mut buffer = Vec::with_capacity(512);
    let read = async {
        loop {
            let mut chunk = [0u8; 1024];
            let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("connection closed before the request head".to_string());
            }
            buffer.extend_from_slice(&chunk[..n]);
            if let Some((target, length)) = connect::parse(&buffer).map_err(|e| e.to_string())? {
                return Ok((target, buffer[length..].to_vec()));
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read).await.map_err(|_| "no request head within 10 s".to_string())?
}

/// `AgentService` for agents: registers the stream and answers with this server's id and count.
#[derive(Debug)]
pub struct AgentEndpoint {
    tunnel: Arc<Tunnel>,
}

#[tonic::async_trait]
impl AgentService for AgentEndpoint {
    type ConnectStream = ReceiverStream<Result<Packet, Status>>;

    async fn connect(&self, request: Request<Streaming<Packet>>) -> Result<Response<Self::ConnectStream>, Status> {
        let ids: Vec<&str> = request.metadata().get_all("agentid").iter().filter_map(|v| v.to_str().ok()).collect();
        let [id] = ids.as_slice() else {
            return Err(Status::invalid_argument(format!("expected one agentID header, got {}", ids.len())));
        };
        let tunnel = &self.tunnel;
        let (out, rx) = mpsc::channel(tunnel.settings.queue);
        let agent = Arc::new(Agent {
            id: id.to_string(),
            serial: tunnel.serial.fetch_add(1, Ordering::Relaxed),
            out,
            dials: Mutex::default(),
            conns: Mutex::default(),
            draining: AtomicBool::new(false),
        });
        info!(agent = %agent.id, "agent connected");
        lock(&tunnel.agents).push(agent.clone());
        tunnel.metrics.agents.set(tunnel.agents() as i64);
        tokio::spawn(tunnel.clone().serve_agent(agent, request.into_inner()));
        let mut response = Response::new(ReceiverStream::new(rx));
        let headers = response.metadata_mut();
        let server_id =
            tunnel.settings.server_id.parse().map_err(|_| Status::internal("server id is not a header value"))?;
        headers.insert("serverid", server_id);
        headers.insert("servercount", tunnel.settings.server_count.into());
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(serial: u64, draining: bool) -> Arc<Agent> {
        let (out, _) = mpsc::channel(1);
        Arc::new(Agent {
            id: format!("a{serial}"),
            serial,
            out,
            dials: Mutex::default(),
            conns: Mutex::default(),
            draining: AtomicBool::new(draining),
        })
    }

    #[test]
    fn dials_go_round_robin_and_draining_agents_only_when_alone() {
        let agents = [agent(0, false), agent(1, true), agent(2, false)];
        let picked: Vec<u64> = (0..4).filter_map(|t| pick(&agents, t)).map(|a| a.serial).collect();
        assert_eq!(picked, [0, 2, 0, 2]);
        let draining = [agent(1, true)];
        assert_eq!(pick(&draining, 5).map(|a| a.serial), Some(1));
        assert!(pick(&[], 0).is_none());
    }
}
