//! The process around extension controllers: HTTP endpoints, leader election (only the leader
//! runs controllers and tasks; losing the lease stops them and ends [`Runner::run`] with
//! [`RunnerError::LostLeadership`], so the process restarts with fresh caches), the heartbeat
//! Lease, and graceful shutdown.

pub mod heartbeat;
pub mod http;
pub mod leader;

pub use leader::{LeaderElectionConfig, LeaderElector};

use crate::metrics::Metrics;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use http::Readiness;
use kube::Client;
use prometheus::Registry;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// Resolves when the runner stops its controllers and tasks. Cheap to clone.
#[derive(Clone)]
pub struct Stop(Shared<futures::channel::oneshot::Receiver<()>>);

impl std::fmt::Debug for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Stop")
    }
}

impl Future for Stop {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

/// A controller the [`Runner`] runs while this instance leads: it returns when `stop`
/// resolves and sets `ready` once its caches have synced (extension-sdk's
/// `ExtensionController` is one).
pub trait Controller: Send + 'static {
    /// Runs until `stop` resolves.
    fn run_with_ready(self, stop: Stop, ready: Arc<AtomicBool>) -> BoxFuture<'static, ()>;
}

/// A stop signal and the handle that fires it (dropping the handle fires it too).
pub fn stop_signal() -> (futures::channel::oneshot::Sender<()>, Stop) {
    let (tx, rx) = futures::channel::oneshot::channel();
    (tx, Stop(rx.shared()))
}

/// Process settings.
#[derive(Clone, Debug)]
pub struct RunnerConfig {
    /// The extension's name (heartbeat holder, metrics prefix source).
    pub name: String,
    /// Namespace of the leader and heartbeat Leases.
    pub namespace: String,
    /// Where to serve `/healthz`, `/readyz`, `/metrics`; nothing is served when `None` (unless a
    /// listener is given with [`Runner::with_listener`]).
    pub http_addr: Option<SocketAddr>,
    /// Leader election; without it this instance always runs its controllers.
    pub leader_election: Option<LeaderElectionConfig>,
    /// Heartbeat renewal interval; no heartbeat when `None`.
    pub heartbeat_interval: Option<Duration>,
    /// Prefix of metric names.
    pub metrics_prefix: String,
    /// How long to wait for controllers to finish running reconciles when stopping.
    pub shutdown_grace: Duration,
}

impl RunnerConfig {
    /// Defaults: metrics on 0.0.0.0:8080, heartbeat every 30 s, no leader election.
    pub fn new(name: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            namespace: namespace.into(),
            http_addr: Some(SocketAddr::from(([0, 0, 0, 0], 8080))),
            leader_election: None,
            heartbeat_interval: Some(heartbeat::HEARTBEAT_INTERVAL),
            metrics_prefix: "extension".into(),
            shutdown_grace: Duration::from_secs(30),
        }
    }

    /// Enables leader election on the Lease `lease_name` with this instance's identity.
    pub fn leader_election(mut self, config: LeaderElectionConfig) -> Self {
        self.leader_election = Some(config);
        self
    }
}

/// Why the runner stopped other than by shutdown.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("lost leadership: {0}")]
    LostLeadership(String),
    #[error("invalid runner configuration: {0}")]
    Config(String),
    #[error("registering metrics")]
    Metrics(#[source] prometheus::Error),
    #[error("serving HTTP on {addr}")]
    Http {
        addr: String,
        #[source]
        source: std::io::Error,
    },
}

type Task = Box<dyn FnOnce(Stop, Arc<AtomicBool>) -> BoxFuture<'static, ()> + Send>;

/// Runs controllers and tasks under one process's HTTP server, leader election and heartbeat.
pub struct Runner {
    client: Client,
    config: RunnerConfig,
    metrics: Metrics,
    listener: Option<tokio::net::TcpListener>,
    tasks: Vec<Task>,
    servers: Vec<Task>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("config", &self.config)
            .field("tasks", &self.tasks.len())
            .field("servers", &self.servers.len())
            .finish()
    }
}

impl Runner {
    pub fn new(client: Client, config: RunnerConfig) -> Result<Self, RunnerError> {
        if let Some(le) = &config.leader_election {
            le.validate().map_err(RunnerError::Config)?;
        }
        let metrics = Metrics::new(&Registry::new(), &config.metrics_prefix).map_err(RunnerError::Metrics)?;
        Ok(Self { client, config, metrics, listener: None, tasks: Vec::new(), servers: Vec::new() })
    }

    /// Serves HTTP on an already bound listener (e.g. port 0 in tests) instead of `http_addr`.
    pub fn with_listener(mut self, listener: tokio::net::TcpListener) -> Self {
        self.listener = Some(listener);
        self
    }

    /// The process's metrics; pass them to every controller.
    pub fn metrics(&self) -> Metrics {
        self.metrics.clone()
    }

    /// The process's registry (add your own collectors).
    pub fn registry(&self) -> &Registry {
        self.metrics.registry()
    }

    /// Adds a controller; it runs while this instance leads.
    pub fn add_controller<C: Controller>(&mut self, controller: C) {
        self.tasks.push(Box::new(move |stop, ready| controller.run_with_ready(stop, ready)));
    }

    /// Adds a task (for example a health checker) that runs while this instance leads and
    /// returns when `Stop` resolves.
    pub fn add_task<F, Fut>(&mut self, task: F)
    where
        F: FnOnce(Stop) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.tasks.push(Box::new(move |stop, ready| {
            ready.store(true, Ordering::Release);
            task(stop).boxed()
        }));
    }

    /// Adds a task that reports its own readiness: it gets the flag that `/readyz` reads and
    /// sets it once its caches have synced.
    pub fn add_task_with_readiness<F, Fut>(&mut self, task: F)
    where
        F: FnOnce(Stop, Arc<AtomicBool>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.tasks.push(Box::new(move |stop, ready| task(stop, ready).boxed()));
    }

    /// Adds a server (for example admission webhooks) that runs on every replica, leader or
    /// not, from start until shutdown, so that a Service can route to any of them. It gets the
    /// flag `/readyz` reads and sets it once it serves; a replica is ready only when all its
    /// servers are.
    pub fn add_server<F, Fut>(&mut self, server: F)
    where
        F: FnOnce(Stop, Arc<AtomicBool>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.servers.push(Box::new(move |stop, ready| server(stop, ready).boxed()));
    }

    /// Runs until SIGTERM or Ctrl+C.
    pub async fn run_until_signal(self) -> Result<(), RunnerError> {
        self.run(shutdown_signal()).await
    }

    /// Runs until `shutdown` resolves (then stops gracefully and releases the leader lease), or
    /// until leadership is lost.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), RunnerError> {
        let Self { client, config, metrics, listener, tasks, servers } = self;
        let mut shutdown = std::pin::pin!(shutdown);
        let leader = Arc::new(AtomicBool::new(config.leader_election.is_none()));
        let flags: Vec<Arc<AtomicBool>> = tasks.iter().map(|_| Arc::new(AtomicBool::new(false))).collect();
        let server_flags: Vec<Arc<AtomicBool>> = servers.iter().map(|_| Arc::new(AtomicBool::new(false))).collect();
        let readiness = Readiness { caches: flags.clone(), leader: leader.clone(), servers: server_flags.clone() };

        let (http_stop, http_stopped) = stop_signal();
        let listener = match (listener, config.http_addr) {
            (Some(l), _) => Some(l),
            (None, Some(addr)) => Some(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|source| RunnerError::Http { addr: addr.to_string(), source })?,
            ),
            (None, None) => None,
        };
        let (servers_stop, servers_stopped) = stop_signal();
        let servers: Vec<_> = servers
            .into_iter()
            .zip(server_flags)
            .map(|(server, flag)| tokio::spawn(server(servers_stopped.clone(), flag)))
            .collect();
        // Servers stop last: after the controllers and the lease release, before HTTP.
        let stop_servers = |grace| async move {
            drop(servers_stop);
            if tokio::time::timeout(grace, futures::future::join_all(servers)).await.is_err() {
                tracing::warn!(?grace, "servers did not stop in time");
            }
        };
        let http = listener.map(|l| {
            let registry = metrics.registry().clone();
            tokio::spawn(async move {
                if let Err(e) = http::serve(l, registry, readiness, http_stopped).await {
                    tracing::error!(error = %crate::events::error_chain(&e), "HTTP server failed");
                }
            })
        });

        let mut elector = match config.leader_election.clone() {
            Some(c) => Some(LeaderElector::new(client.clone(), c).map_err(RunnerError::Config)?),
            None => None,
        };
        if let Some(e) = elector.as_mut() {
            tokio::select! {
                _ = e.acquire() => leader.store(true, Ordering::Release),
                _ = &mut shutdown => {
                    stop_servers(config.shutdown_grace).await;
                    drop(http_stop);
                    if let Some(h) = http { let _ = h.await; }
                    return Ok(());
                }
            }
        }

        let (stop_tx, stop) = stop_signal();
        let mut handles: Vec<_> =
            tasks.into_iter().zip(flags).map(|(task, flag)| tokio::spawn(task(stop.clone(), flag))).collect();
        if let Some(interval) = config.heartbeat_interval {
            handles.push(tokio::spawn(heartbeat::run(
                client.clone(),
                config.namespace.clone(),
                config.name.clone(),
                interval,
                stop.clone(),
            )));
        }

        let result = match elector.as_mut() {
            Some(e) => tokio::select! {
                _ = &mut shutdown => Ok(()),
                reason = e.hold() => Err(RunnerError::LostLeadership(reason)),
            },
            None => {
                shutdown.await;
                Ok(())
            }
        };
        if let Err(e) = &result {
            tracing::error!(error = %crate::events::error_chain(e), "stopping all controllers");
        }
        leader.store(false, Ordering::Release);
        drop(stop_tx);
        if tokio::time::timeout(config.shutdown_grace, futures::future::join_all(handles)).await.is_err() {
            tracing::warn!(grace = ?config.shutdown_grace, "controllers did not stop in time");
        }
        if result.is_ok()
            && let Some(e) = elector.as_mut()
            && let Err(err) = e.release().await
        {
            tracing::warn!(error = %crate::events::error_chain(&err), "releasing the leader lease");
        }
        stop_servers(config.shutdown_grace).await;
        drop(http_stop);
        if let Some(h) = http {
            let _ = h.await;
        }
        result
    }
}

/// Resolves on SIGTERM or Ctrl+C.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
