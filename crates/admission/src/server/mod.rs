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
pub mod shared;

pub use register::ClientTarget;
pub use serve::Metrics;
pub use shared::SecretRef;

use crate::review::{Admission, RulesConfig};
use caches::Caches;
use certs::{CertError, CertResolver};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use runtime::Runner;
use serde::{Deserialize, Serialize};
use shared::Issued;
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
    /// The Secret through which all replicas share one CA and serving certificate.
    pub certificate_secret: SecretRef,
    /// A ClusterRole that owns the webhook configurations and the Secret (the deployment's
    /// own, created by its chart): when the deployment is uninstalled, the garbage collector
    /// removes them, so no webhook with `failurePolicy: Fail` is left pointing at nothing.
    #[serde(default)]
    pub owner: Option<String>,
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
    /// A CA of the operator's that signs the serving certificates, instead of one the server
    /// makes (and rotates) itself: for clients that read the CA once, from a file.
    #[serde(default)]
    pub signing_ca: Option<CaFiles>,
}

/// A CA certificate and its key, as files (mounted from a Secret).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaFiles {
    pub cert_file: std::path::PathBuf,
    pub key_file: std::path::PathBuf,
}

impl CaFiles {
    /// Reads and checks both files; the error names the file, never its contents.
    pub fn load(&self) -> Result<certs::SigningCa, CertError> {
        let read = |path: &std::path::Path| {
            std::fs::read_to_string(path).map_err(|source| CertError::ReadFile { path: path.to_path_buf(), source })
        };
        certs::SigningCa::from_pem(&read(&self.cert_file)?, &read(&self.key_file)?)
    }
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
    /// In-cluster defaults for Service `service` in `namespace` (port 443 → 9443): the
    /// certificates in Secret `<service>-tls` there, the webhook configurations named
    /// `gardener-admission`.
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
            certificate_secret: SecretRef { namespace: namespace.into(), name: format!("{service}-tls") },
            owner: None,
            configuration_name: "gardener-admission".into(),
            certificate_validity: Duration::from_secs(90 * 24 * 3600),
            rotation_check_interval: Duration::from_secs(60),
            rules: RulesConfig::default(),
            signing_ca: None,
        }
    }
}

/// Why the webhook server stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("loading the webhook serving certificate")]
    Certificate(#[from] CertError),
    #[error("sharing the webhook certificates")]
    Shared(#[from] shared::SharedError),
    #[error("registering webhook configuration {name}")]
    Register {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("reading ClusterRole {name}, the owner of the webhook configurations")]
    Owner {
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

/// Runs the webhook server on `listener` until `stop` resolves: starts the caches, waits for
/// them, adopts or issues the certificates shared through the Secret, registers the webhook
/// configurations, sets `ready`, serves, and follows the Secret (rotating it when
/// [`certs::needs_rotation`] says so, or adopting another replica's rotation).
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
    let caches = Arc::new(caches);
    let admission = Arc::new(Admission::new(caches.clone(), config.rules.clone()).with_graph(caches));
    let owner = match &config.owner {
        Some(name) => Some(owner_reference(&client, name).await?),
        None => None,
    };
    let signing = config.signing_ca.as_ref().map(CaFiles::load).transpose()?;
    let ensure = || {
        shared::ensure(
            &client,
            &config.certificate_secret,
            owner.as_ref(),
            &config.hosts,
            config.certificate_validity,
            signing.as_ref(),
            OffsetDateTime::now_utc(),
        )
    };
    // Registers the bundle of `issued`, then reads the Secret again: when another replica
    // replaced it meanwhile, registers that one too, so the last registration of every
    // replica carries the newest bundle. Trust first, then serve: the caller swaps the served
    // certificate only after this returns.
    let publish = |mut issued: Issued| {
        let (client, config, ensure, owner) = (client.clone(), config.clone(), ensure, owner.clone());
        async move {
            loop {
                register::register(
                    &client,
                    &config.configuration_name,
                    &config.target,
                    &issued.bundle(),
                    owner.as_ref(),
                )
                .await
                .map_err(|source| ServerError::Register { name: config.configuration_name.clone(), source })?;
                let again = ensure().await?;
                if again.current.cert_der == issued.current.cert_der {
                    return Ok::<_, ServerError>(issued);
                }
                issued = again;
            }
        }
    };
    let mut issued = ensure().await?;
    let resolver = Arc::new(CertResolver::new(&issued.current)?);
    let tls = certs::server_config(resolver.clone())?;
    let server = tokio::spawn(serve::serve(listener, tls, serve::router(admission, metrics), stop.clone()));
    issued = publish(issued).await?;
    resolver.set(&issued.current)?;
    ready.store(true, Ordering::Release);
    tracing::info!(configuration = %config.configuration_name, not_after = issued.current.not_after, "admission webhooks registered and serving");

    let mut tick = tokio::time::interval(config.rotation_check_interval);
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = &mut stop => break,
        }
        // A failed check is retried on the next tick; the current certificate stays valid for
        // a third of its lifetime after rotation is due.
        let next = match ensure().await {
            Ok(next) if next.current.cert_der == issued.current.cert_der => continue,
            Ok(next) => publish(next).await,
            Err(e) => Err(e.into()),
        };
        match next {
            Ok(next) => {
                resolver.set(&next.current)?;
                issued = next;
                tracing::info!(not_after = issued.current.not_after, "admission webhook certificate rotated");
            }
            Err(e) => tracing::warn!(error = %runtime::cli::report(&e), "checking the webhook certificate"),
        }
    }
    server.abort();
    Ok(())
}

/// A (non-controller) owner reference to ClusterRole `name`.
async fn owner_reference(client: &kube::Client, name: &str) -> Result<OwnerReference, ServerError> {
    let role = kube::Api::<ClusterRole>::all(client.clone())
        .get(name)
        .await
        .map_err(|source| ServerError::Owner { name: name.into(), source })?;
    Ok(OwnerReference {
        api_version: "rbac.authorization.k8s.io/v1".into(),
        kind: "ClusterRole".into(),
        name: name.into(),
        uid: role.metadata.uid.unwrap_or_default(),
        ..Default::default()
    })
}

/// Adds the webhook server to `runner` as a server: it runs on every replica, leader or not
/// (a Service routes the API server's calls to any of them), and the replica is ready once it
/// serves with registered webhook configurations. Returns its metrics.
pub fn add_to(runner: &mut Runner, client: kube::Client, config: ServerConfig) -> Result<Metrics, prometheus::Error> {
    let metrics = Metrics::new(runner.registry())?;
    let m = metrics.clone();
    runner.add_server(move |stop, ready| async move {
        let listener = match TcpListener::bind(config.bind_address).await {
            Ok(l) => l,
            Err(source) => {
                let e = ServerError::Bind { addr: config.bind_address, source };
                return tracing::error!(error = %runtime::cli::report(&e), "the admission webhook server stopped");
            }
        };
        if let Err(e) = run(config, client, listener, m, ready, stop).await {
            tracing::error!(error = %runtime::cli::report(&e), "the admission webhook server stopped");
        }
    });
    Ok(metrics)
}
