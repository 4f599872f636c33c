//! The webhook server: caches for the lookups, its own CA and serving certificate, the webhook
//! configurations registered with that CA, HTTPS serving, and rotation of the certificate before
//! it expires (new CA and certificate; the configurations trust old and new CA while the swap
//! happens; the listener keeps running).
//!
//! Entry points: [`add_to`] for a process built on the SDK's runner (the controller-manager),
//! [`run`] to run until a stop signal with an already bound listener (tests).

pub mod caches;
pub mod certs;
pub mod rbac;
pub mod register;
pub mod serve;

pub use register::ClientTarget;
pub use serve::Metrics;

use crate::review::{Admission, RulesConfig};
use caches::Caches;
use certs::{CertError, CertResolver, ServingCerts, needs_rotation};
use extension_sdk::Runner;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use time::OffsetDateTime;
use tokio::net::TcpListener;

/// Settings of the webhook server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerConfig {
    /// Where to listen (HTTPS).
    pub bind_address: SocketAddr,
    /// How the API server reaches this server.
    pub target: ClientTarget,
    /// DNS names and IP addresses in the serving certificate.
    pub hosts: Vec<String>,
    /// Name of the Mutating- and ValidatingWebhookConfiguration.
    pub configuration_name: String,
    /// Lifetime of the CA and serving certificate; they are replaced after two thirds of it.
    #[serde(with = "seconds")]
    pub certificate_validity: Duration,
    /// How often the certificate's age is checked.
    #[serde(with = "seconds")]
    pub rotation_check_interval: Duration,
    #[serde(default)]
    pub rules: RulesConfig,
}

mod seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_secs)
    }
}

impl ServerConfig {
    /// In-cluster defaults: Service `gardener-admission` in `garden`, port 443 → 9443.
    pub fn in_cluster(namespace: &str, service: &str) -> Self {
        Self {
            bind_address: SocketAddr::from(([0, 0, 0, 0], 9443)),
            target: ClientTarget::Service { namespace: namespace.into(), name: service.into(), port: 443 },
            hosts: vec![
                service.to_string(),
                format!("{service}.{namespace}"),
                format!("{service}.{namespace}.svc"),
                format!("{service}.{namespace}.svc.cluster.local"),
            ],
            configuration_name: "gardener-admission".into(),
            certificate_validity: Duration::from_secs(90 * 24 * 3600),
            rotation_check_interval: Duration::from_secs(60),
            rules: RulesConfig::default(),
        }
    }
}

/// Why the webhook server stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("creating the webhook serving certificate")]
    Certificate(#[from] CertError),
    #[error("registering webhook configuration {name}")]
    Register {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("listening on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// The state that rotation replaces: the current certificates and the previous CA.
#[derive(Debug)]
struct Issued {
    current: ServingCerts,
    previous_ca: Option<String>,
}

impl Issued {
    fn bundle(&self) -> String {
        let mut b = self.current.ca_pem.clone();
        if let Some(prev) = &self.previous_ca {
            b.push_str(prev);
        }
        b
    }
}

fn unix_now() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

/// Runs the webhook server on `listener` until `stop` resolves: starts the caches, waits for
/// them, issues certificates, registers the webhook configurations, sets `ready`, serves, and
/// rotates the certificate when [`needs_rotation`] says so.
pub async fn run(
    config: ServerConfig,
    client: kube::Client,
    listener: TcpListener,
    metrics: Metrics,
    ready: Arc<AtomicBool>,
    stop: impl Future<Output = ()> + Send + Clone + 'static,
) -> Result<(), ServerError> {
    let caches = Caches::start(&client, stop.clone());
    tokio::select! {
        () = caches.synced() => {}
        () = stop.clone() => return Ok(()),
    }
    let admission = Arc::new(Admission::new(Arc::new(caches), config.rules.clone()));
    let mut issued = Issued {
        current: certs::issue(&config.hosts, OffsetDateTime::now_utc(), config.certificate_validity)?,
        previous_ca: None,
    };
    let resolver = Arc::new(CertResolver::new(&issued.current)?);
    let tls = certs::server_config(resolver.clone())?;
    let register = |bundle: String| {
        let (client, config) = (client.clone(), config.clone());
        async move {
            register::register(&client, &config.configuration_name, &config.target, &bundle)
                .await
                .map_err(|source| ServerError::Register { name: config.configuration_name.clone(), source })
        }
    };
    let server = tokio::spawn(serve::serve(listener, tls, serve::router(admission, metrics), stop.clone()));
    register(issued.bundle()).await?;
    ready.store(true, Ordering::Release);
    tracing::info!(configuration = %config.configuration_name, not_after = issued.current.not_after, "admission webhooks registered and serving");

    let mut tick = tokio::time::interval(config.rotation_check_interval);
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = &mut stop => break,
        }
        if !needs_rotation(issued.current.not_before, issued.current.not_after, unix_now()) {
            continue;
        }
        let next = certs::issue(&config.hosts, OffsetDateTime::now_utc(), config.certificate_validity)?;
        let rotated = Issued { previous_ca: Some(issued.current.ca_pem.clone()), current: next };
        // Trust first, then serve: the API server must accept the new certificate before
        // any handshake presents it.
        register(rotated.bundle()).await?;
        resolver.set(&rotated.current)?;
        issued = rotated;
        tracing::info!(not_after = issued.current.not_after, "admission webhook certificate rotated");
    }
    server.abort();
    Ok(())
}

/// Adds the webhook server to `runner` as a task (it serves while the runner runs it; its
/// readiness is the runner's `/readyz` flag for this task). Returns its metrics.
pub fn add_to(runner: &mut Runner, client: kube::Client, config: ServerConfig) -> Result<Metrics, prometheus::Error> {
    let metrics = Metrics::new(runner.registry())?;
    let m = metrics.clone();
    runner.add_task_with_readiness(move |stop, ready| async move {
        let listener = match TcpListener::bind(config.bind_address).await {
            Ok(l) => l,
            Err(source) => {
                let e = ServerError::Bind { addr: config.bind_address, source };
                return tracing::error!(error = %extension_sdk::cli::report(&e), "the admission webhook server stopped");
            }
        };
        if let Err(e) = run(config, client, listener, m, ready, stop).await {
            tracing::error!(error = %extension_sdk::cli::report(&e), "the admission webhook server stopped");
        }
    });
    Ok(metrics)
}
