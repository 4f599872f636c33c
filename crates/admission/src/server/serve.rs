//! HTTPS for the AdmissionReview endpoints: a TLS accept loop (rustls, certificate from the
//! swappable resolver) handing each connection to hyper with the axum router.
//!
//! The API server calls these endpoints with `failurePolicy: Fail`, so a server starved by slow
//! or greedy clients refuses every matched request in the garden. The server bounds what one
//! client can hold ([`Limits`]): the TLS handshake, the request headers and the request body each
//! have a deadline, the body a size, and the number of connections served at once a cap.

use crate::review::{Admission, Endpoint};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http::StatusCode;
use http::header::CONTENT_TYPE;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

/// How long a client may take for its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's headers, counted from the end of the TLS
/// handshake or of the previous response (so it also closes keep-alive connections idle that
/// long). The API server sends a webhook request's headers at once; a client trickling them
/// (slowloris) holds a connection slot no longer than this. It is the webhooks' `timeoutSeconds`
/// (10): the API server never waits longer for an answer.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request may take from its headers until its body is read (and answered): the API
/// server gives up on a webhook call after its `timeoutSeconds` (10) anyway, and a client
/// trickling its body holds a connection slot no longer than this. Answered with 408.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How many connections are served at once. Each kube-apiserver replica keeps a few pooled
/// connections and opens more under load, so a few hundred leave room for every replica and its
/// bursts, while bounding what slow clients can hold (and the memory: at most this many bodies of
/// [`MAX_BODY`] buffered). A connection beyond it takes the slot of the oldest connection that
/// has not sent a whole request yet and is older than a second (a slow or idle client; the API
/// server sends its request right after the handshake), which is closed; while there is none,
/// the new one waits in the listen backlog until a slot frees.
pub const MAX_CONNECTIONS: usize = 256;
/// The largest AdmissionReview accepted: the API server's own request limit is 3 MiB, and an
/// UPDATE's review carries the old and the new object. Applied to the router as axum's body
/// limit (its default is 2 MiB); a larger body is answered with 413.
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// What one client may hold of the server. The defaults are the production constants; tests
/// shorten the timeouts and lower the cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// See [`HANDSHAKE_TIMEOUT`].
    pub handshake_timeout: Duration,
    /// See [`HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// See [`BODY_READ_TIMEOUT`].
    pub body_read_timeout: Duration,
    /// See [`MAX_CONNECTIONS`].
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            handshake_timeout: HANDSHAKE_TIMEOUT,
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_read_timeout: BODY_READ_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

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

/// The status and message for a body that could not be read: over [`MAX_BODY`] (413, which the
/// API server reports as a failed call of the webhook, refusing the request), or broken off.
fn unreadable(rejection: &BytesRejection) -> (StatusCode, String) {
    match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body larger than {MAX_BODY} bytes (the API server's own request limit)"),
        ),
        status => (status, rejection.body_text()),
    }
}

/// The metrics label of `endpoint`.
fn endpoint_label(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Mutate => "mutate",
        Endpoint::Validate => "validate",
    }
}

async fn answer(
    admission: Arc<Admission>,
    metrics: Metrics,
    endpoint: Endpoint,
    resource: &'static str,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let start = Instant::now();
    let ep = endpoint_label(endpoint);
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let (status, message) = unreadable(&rejection);
            tracing::info!(endpoint = ep, resource, %status, %message, "webhook request body not read");
            metrics.requests.with_label_values(&[ep, resource, "false"]).inc();
            return (status, message).into_response();
        }
    };
    match resource {
        "pods" => namespace_seen(&admission, &body).await,
        "managedseeds" => shoot_seen(&admission, &body).await,
        _ => {}
    }
    let (response, allowed) = admission.review_bytes(endpoint, resource, &body);
    metrics.requests.with_label_values(&[ep, resource, if allowed { "true" } else { "false" }]).inc();
    metrics.duration.with_label_values(&[ep, resource]).observe(start.elapsed().as_secs_f64());
    ([(CONTENT_TYPE, "application/json")], response).into_response()
}

/// How long a Pod's review waits for its namespace to reach the namespace cache.
pub const NAMESPACE_WAIT: Duration = Duration::from_secs(2);

/// A Pod is judged at its namespace's level, read from the namespace watch; a namespace created
/// a moment before its first Pod may not have reached the cache yet. Waits for it (at most
/// [`NAMESPACE_WAIT`]); a namespace still unknown then is judged `restricted`
/// ([`crate::podsecurity`]).
async fn namespace_seen(admission: &Admission, body: &[u8]) {
    #[derive(serde::Deserialize)]
    struct Review {
        request: Option<Namespaced>,
    }
    #[derive(serde::Deserialize)]
    struct Namespaced {
        namespace: Option<String>,
    }
    let Some(namespace) = serde_json::from_slice::<Review>(body).ok().and_then(|r| r.request?.namespace) else {
        return;
    };
    until_cached(|| admission.lookup().namespace(&namespace).is_some()).await;
}

/// Waits until `cached` holds (an object a review needs has reached its watch-fed cache), at
/// most [`NAMESPACE_WAIT`].
async fn until_cached(cached: impl Fn() -> bool) {
    let deadline = Instant::now() + NAMESPACE_WAIT;
    while !cached() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A ManagedSeed is applied together with its Shoot (`example/managedseed.yaml`), so the Shoot
/// may not have reached the shoot cache when the ManagedSeed's review asks for it. Waits for it
/// (at most [`NAMESPACE_WAIT`]); a shoot still unknown then is reported as not found.
async fn shoot_seen(admission: &Admission, body: &[u8]) {
    let Ok(review) = serde_json::from_slice::<serde_json::Value>(body) else { return };
    let request = &review["request"];
    let namespace = request["namespace"].as_str().unwrap_or_default();
    let Some(shoot) = request.pointer("/object/spec/shoot/name").and_then(|n| n.as_str()) else { return };
    if request["operation"] != "CREATE" {
        return;
    }
    until_cached(|| admission.lookup().shoot(namespace, shoot).is_some()).await;
}

async fn convert(metrics: Metrics, body: Result<Bytes, BytesRejection>) -> Response {
    let start = Instant::now();
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let (status, message) = unreadable(&rejection);
            tracing::info!(%status, %message, "conversion request body not read");
            metrics.requests.with_label_values(&["convert", "controllerdeployments", "false"]).inc();
            return (status, message).into_response();
        }
    };
    let (response, ok) = crate::conversion::review_bytes(&body);
    metrics.requests.with_label_values(&["convert", "controllerdeployments", if ok { "true" } else { "false" }]).inc();
    metrics.duration.with_label_values(&["convert", "controllerdeployments"]).observe(start.elapsed().as_secs_f64());
    ([(CONTENT_TYPE, "application/json")], response).into_response()
}

/// The seed authorizer: a SubjectAccessReview answered from the relations in the caches
/// ([`crate::seedauth`]). Metrics under endpoint `authorize`, `allowed` as answered.
async fn authorize(admission: Arc<Admission>, metrics: Metrics, body: Result<Bytes, BytesRejection>) -> Response {
    let start = Instant::now();
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let (status, message) = unreadable(&rejection);
            tracing::info!(%status, %message, "authorization request body not read");
            metrics.requests.with_label_values(&["authorize", "", "false"]).inc();
            return (status, message).into_response();
        }
    };
    let span = tracing::debug_span!("seed_authorizer");
    let outcome = span.in_scope(|| crate::seedauth::sar::review_bytes(admission.graph(), &body));
    if let (Some(seed), false) = (&outcome.seed, outcome.allowed) {
        tracing::info!(seed, resource = %outcome.resource, reason = %outcome.reason, "seed request left without opinion");
    }
    // The resource label only for seeds' requests (the API server asks about every user's).
    let resource = if outcome.seed.is_some() { outcome.resource.as_str() } else { "" };
    let allowed = if outcome.allowed { "true" } else { "false" };
    metrics.requests.with_label_values(&["authorize", resource, allowed]).inc();
    metrics.duration.with_label_values(&["authorize", resource]).observe(start.elapsed().as_secs_f64());
    ([(CONTENT_TYPE, "application/json")], outcome.body).into_response()
}

/// The routes: `POST /mutate/<resource>`, `POST /validate/<resource>`, the CRD conversion
/// webhook `POST /convert` and the seed authorizer `POST /webhooks/auth/seed`, reading bodies of
/// up to [`MAX_BODY`].
pub fn router(admission: Arc<Admission>, metrics: Metrics) -> Router {
    let m = metrics.clone();
    let mut router = Router::new()
        .route(api::core::v1::CONVERSION_PATH, post(move |body: Result<Bytes, BytesRejection>| convert(m, body)));
    let (a, m) = (admission.clone(), metrics.clone());
    router =
        router.route(crate::seedauth::PATH, post(move |body: Result<Bytes, BytesRejection>| authorize(a, m, body)));
    // Resources judged only by SeedRestriction (seeds' creates).
    for (_, resource) in crate::review::kinds::restricted_only() {
        let (a, m) = (admission.clone(), metrics.clone());
        router = router.route(
            &format!("/validate/{resource}"),
            post(move |body: Result<Bytes, BytesRejection>| answer(a, m, Endpoint::Validate, resource, body)),
        );
    }
    for (endpoint, prefix, resources) in [
        (Endpoint::Mutate, "mutate", crate::review::kinds::MUTATED),
        (Endpoint::Validate, "validate", crate::review::kinds::VALIDATED),
    ] {
        for resource in resources.iter().copied() {
            let (a, m) = (admission.clone(), metrics.clone());
            router = router.route(
                &format!("/{prefix}/{resource}"),
                post(move |body: Result<Bytes, BytesRejection>| answer(a, m, endpoint, resource, body)),
            );
        }
    }
    router.layer(DefaultBodyLimit::max(MAX_BODY))
}

/// Answers 408 when the request (its body, above all) is not read and answered within
/// `timeout`.
async fn within(State(timeout): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::info!(?timeout, "webhook request body not received in time");
            (StatusCode::REQUEST_TIMEOUT, format!("request body not received within {timeout:?}")).into_response()
        }
    }
}

/// Serves `router` over TLS on `listener` with the default [`Limits`] until `stop` resolves.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    stop: impl Future<Output = ()>,
) {
    serve_with(listener, tls, router, Limits::default(), stop).await;
}

/// What the accept loop knows of an open connection.
#[derive(Clone, Debug)]
struct Open {
    accepted: Instant,
    /// Set when its first request's headers have arrived.
    answered: Arc<AtomicBool>,
    /// Closes it.
    close: Arc<Notify>,
}

/// The open connections, by accept order.
#[derive(Default)]
struct Connections {
    next: AtomicU64,
    open: Mutex<BTreeMap<u64, Open>>,
}

impl Connections {
    fn add(self: &Arc<Self>) -> (Registered, Open) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let open = Open { accepted: Instant::now(), answered: Arc::default(), close: Arc::default() };
        self.lock().insert(id, open.clone());
        (Registered { id, connections: self.clone() }, open)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the connection [`evictee`] names; false when there is none.
    fn evict_one(&self) -> bool {
        let open = self.lock();
        let candidates = open.iter().map(|(id, o)| (*id, o.accepted, o.answered.load(Ordering::Relaxed)));
        match evictee(candidates, Instant::now()).and_then(|id| open.get(&id)) {
            Some(o) => {
                // Marked so that it is not chosen again while it closes.
                o.answered.store(true, Ordering::Relaxed);
                o.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Removes its connection from [`Connections`] when the connection ends.
struct Registered {
    id: u64,
    connections: Arc<Connections>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.connections.lock().remove(&self.id);
    }
}

/// How long a connection keeps its slot at least, request or not: a client gets this long to
/// send its request (the API server sends it at once), and clients that reconnect as soon as
/// they are closed turn every slot over at most once per this time, which bounds the TLS
/// handshakes they cost the server.
const MIN_HOLD: Duration = Duration::from_secs(1);

/// Which connection gives its slot to a new one when the cap is reached (`(id, accepted,
/// answered)`): the oldest of those that have not sent a whole request and were accepted at
/// least [`MIN_HOLD`] before `now`; none when there is no such connection.
fn evictee(connections: impl Iterator<Item = (u64, Instant, bool)>, now: Instant) -> Option<u64> {
    connections
        .filter(|(_, accepted, answered)| !answered && now.saturating_duration_since(*accepted) >= MIN_HOLD)
        .min_by_key(|(id, accepted, _)| (*accepted, *id))
        .map(|(id, ..)| id)
}

/// How often a connection waiting beyond the cap looks again for a connection to close.
const EVICTION_RETRY: Duration = Duration::from_millis(100);

/// Serves `router` over TLS on `listener` within `limits` until `stop` resolves. At most
/// `limits.max_connections` connections are served; one beyond takes the slot of [`evictee`],
/// else it waits until a slot frees.
pub async fn serve_with(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    limits: Limits,
    stop: impl Future<Output = ()>,
) {
    let acceptor = TlsAcceptor::from(tls);
    let router = router.layer(axum::middleware::from_fn_with_state(limits.body_read_timeout, within));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let connections = Arc::new(Connections::default());
    // Whether the last connection found the cap reached: the warning is logged once per time the
    // cap is reached, not for every connection while it stays reached.
    let mut capped = false;
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
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => {
                capped = false;
                slot
            }
            Err(_) => {
                let mut evicted = connections.evict_one();
                if !std::mem::replace(&mut capped, true) {
                    tracing::warn!(
                        limit = limits.max_connections,
                        "webhook connection limit reached: new connections take the slots of connections that sent no request, or wait"
                    );
                }
                tracing::debug!(%peer, evicted, "webhook connection beyond the limit");
                loop {
                    tokio::select! {
                        slot = slots.clone().acquire_owned() => match slot {
                            Ok(slot) => break slot,
                            // The semaphore is never closed.
                            Err(e) => return tracing::error!(error = %e, "webhook connection slots closed"),
                        },
                        // A connection may have become old enough to give its slot.
                        () = tokio::time::sleep(EVICTION_RETRY), if !evicted => evicted = connections.evict_one(),
                        () = &mut stop => return,
                    }
                }
            }
        };
        let (registered, open) = connections.add();
        tokio::spawn(connection(
            Accepted { tcp, peer, slot, registered, open },
            acceptor.clone(),
            http.clone(),
            router.clone(),
            limits.handshake_timeout,
        ));
    }
}

/// An accepted connection with its slot and its entry among the open connections (both given
/// back when it ends).
struct Accepted {
    tcp: TcpStream,
    peer: SocketAddr,
    slot: OwnedSemaphorePermit,
    registered: Registered,
    open: Open,
}

/// One connection: the TLS handshake within `handshake_timeout`, then HTTP/1.1 until the client
/// or a timeout ends it, or the accept loop closes it for a new connection.
async fn connection(
    accepted: Accepted,
    acceptor: TlsAcceptor,
    http: hyper::server::conn::http1::Builder,
    router: Router,
    handshake_timeout: Duration,
) {
    use tower::ServiceExt;
    let Accepted { tcp, peer, slot: _slot, registered: _registered, open } = accepted;
    let serve = async {
        let tls = match tokio::time::timeout(handshake_timeout, acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => return tracing::debug!(%peer, error = %e, "TLS handshake failed"),
            Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
        };
        let answered = open.answered.clone();
        let router = router.map_request(move |request: http::Request<hyper::body::Incoming>| {
            answered.store(true, Ordering::Relaxed);
            request
        });
        let service = TowerToHyperService::new(router);
        if let Err(e) = http.serve_connection(TokioIo::new(tls), service).await {
            tracing::debug!(%peer, error = %e, "webhook connection ended with an error");
        }
    };
    tokio::select! {
        () = serve => {}
        () = open.close.notified() => tracing::debug!(%peer, "webhook connection closed for a new one (no request sent)"),
    }
}

#[cfg(test)]
mod tests;
