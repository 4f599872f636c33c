//! Clients for shoot API servers.
//!
//! gardenlet talks to hundreds of shoot API servers, each a little and then not for a while
//! (a care tick a minute, a reconcile an hour). `kube::Client::try_from` keeps every
//! connection it opened until the next request finds it expired: its pool has no timer, so a
//! client kept for the care loop holds one idle TLS connection per shoot for as long as it is
//! kept (about 70 KiB each: rustls and hyper buffers, the connection task). The client built
//! here has the same layers (base URI, authentication) on a pool that closes a connection
//! after [`IDLE`] without a request, and bounds every request by a total timeout instead of
//! kube's per-read one of five minutes: a shoot API server that hangs must not hold up the
//! care tick or the flow task that asked it.

use super::context::OperationContext;
use kube::client::ConfigExt;
use std::time::Duration;

/// How long a connection to a shoot API server stays open without a request. Long enough for
/// the handful of requests one care check or one flow task makes in a row, far shorter than
/// the care period.
pub const IDLE: Duration = Duration::from_secs(5);

/// How long opening a TCP connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why no client could be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("the admin kubeconfig is not valid")]
    Kubeconfig(#[source] kube::config::KubeconfigError),
    #[error("the TLS or authentication settings of the kubeconfig are not usable")]
    Settings(#[source] kube::Error),
    #[error("the kubeconfig's tls-server-name {name:?} is not a server name: {reason}")]
    ServerName { name: String, reason: String },
}

/// A client from kubeconfig text (gardenlet's admin kubeconfig of the shoot), each request
/// bounded by `timeout`.
pub async fn from_kubeconfig(text: &str, timeout: Duration) -> Result<kube::Client, ClientError> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(text).map_err(ClientError::Kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.map_err(ClientError::Kubeconfig)?;
    build(&config, timeout)
}

/// A client for a shoot's API server from the admin kubeconfig gardenlet keeps in the shoot's
/// seed namespace (`namespace`); the error names the Secret.
pub async fn from_admin_secret(
    seed: &kube::Client,
    namespace: &str,
    timeout: Duration,
) -> Result<kube::Client, String> {
    use k8s_openapi::api::core::v1::Secret;
    let name = pki::shoot_set::names::KUBECONFIG_ADMIN;
    let secret = kube::Api::<Secret>::namespaced(seed.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| format!("reading Secret {namespace}/{name}: {e}"))?
        .ok_or_else(|| format!("Secret {namespace}/{name} does not exist"))?;
    let text = secret
        .data
        .as_ref()
        .and_then(|d| d.get(pki::data_keys::KUBECONFIG))
        .and_then(|v| String::from_utf8(v.0.clone()).ok())
        .ok_or_else(|| format!("Secret {namespace}/{name} has no kubeconfig"))?;
    from_kubeconfig(&text, timeout)
        .await
        .map_err(|e| format!("Secret {namespace}/{name}: {}", runtime::events::error_chain(&e)))
}

/// A client for `config` whose idle connections close after [`IDLE`].
pub fn build(config: &kube::Config, timeout: Duration) -> Result<kube::Client, ClientError> {
    pooled(config, timeout, IDLE)
}

fn pooled(config: &kube::Config, timeout: Duration, idle: Duration) -> Result<kube::Client, ClientError> {
    use hyper_util::client::legacy::connect::HttpConnector;
    use hyper_util::rt::{TokioExecutor, TokioTimer};
    use tower::ServiceBuilder;

    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
    let mut tls = config.rustls_client_config().map_err(ClientError::Settings)?;
    // A client talks to one server: a session store for one server name (eight tickets), not
    // rustls' default for 32, which is allocated up front (about 16 KiB per client).
    tls.resumption = rustls::client::Resumption::in_memory_sessions(8);
    let mut https = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = rustls::pki_types::ServerName::try_from(name.clone())
            .map_err(|e| ClientError::ServerName { name: name.clone(), reason: e.to_string() })?;
        https = https.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
    }
    let https = https.enable_http1().wrap_connector(http);
    let pool = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(idle)
        .pool_max_idle_per_host(2)
        .build::<_, kube::client::Body>(https);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer().map_err(ClientError::Settings)?)
        .timeout(timeout)
        .service(pool);
    Ok(kube::Client::new(service, config.default_namespace.clone()))
}

/// A client for the shoot's API from the admin kubeconfig gardenlet generated; a request to it
/// may take [`SHOOT_REQUEST_TIMEOUT`] (a list of every Secret of the shoot included).
pub async fn shoot_client(ctx: &OperationContext) -> Result<kube::Client, crate::flow::TaskError> {
    let text = super::context::secret_value(ctx, pki::shoot_set::names::KUBECONFIG_ADMIN, pki::data_keys::KUBECONFIG)?;
    from_kubeconfig(&text, SHOOT_REQUEST_TIMEOUT).await.map_err(|e| crate::flow::TaskError::new(&e))
}

/// How long one request of a flow task to the shoot's API server may take.
pub const SHOOT_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;

    #[tokio::test]
    async fn a_kubeconfig_without_a_cluster_is_refused_by_name() {
        let Err(err) = from_kubeconfig("apiVersion: v1\nkind: Config\n", Duration::from_secs(1)).await else {
            panic!("a kubeconfig without a cluster gave a client")
        };
        assert!(matches!(err, ClientError::Kubeconfig(_)), "{err:?}");
        assert_eq!(err.to_string(), "the admin kubeconfig is not valid");
    }

    #[tokio::test]
    async fn a_request_to_a_server_that_never_answers_ends_at_the_timeout() {
        // A listener that accepts and then says nothing: the request must end, not hang.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let _server = tokio::spawn(async move {
            let mut kept = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                kept.push(socket);
            }
        });
        let config = kube::Config::new(format!("http://{address}").parse().unwrap());
        let client = build(&config, Duration::from_millis(300)).unwrap();
        let request = http::Request::get("/readyz").body(Vec::new()).unwrap();
        let err = client.request_text(request).await.unwrap_err();
        assert!(err.to_string().contains("timed out"), "{err}");
    }

    #[tokio::test]
    async fn an_idle_connection_is_closed_while_the_client_is_kept() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
        let _server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = socket.read(&mut buf).await.unwrap();
            assert!(buf[..n].starts_with(b"GET /readyz"), "{:?}", String::from_utf8_lossy(&buf[..n]));
            socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await.unwrap();
            // The client keeps the connection for reuse; it must close it on its own.
            let eof = socket.read(&mut buf).await.unwrap() == 0;
            let _ = closed_tx.send(eof);
        });
        let config = kube::Config::new(format!("http://{address}").parse().unwrap());
        let client = pooled(&config, Duration::from_secs(5), Duration::from_millis(200)).unwrap();
        let request = http::Request::get("/readyz").body(Vec::new()).unwrap();
        assert_eq!(client.request_text(request).await.unwrap(), "ok");
        let closed = tokio::time::timeout(Duration::from_secs(10), closed_rx).await;
        assert!(matches!(closed, Ok(Ok(true))), "the idle connection was not closed: {closed:?}");
        drop(client);
    }
}
