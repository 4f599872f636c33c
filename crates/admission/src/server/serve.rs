//! HTTPS for the AdmissionReview endpoints: a TLS accept loop (rustls, certificate from the
//! swappable resolver) handing each connection to hyper with the axum router.

use crate::review::{Admission, Endpoint};
use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use http::header::CONTENT_TYPE;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// How long a client may take for its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest AdmissionReview accepted (the API server's own request limit is 3 MiB).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// Request counters and latencies, registered in the process's registry.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// `gardener_admission_requests_total{endpoint, resource, allowed}`
    pub requests: IntCounterVec,
    /// `gardener_admission_request_duration_seconds{endpoint, resource}`
    pub duration: HistogramVec,
}

impl Metrics {
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let requests = IntCounterVec::new(
            Opts::new("gardener_admission_requests_total", "Admission requests answered"),
            &["endpoint", "resource", "allowed"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new("gardener_admission_request_duration_seconds", "Time to answer an admission request")
                .buckets(vec![0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5]),
            &["endpoint", "resource"],
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        Ok(Self { requests, duration })
    }
}

async fn answer(
    admission: Arc<Admission>,
    metrics: Metrics,
    endpoint: Endpoint,
    resource: &'static str,
    body: Bytes,
) -> impl axum::response::IntoResponse {
    let start = Instant::now();
    let (response, allowed) = if body.len() > MAX_BODY {
        (admission.review_bytes(endpoint, resource, b"{}").0, false)
    } else {
        admission.review_bytes(endpoint, resource, &body)
    };
    let ep = match endpoint {
        Endpoint::Mutate => "mutate",
        Endpoint::Validate => "validate",
    };
    metrics.requests.with_label_values(&[ep, resource, if allowed { "true" } else { "false" }]).inc();
    metrics.duration.with_label_values(&[ep, resource]).observe(start.elapsed().as_secs_f64());
    ([(CONTENT_TYPE, "application/json")], response)
}

async fn convert(metrics: Metrics, body: Bytes) -> impl axum::response::IntoResponse {
    let start = Instant::now();
    let (response, ok) = if body.len() > MAX_BODY {
        crate::conversion::review_bytes(b"{}")
    } else {
        crate::conversion::review_bytes(&body)
    };
    metrics.requests.with_label_values(&["convert", "controllerdeployments", if ok { "true" } else { "false" }]).inc();
    metrics.duration.with_label_values(&["convert", "controllerdeployments"]).observe(start.elapsed().as_secs_f64());
    ([(CONTENT_TYPE, "application/json")], response)
}

/// The routes: `POST /mutate/<resource>`, `POST /validate/<resource>` and the CRD conversion
/// webhook `POST /convert`.
pub fn router(admission: Arc<Admission>, metrics: Metrics) -> Router {
    let m = metrics.clone();
    let mut router = Router::new().route(api::core::v1::CONVERSION_PATH, post(move |body: Bytes| convert(m, body)));
    for (endpoint, prefix, resources) in [
        (Endpoint::Mutate, "mutate", crate::review::kinds::MUTATED),
        (Endpoint::Validate, "validate", crate::review::kinds::VALIDATED),
    ] {
        for resource in resources.iter().copied() {
            let (a, m) = (admission.clone(), metrics.clone());
            router = router.route(
                &format!("/{prefix}/{resource}"),
                post(move |body: Bytes| answer(a, m, endpoint, resource, body)),
            );
        }
    }
    router
}

/// Serves `router` over TLS on `listener` until `stop` resolves.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    stop: impl Future<Output = ()>,
) {
    let acceptor = TlsAcceptor::from(tls);
    let mut stop = std::pin::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a webhook connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => return,
        };
        let (acceptor, router) = (acceptor.clone(), router.clone());
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => return tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
            };
            let service = TowerToHyperService::new(router);
            if let Err(e) =
                hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await
            {
                tracing::debug!(%peer, error = %e, "webhook connection ended with an error");
            }
        });
    }
}
