//! Admission latency per request over HTTPS: the webhook server (rustls, hyper, the real
//! router and rules) on 127.0.0.1, a client that speaks HTTP/1.1 over TLS with keep-alive as
//! the API server does, N AdmissionReviews of a valid Shoot create through the mutating and the
//! validating endpoint; prints the median, p90 and p99 round trip.
//!
//! `cargo bench -p admission --bench latency [-- <requests>] [--full] [--slow <connections>]`
//!
//! The shoot is the plain example (`admission::fixtures::shoot()`, one pool, nothing configured)
//! or, with `--full`, the one with every configuration block set (`fixtures::full_shoot()`: both
//! kubelets, the control plane components, maintenance, hibernation, networks, DNS, ...). Every
//! response must allow the request; a refusal ends the run.
//!
//! With `--slow N`, N slow clients (TLS, then part of a request's headers and nothing more; each
//! reconnects when the server drops it) are held against the server while the keep-alive
//! connection, opened and answered once before them as the API server's pooled one is, is
//! measured; then five requests on new connections, which take the slots of slow clients, are
//! timed too.
//!
//! Under `cargo test`/`nextest` (no `--bench` argument) it is one smoke test of 100 requests per
//! endpoint with the plain shoot and 10 with the full one; asked for its tests (`--list`) it names
//! that one.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code: a panic is the failure report

#[path = "common/args.rs"]
mod args;

use admission::review::{Admission, RulesConfig};
use admission::server::{Metrics, certs, serve};
use api::core::Shoot;
use args::Args;
use axum::body::Body;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

fn review(shoot: &serde_json::Value) -> String {
    admission::fixtures::shoot_create_review(shoot).to_string()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The webhook server's address and a TLS client that trusts its certificate.
#[derive(Clone)]
struct Endpoint {
    addr: SocketAddr,
    connector: TlsConnector,
}

impl Endpoint {
    /// Starts the webhook server on 127.0.0.1 with a certificate issued for that address.
    async fn start() -> Self {
        let adm = Arc::new(Admission::new(Arc::new(admission::fixtures::garden_lookup()), RulesConfig::default()));
        let issued =
            certs::issue(&["127.0.0.1".into()], time::OffsetDateTime::now_utc(), Duration::from_secs(3600)).unwrap();
        let tls = certs::server_config(Arc::new(certs::CertResolver::new(&issued).unwrap())).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = serve::router(adm, Metrics::new(&prometheus::Registry::new()).unwrap());
        tokio::spawn(serve::serve(listener, tls, router, std::future::pending()));

        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from(issued.ca_der.clone())).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Self { addr, connector: TlsConnector::from(Arc::new(client)) }
    }

    /// A new TLS connection.
    async fn connect(&self) -> std::io::Result<TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(self.addr).await?;
        self.connector.connect(ServerName::try_from("127.0.0.1").unwrap(), tcp).await
    }

    /// The measured connection, kept alive as the API server's pooled one (no Nagle delay).
    async fn keep_alive(&self) -> SendRequest<Body> {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let stream = self.connector.connect(ServerName::try_from("127.0.0.1").unwrap(), tcp).await.unwrap();
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(conn);
        sender
    }
}

/// `n` requests (after a tenth more to warm up) of `raw` through the mutating endpoint and of
/// `defaulted` through the validating one; prints the median, p90 and p99 of each. Every response
/// must allow the request.
async fn measure(
    sender: &mut hyper::client::conn::http1::SendRequest<Body>,
    shoot_kind: &str,
    raw: String,
    defaulted: String,
    n: usize,
) {
    for (endpoint, path, body) in [("mutate", "/mutate/shoots", raw), ("validate", "/validate/shoots", defaulted)] {
        let mut samples = Vec::with_capacity(n);
        for i in 0..n + n / 10 {
            let req = http::Request::post(path)
                .header("host", "127.0.0.1")
                .header("content-type", "application/json")
                .body(Body::from(body.clone()))
                .unwrap();
            sender.ready().await.unwrap();
            let start = Instant::now();
            let resp = sender.send_request(req).await.unwrap();
            let bytes = axum::body::to_bytes(Body::new(resp.into_body()), 1 << 20).await.unwrap();
            let elapsed = start.elapsed();
            let parsed: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(parsed["response"]["allowed"], true, "{shoot_kind} shoot, {endpoint}: {parsed}");
            // The first tenth warms up (allocator, caches) and is not counted.
            if i >= n / 10 {
                samples.push(elapsed);
            }
        }
        samples.sort();
        println!(
            "latency {endpoint} ({shoot_kind} shoot, {} bytes): {n} requests over one keep-alive HTTPS connection: median {:?}, p90 {:?}, p99 {:?}",
            body.len(),
            percentile(&samples, 0.5),
            percentile(&samples, 0.9),
            percentile(&samples, 0.99)
        );
    }
}

/// The shoots measured and how many requests each: with `--bench` the plain or (`--full`) the
/// full one; under the smoke test both, the full one with a tenth of the requests.
fn shoots(args: &Args, n: usize) -> Vec<(&'static str, Shoot, usize)> {
    if args.bench() {
        vec![if args.has("--full") {
            ("full", admission::fixtures::full_shoot(), n)
        } else {
            ("plain", admission::fixtures::shoot(), n)
        }]
    } else {
        vec![("plain", admission::fixtures::shoot(), n), ("full", admission::fixtures::full_shoot(), (n / 10).max(1))]
    }
}

/// Holds `slow` slow clients against the server (TLS, then part of a request's headers; each
/// reconnects when the server drops it) until the slots beside the measured connection are full.
async fn hold_slow_clients(endpoint: &Endpoint, slow: usize) {
    let holding = Arc::new(AtomicUsize::new(0));
    for _ in 0..slow {
        let (endpoint, holding) = (endpoint.clone(), holding.clone());
        // Ends with the benchmark's runtime.
        tokio::spawn(async move {
            loop {
                let Ok(mut stream) = endpoint.connect().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                if stream.write_all(b"POST /validate/shoots HTTP/1.1\r\nhost: 127.0.0.1\r\n").await.is_err() {
                    continue;
                }
                holding.fetch_add(1, Ordering::Relaxed);
                let mut buf = [0u8; 1024];
                while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                holding.fetch_sub(1, Ordering::Relaxed);
            }
        });
    }
    // The slots left beside the measured connection are full of slow clients.
    let held = slow.min(serve::MAX_CONNECTIONS - 1);
    while holding.load(Ordering::Relaxed) < held {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("{slow} slow connections opened, {held} of them served (cap {})", serve::MAX_CONNECTIONS);
}

/// One validating request with `body` on a new connection: its round trip from connecting on.
async fn post_on_new_connection(endpoint: &Endpoint, body: String) -> Result<Duration, String> {
    let start = Instant::now();
    let stream = endpoint.connect().await.map_err(|e| e.to_string())?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    validate_once(&mut sender, body).await?;
    Ok(start.elapsed())
}

/// One validating request with `body` on `sender`, which must be allowed; an error when the
/// connection fails.
async fn validate_once(sender: &mut hyper::client::conn::http1::SendRequest<Body>, body: String) -> Result<(), String> {
    let req = http::Request::post("/validate/shoots")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    sender.ready().await.map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let bytes = axum::body::to_bytes(Body::new(resp.into_body()), 1 << 20).await.unwrap();
    let parsed: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(parsed["response"]["allowed"], true, "{parsed}");
    Ok(())
}

/// Five requests on new connections at once while `slow` slow clients are held: each takes the
/// slot of the oldest slow client that has sent no whole request.
async fn measure_new_connections(endpoint: &Endpoint, slow: usize) {
    let body = review(&admission::fuzz::corpus()[0].1);
    let fresh = (0..5).map(|_| {
        // The API server gives up after its webhook timeout (10 s); this waits three times that.
        let request = post_on_new_connection(endpoint, body.clone());
        async move {
            tokio::time::timeout(Duration::from_secs(30), request)
                .await
                .unwrap_or_else(|_| Err("no answer within 30 s".into()))
        }
    });
    let results = futures::future::join_all(fresh).await;
    let mut samples: Vec<Duration> = results.iter().filter_map(|r| r.as_ref().ok().copied()).collect();
    let failed: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    samples.sort();
    println!(
        "latency validate on a new connection while {slow} slow connections are held: {} of 5 answered: median {:?}, max {:?}; failed: {failed:?}",
        samples.len(),
        (!samples.is_empty()).then(|| percentile(&samples, 0.5)),
        samples.last()
    );
}

#[tokio::main]
async fn main() {
    let Some(args) = Args::parse() else { return };
    let slow: usize = args.value("--slow").unwrap_or(0);
    let n: usize = args.size(&["--slow"], 10_000, 100);
    let endpoint = Endpoint::start().await;
    let mut sender = endpoint.keep_alive().await;
    if slow > 0 {
        // A pooled connection has been answered before (the server keeps the slots of those).
        let body = review(&admission::fuzz::corpus()[0].1);
        validate_once(&mut sender, body).await.unwrap();
        hold_slow_clients(&endpoint, slow).await;
    }
    // The mutating webhook gets the shoot as the user wrote it; the validating one after the
    // defaults were applied, as the API server orders them.
    for (shoot_kind, shoot, n) in shoots(&args, n) {
        let raw = review(&serde_json::to_value(&shoot).unwrap());
        let defaulted = review(&serde_json::to_value(admission::fixtures::defaulted(shoot)).unwrap());
        measure(&mut sender, shoot_kind, raw, defaulted, n).await;
    }
    if slow > 0 {
        measure_new_connections(&endpoint, slow).await;
    }
}
