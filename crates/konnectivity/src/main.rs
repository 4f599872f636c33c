//! `konnectivity`: the proxy server beside a shoot's kube-apiserver (`server`) and the agent in
//! the shoot (`agent`). See the library's documentation.

use clap::{Parser, Subcommand};
use konnectivity::{agent, server};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, Server, ServerTlsConfig};

#[derive(Parser, Debug)]
#[command(name = "konnectivity", version, about = "The tunnel from a kube-apiserver to its cluster's nodes and pods")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log level filter (RUST_LOG syntax).
    #[arg(long, global = true, default_value = "info")]
    log_level: String,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The proxy server: agents connect with mutual TLS; the API server sends HTTP CONNECT
    /// requests on a Unix socket (its `EgressSelectorConfiguration`, `proxyProtocol: HTTPConnect`).
    Server {
        /// The API server's socket (created; a stale one is replaced).
        #[arg(long)]
        uds_name: PathBuf,
        /// Where agents connect.
        #[arg(long, default_value = "0.0.0.0:8132")]
        agent_bind: SocketAddr,
        /// The agent port's serving certificate and key, and the CA agents' certificates are
        /// checked against (PEM files).
        #[arg(long)]
        cluster_cert: PathBuf,
        #[arg(long)]
        cluster_key: PathBuf,
        #[arg(long)]
        cluster_ca_cert: PathBuf,
        /// This server's id (default: the host name, i.e. the Pod's name).
        #[arg(long, env = "POD_NAME")]
        server_id: Option<String>,
        /// Servers behind the agents' address (one per API server replica).
        #[arg(long, default_value_t = 1)]
        server_count: u32,
        #[arg(long, default_value_t = 10)]
        dial_timeout_seconds: u64,
        /// Address of /healthz, /readyz and /metrics.
        #[arg(long, default_value = "0.0.0.0:8092")]
        health_bind: SocketAddr,
    },
    /// The agent: dials the server, then opens the connections it is asked for.
    Agent {
        /// The server's host name (also the name its certificate is checked for) and port.
        #[arg(long)]
        proxy_server_host: String,
        #[arg(long, default_value_t = 8132)]
        proxy_server_port: u16,
        /// The server's CA, and the agent's client certificate and key (PEM files).
        #[arg(long)]
        ca_cert: PathBuf,
        #[arg(long)]
        agent_cert: PathBuf,
        #[arg(long)]
        agent_key: PathBuf,
        /// This agent's id (default: the host name, i.e. the Pod's name).
        #[arg(long, env = "POD_NAME")]
        agent_id: Option<String>,
        /// Networks the agent may dial (repeat or comma-separate); nothing else is dialed.
        #[arg(long = "allowed-cidr", value_delimiter = ',', required = true)]
        allowed: Vec<ipnet::IpNet>,
        /// A kubeconfig for the cluster: the agent watches its Nodes and may also dial their
        /// addresses.
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Address of /healthz, /readyz and /metrics.
        #[arg(long, default_value = "0.0.0.0:8093")]
        health_bind: SocketAddr,
    },
}

#[derive(Debug, thiserror::Error)]
enum MainError {
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("binding {what}")]
    Bind {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS or endpoint configuration")]
    Tls(#[from] tonic::transport::Error),
    #[error(transparent)]
    Metrics(#[from] prometheus::Error),
    #[error(transparent)]
    Client(#[from] runtime::cli::ClientError),
    #[error("waiting for SIGTERM")]
    Signal(#[source] std::io::Error),
}

fn read(path: &Path) -> Result<String, MainError> {
    std::fs::read_to_string(path).map_err(|source| MainError::Read { path: path.to_path_buf(), source })
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "konnectivity".into())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    runtime::cli::init_logging(&cli.log_level, runtime::cli::LogFormat::Text);
    runtime::cli::block_on(run(cli.command))
}

async fn bind(address: SocketAddr) -> Result<tokio::net::TcpListener, MainError> {
    tokio::net::TcpListener::bind(address).await.map_err(|source| MainError::Bind { what: address.to_string(), source })
}

/// Serves /healthz, /readyz (ready while `ready` is set) and /metrics.
async fn health(address: SocketAddr, registry: prometheus::Registry, ready: Arc<AtomicBool>) -> Result<(), MainError> {
    let listener = bind(address).await?;
    let readiness = runtime::runner::http::Readiness {
        caches: Vec::new(),
        leader: Arc::new(AtomicBool::new(true)),
        servers: vec![ready],
    };
    tokio::spawn(runtime::runner::http::serve(listener, registry, readiness, std::future::pending()));
    Ok(())
}

async fn sigterm() -> Result<(), MainError> {
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(MainError::Signal)?;
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}

async fn run(command: Command) -> Result<(), MainError> {
    let registry = prometheus::Registry::new();
    match command {
        Command::Server {
            uds_name,
            agent_bind,
            cluster_cert,
            cluster_key,
            cluster_ca_cert,
            server_id,
            server_count,
            dial_timeout_seconds,
            health_bind,
        } => {
            let tls = ServerTlsConfig::new()
                .identity(Identity::from_pem(read(&cluster_cert)?, read(&cluster_key)?))
                .client_ca_root(Certificate::from_pem(read(&cluster_ca_cert)?));
            let settings = server::Settings {
                server_id: server_id.unwrap_or_else(host_name),
                server_count,
                dial_timeout: Duration::from_secs(dial_timeout_seconds),
                ..server::Settings::default()
            };
            let tunnel = server::Tunnel::new(settings, &registry)?;
            let _ = std::fs::remove_file(&uds_name);
            let socket = tokio::net::UnixListener::bind(&uds_name)
                .map_err(|source| MainError::Bind { what: uds_name.display().to_string(), source })?;
            let agents = bind(agent_bind).await?;
            health(health_bind, registry, Arc::new(AtomicBool::new(true))).await?;
            tracing::info!(socket = %uds_name.display(), agents = %agent_bind, "serving");
            let (stop, stopped) = tokio::sync::watch::channel(false);
            let wait = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
                let _ = rx.wait_for(|s| *s).await;
            };
            let grpc = Server::builder()
                .tls_config(tls)?
                .http2_keepalive_interval(Some(Duration::from_secs(30)))
                .http2_keepalive_timeout(Some(Duration::from_secs(10)))
                .initial_connection_window_size(Some(4 << 20))
                .initial_stream_window_size(Some(2 << 20))
                .add_service(tunnel.agent_service())
                .serve_with_incoming_shutdown(TcpListenerStream::new(agents), wait(stopped.clone()));
            let api_server = tokio::spawn(tunnel.clone().serve_api_server(socket, wait(stopped)));
            tokio::select! {
                result = grpc => result?,
                result = sigterm() => result?,
            }
            let _ = stop.send(true);
            let _ = api_server.await;
            Ok(())
        }
        Command::Agent {
            proxy_server_host,
            proxy_server_port,
            ca_cert,
            agent_cert,
            agent_key,
            agent_id,
            allowed,
            kubeconfig,
            health_bind,
        } => {
            let tls = ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(read(&ca_cert)?))
                .identity(Identity::from_pem(read(&agent_cert)?, read(&agent_key)?))
                .domain_name(proxy_server_host.clone());
            let endpoint = Endpoint::from_shared(format!("https://{proxy_server_host}:{proxy_server_port}"))?
                .tls_config(tls)?
                .connect_timeout(Duration::from_secs(10))
                .http2_keep_alive_interval(Duration::from_secs(30))
                .keep_alive_timeout(Duration::from_secs(10))
                .keep_alive_while_idle(true)
                .initial_connection_window_size(Some(4 << 20))
                .initial_stream_window_size(Some(2 << 20));
            let nodes = match kubeconfig {
                Some(path) => {
                    let client = runtime::cli::client(Some(&path)).await?;
                    let (nodes, watch) = konnectivity::nodes::NodeAddresses::watch(client);
                    tokio::spawn(watch);
                    Some(nodes)
                }
                None => None,
            };
            let settings = agent::Settings {
                agent_id: agent_id.unwrap_or_else(host_name),
                allowed,
                nodes,
                ..agent::Settings::default()
            };
            let agent = agent::Agent::new(endpoint, settings, &registry)?;
            health(health_bind, registry, agent.connected()).await?;
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let running = tokio::spawn(agent.run(async move {
                let _ = stopped.await;
            }));
            sigterm().await?;
            let _ = stop.send(());
            let _ = running.await;
            Ok(())
        }
    }
}
