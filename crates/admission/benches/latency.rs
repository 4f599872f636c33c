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
//! connection, opened before them as the API server's pooled one is, is measured; then five
//! requests on new connections, which wait for a connection slot, are timed too.
//!
//! Under `cargo test`/`nextest` (no `--bench` argument) it is one smoke test of 100 requests per
//! endpoint with the plain shoot and 10 with the full one; asked for its tests (`--list`) it names
//! that one.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code: a panic is the failure report

use admission::review::{Admission, RulesConfig};
use admission::server::{Metrics, certs, serve};
use axum::body::Body;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn review(shoot: &serde_json::Value) -> String {
    admission::fixtures::shoot_create_review(shoot).to_string()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
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

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--list") {
        if !has("--ignored") {
            println!("smoke: test");
        }
        return;
    }
    let default = if has("--bench") { 10_000 } else { 100 };
    let slow: usize = args.iter().position(|a| a == "--slow").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(0);
    let n: usize = args
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(i, _)| args[i - 1] != "--slow")
        .find_map(|(_, a)| a.parse().ok())
        .unwrap_or(default);
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
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let stream = connector.connect(ServerName::try_from("127.0.0.1").unwrap(), tcp).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let connect = {
        let connector = connector.clone();
        move || {
            let connector = connector.clone();
            async move {
                let tcp = tokio::net::TcpStream::connect(addr).await?;
                connector.connect(ServerName::try_from("127.0.0.1").unwrap(), tcp).await
            }
        }
    };
    if slow > 0 {
        let holding = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for _ in 0..slow {
            let (connect, holding) = (connect.clone(), holding.clone());
            // Ends with the benchmark's runtime.
            tokio::spawn(async move {
                loop {
                    let Ok(mut stream) = connect().await else {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    if stream.write_all(b"POST /validate/shoots HTTP/1.1\r\nhost: 127.0.0.1\r\n").await.is_err() {
                        continue;
                    }
                    holding.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let mut buf = [0u8; 1024];
                    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                    holding.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
        // The slots left beside the measured connection are full of slow clients.
        let held = slow.min(serve::MAX_CONNECTIONS - 1);
        while holding.load(std::sync::atomic::Ordering::Relaxed) < held {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        println!("{slow} slow connections opened, {held} of them served (cap {})", serve::MAX_CONNECTIONS);
    }

    // The mutating webhook gets the shoot as the user wrote it; the validating one after the
    // defaults were applied, as the API server orders them. Under the smoke test both shoots,
    // the full one with a tenth of the requests.
    let bench = has("--bench");
    let shoots = if bench {
        vec![if has("--full") {
            ("full", admission::fixtures::full_shoot(), n)
        } else {
            ("plain", admission::fixtures::shoot(), n)
        }]
    } else {
        vec![("plain", admission::fixtures::shoot(), n), ("full", admission::fixtures::full_shoot(), (n / 10).max(1))]
    };
    for (shoot_kind, shoot, n) in shoots {
        let raw = review(&serde_json::to_value(&shoot).unwrap());
        let defaulted = review(&serde_json::to_value(admission::fixtures::defaulted(shoot)).unwrap());
        measure(&mut sender, shoot_kind, raw, defaulted, n).await;
    }
    if slow > 0 {
        // Five requests on new connections at once: each waits for a slot the header timeout
        // frees.
        let body = review(&admission::fuzz::corpus()[0].1);
        let fresh = (0..5).map(|_| {
            let (connect, body) = (connect.clone(), body.clone());
            let request = async move {
                let start = Instant::now();
                let stream = connect().await.map_err(|e| e.to_string())?;
                let (mut sender, conn) =
                    hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
                tokio::spawn(conn);
                let req = http::Request::post("/validate/shoots")
                    .header("host", "127.0.0.1")
                    .header("content-type", "application/json")
                    .body(Body::from(body))
                    .unwrap();
                let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
                let bytes = axum::body::to_bytes(Body::new(resp.into_body()), 1 << 20).await.unwrap();
                let parsed: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(parsed["response"]["allowed"], true, "{parsed}");
                Ok::<_, String>(start.elapsed())
            };
            // The API server gives up after its webhook timeout (10 s); this waits three times that.
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
}
