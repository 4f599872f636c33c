//! The webhook server on 127.0.0.1 over TLS, as the API server reaches it: body size, header and
//! body deadlines, and the connection cap, each with the real accept loop, hyper and router.
//! Timeouts are shortened through [`Limits`]; assertions are on outcomes (answered, refused,
//! disconnected), with only generous bounds on time so a slow machine does not fail them.

use super::*;
use crate::review::RulesConfig;
use crate::server::certs;
use axum::body::Body;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// An upper bound for what should take well under a second; only reached when the behaviour
/// under test is missing.
const GENEROUS: Duration = Duration::from_secs(30);
/// The start of a request whose headers never end.
const PARTIAL_HEADERS: &[u8] =
    b"POST /validate/shoots HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n";

/// The server running on an ephemeral port of 127.0.0.1 (until the test's runtime ends), and a
/// client configuration trusting its CA.
struct Server {
    addr: SocketAddr,
    connector: TlsConnector,
}

async fn start(limits: Limits) -> Server {
    let admission = Arc::new(Admission::new(Arc::new(crate::fixtures::garden_lookup()), RulesConfig::default()));
    let issued =
        certs::issue(&["127.0.0.1".into()], time::OffsetDateTime::now_utc(), Duration::from_secs(3600)).unwrap();
    let tls = certs::server_config(Arc::new(certs::CertResolver::new(&issued).unwrap())).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = router(admission, Metrics::new(&Registry::new()).unwrap());
    tokio::spawn(serve_with(listener, tls, router, limits, std::future::pending()));

    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(issued.ca_der.clone())).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Server { addr, connector: TlsConnector::from(Arc::new(client)) }
}

impl Server {
    /// A new TLS connection (waits while the server does not accept it).
    async fn connect(&self) -> TlsStream<TcpStream> {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        self.connector.connect(ServerName::try_from("127.0.0.1").unwrap(), tcp).await.unwrap()
    }

    /// POSTs `body` to `path` on a new connection; the status and the response body.
    async fn post(&self, path: &str, body: Vec<u8>) -> (StatusCode, Bytes) {
        let stream = self.connect().await;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(conn);
        let response = sender.send_request(post_request(path, body)).await.unwrap();
        let status = response.status();
        (status, axum::body::to_bytes(Body::new(response.into_body()), usize::MAX).await.unwrap())
    }
}

/// A POST of `body` to `path`, as the API server sends a review.
fn post_request(path: &str, body: Vec<u8>) -> http::Request<Body> {
    http::Request::post(path)
        .header("host", "127.0.0.1")
        .header(CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap()
}

/// A client connection kept open after its first request.
struct KeepAlive {
    sender: hyper::client::conn::http1::SendRequest<Body>,
}

impl KeepAlive {
    /// A valid review with `uid` on this connection; the status.
    async fn request(&mut self, uid: &str) -> StatusCode {
        let request = post_request("/validate/shoots", review(uid, "CREATE", &defaulted_shoot(), None));
        let response = tokio::time::timeout(GENEROUS, self.sender.send_request(request)).await.unwrap().unwrap();
        let status = response.status();
        axum::body::to_bytes(Body::new(response.into_body()), usize::MAX).await.unwrap();
        status
    }
}

impl Server {
    /// A new connection that sends one valid review with `uid` and stays open; the status.
    async fn keep_alive(&self, uid: &str) -> (KeepAlive, StatusCode) {
        let stream = self.connect().await;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(conn);
        let mut client = KeepAlive { sender };
        let status = client.request(uid).await;
        (client, status)
    }
}

/// Reads until the server ends the connection (EOF, or an error such as a missing TLS
/// close_notify); what was read before. Panics when it is still open after [`GENEROUS`].
async fn until_closed(stream: &mut TlsStream<TcpStream>) -> Vec<u8> {
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(GENEROUS, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return read,
            Ok(Ok(n)) => read.extend_from_slice(&buf[..n]),
            Err(_) => panic!("the server kept the connection open for {GENEROUS:?}"),
        }
    }
}

/// An AdmissionReview v1 of `object` for the shoots endpoints.
fn review(uid: &str, operation: &str, object: &Value, old_object: Option<&Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": uid, "kind": {"group": "core.gardener.cloud", "version": "v1beta1", "kind": "Shoot"},
                    "resource": {"group": "core.gardener.cloud", "version": "v1beta1", "resource": "shoots"},
                    "name": "demo", "namespace": "garden-dev", "operation": operation,
                    "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
                    "object": object, "oldObject": old_object, "dryRun": false}
    }))
    .unwrap()
}

/// The defaulted example Shoot, as the validating webhook sees it.
fn defaulted_shoot() -> Value {
    crate::fuzz::corpus().swap_remove(0).1
}

/// The `response` of an AdmissionReview answer.
fn response(body: &[u8]) -> Value {
    let review: Value = serde_json::from_slice(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    assert_eq!(review["kind"], "AdmissionReview", "{review}");
    review["response"].clone()
}

#[test]
fn limits_default_to_the_production_constants() {
    let limits = Limits::default();
    assert_eq!(limits.handshake_timeout, HANDSHAKE_TIMEOUT);
    assert_eq!(limits.header_read_timeout, HEADER_READ_TIMEOUT);
    assert_eq!(limits.body_read_timeout, BODY_READ_TIMEOUT);
    assert_eq!(limits.max_connections, MAX_CONNECTIONS);
    assert_eq!(MAX_BODY, 3 * 1024 * 1024);
}

/// An UPDATE's review carries old and new object; one of 2.5 MiB (over axum's 2 MiB default
/// limit, under the API server's 3 MiB) is reviewed and admitted, not refused with 413.
#[tokio::test]
async fn a_review_of_two_and_a_half_mib_is_answered() {
    let server = start(Limits::default()).await;
    let mut shoot = defaulted_shoot();
    // Large objects are large mostly through managedFields, which the API server sends along.
    let padding = "x".repeat(1280 * 1024);
    shoot["metadata"]["managedFields"] = json!([{
        "manager": "padding", "operation": "Update", "apiVersion": "core.gardener.cloud/v1beta1",
        "fieldsType": "FieldsV1", "fieldsV1": {format!("f:{padding}"): {}}
    }]);
    let body = review("2c7e5a10", "UPDATE", &shoot, Some(&shoot));
    assert!((2_500_000..MAX_BODY).contains(&body.len()), "{} bytes", body.len());

    let (status, answer) = server.post("/validate/shoots", body).await;

    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer));
    let response = response(&answer);
    assert_eq!(response["uid"], "2c7e5a10", "{response}");
    assert_eq!(response["allowed"], true, "{response}");
}

/// A body over [`MAX_BODY`] is not reviewed: 413 with a message naming the limit, which the API
/// server reports as a failed webhook call (refusing the request, as `failurePolicy: Fail`).
#[tokio::test]
async fn a_body_over_max_body_is_refused_with_413() {
    let server = start(Limits::default()).await;
    // One byte over, so the server reads the whole body before answering (a longer one is cut
    // off unread, and the client may see a reset instead of the answer).
    let (status, answer) = server.post("/validate/shoots", vec![b' '; MAX_BODY + 1]).await;

    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let message = String::from_utf8_lossy(&answer);
    assert!(message.contains(&MAX_BODY.to_string()), "{message}");
}

/// A client sending part of its headers and then nothing (slowloris) is disconnected after the
/// header read timeout.
#[tokio::test]
async fn a_client_sending_part_of_its_headers_is_disconnected() {
    let server = start(Limits { header_read_timeout: Duration::from_millis(300), ..Limits::default() }).await;
    let mut stream = server.connect().await;
    stream.write_all(PARTIAL_HEADERS).await.unwrap();
    stream.flush().await.unwrap();

    let read = until_closed(&mut stream).await;
    // hyper closes without an answer, or with a 408 at most.
    assert!(read.is_empty() || read.starts_with(b"HTTP/1.1 408"), "{}", String::from_utf8_lossy(&read));
}

/// A client that sends its headers but trickles (here: stops) its body gets 408 after the body
/// read timeout, and the connection ends.
#[tokio::test]
async fn a_client_not_sending_its_body_gets_408() {
    let server = start(Limits { body_read_timeout: Duration::from_millis(300), ..Limits::default() }).await;
    let mut stream = server.connect().await;
    stream.write_all(PARTIAL_HEADERS).await.unwrap();
    stream.write_all(b"content-length: 1000\r\n\r\n{\"apiVersion\":").await.unwrap();
    stream.flush().await.unwrap();

    let read = until_closed(&mut stream).await;
    let answer = String::from_utf8_lossy(&read);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

/// While more slow clients than the connection cap hold connections with partial headers, a
/// valid review still gets its answer: each new connection takes the slot of the oldest slow
/// one, and the slow ones are disconnected after the header timeout anyway.
#[tokio::test]
async fn a_valid_review_is_answered_while_slow_clients_fill_the_connection_cap() {
    const SLOW: usize = 50;
    const CAP: usize = 20;
    let limits = Limits { header_read_timeout: Duration::from_millis(500), max_connections: CAP, ..Limits::default() };
    let server = Arc::new(start(limits).await);
    let (holding, mut held) = tokio::sync::mpsc::unbounded_channel();
    let mut slow = tokio::task::JoinSet::new();
    for _ in 0..SLOW {
        let (server, holding) = (server.clone(), holding.clone());
        slow.spawn(async move {
            // A slow client may be closed for a newer connection before its handshake ends.
            let tcp = TcpStream::connect(server.addr).await.unwrap();
            let name = ServerName::try_from("127.0.0.1").unwrap();
            let Ok(mut stream) = server.connector.connect(name, tcp).await else { return };
            if stream.write_all(PARTIAL_HEADERS).await.is_ok() && stream.flush().await.is_ok() {
                let _ = holding.send(());
                until_closed(&mut stream).await;
            }
        });
    }
    // The cap is full of slow clients (some more were closed for newer ones).
    for _ in 0..CAP {
        held.recv().await.unwrap();
    }

    let body = review("5f0b2e61", "CREATE", &defaulted_shoot(), None);
    let (status, answer) = tokio::time::timeout(GENEROUS, server.post("/validate/shoots", body))
        .await
        .expect("the valid review was not answered while slow clients held the connections");

    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer));
    let response = response(&answer);
    assert_eq!(response["uid"], "5f0b2e61", "{response}");
    assert_eq!(response["allowed"], true, "{response}");
    // Every slow client was disconnected (`until_closed` panics otherwise).
    while let Some(done) = slow.join_next().await {
        done.unwrap();
    }
}

/// Keep-alive connections that were answered keep their slots: a connection beyond the cap is
/// not served (here: not even its TLS handshake) until one of them ends; then it is.
#[tokio::test]
async fn a_connection_beyond_the_cap_waits_while_every_slot_was_answered() {
    let server = start(Limits { max_connections: 2, ..Limits::default() }).await;
    let (first, first_status) = server.keep_alive("3a1f").await;
    let (_second, second_status) = server.keep_alive("3a20").await;
    assert_eq!((first_status, second_status), (StatusCode::OK, StatusCode::OK));

    let third = server.post("/validate/shoots", review("8d3c", "CREATE", &defaulted_shoot(), None));
    let mut third = std::pin::pin!(third);
    // Not answered while both slots are held (a bounded look, not a measurement: the handshake
    // would take milliseconds if the connection were accepted).
    assert!(tokio::time::timeout(Duration::from_millis(500), &mut third).await.is_err(), "served beyond the cap");
    drop(first);
    let (status, answer) = tokio::time::timeout(GENEROUS, third).await.expect("not served after a slot freed");

    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer));
    assert_eq!(response(&answer)["uid"], "8d3c");
}

/// With the cap full of connections that sent no whole request (their header deadline far
/// away), a new connection takes the slot of the oldest of them, which is closed; an answered
/// keep-alive connection keeps its slot and is answered again afterwards.
#[tokio::test]
async fn a_new_connection_takes_the_slot_of_the_oldest_that_sent_no_request() {
    let limits = Limits { header_read_timeout: Duration::from_secs(300), max_connections: 3, ..Limits::default() };
    let server = start(limits).await;
    let (mut kept, status) = server.keep_alive("51c0").await;
    assert_eq!(status, StatusCode::OK);
    let mut oldest = server.connect().await;
    oldest.write_all(PARTIAL_HEADERS).await.unwrap();
    // The second one is younger: the accept order decides (the sleep only orders the two).
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut younger = server.connect().await;
    younger.write_all(PARTIAL_HEADERS).await.unwrap();

    let body = review("7e41", "CREATE", &defaulted_shoot(), None);
    let (status, answer) = tokio::time::timeout(GENEROUS, server.post("/validate/shoots", body))
        .await
        .expect("the new connection waited although a slot was held by a client that sent no request");
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer));
    assert_eq!(response(&answer)["uid"], "7e41");

    // The oldest slow client was closed (`until_closed` panics otherwise), with no answer.
    assert!(until_closed(&mut oldest).await.is_empty(), "the evicted client got an answer");
    // The younger one still waits for the rest of its headers: nothing comes back yet.
    let mut buf = [0u8; 64];
    assert!(
        tokio::time::timeout(Duration::from_millis(300), younger.read(&mut buf)).await.is_err(),
        "the younger slow client was closed too"
    );
    // The answered connection was left alone.
    assert_eq!(kept.request("51c1").await, StatusCode::OK);
}

#[test]
fn the_oldest_connection_without_a_request_is_chosen_once_it_had_its_second() {
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    let now = at(5000);
    assert_eq!(evictee([(1, at(0), true), (2, at(5), false), (3, at(9), false)].into_iter(), now), Some(2));
    assert_eq!(evictee([(7, at(3), false), (4, at(3), false)].into_iter(), now), Some(4), "same instant: accept order");
    assert_eq!(evictee([(1, at(0), true), (2, at(1), true)].into_iter(), now), None, "every one answered");
    assert_eq!(evictee([(1, at(4500), false)].into_iter(), now), None, "younger than MIN_HOLD");
    assert_eq!(evictee([(1, at(4000), false)].into_iter(), now), Some(1), "exactly MIN_HOLD old");
    assert_eq!(evictee(std::iter::empty(), now), None);
}

/// A lookup whose namespaces and shoots appear only `delay` after it was made: a watch that lags
/// behind a namespace created just before its first Pod, or a Shoot applied together with its
/// ManagedSeed.
struct Late {
    inner: crate::review::StaticLookup,
    since: Instant,
    delay: Duration,
}

impl crate::review::Lookup for Late {
    fn cloud_profile(&self, name: &str) -> Option<Arc<api::core::CloudProfile>> {
        self.inner.cloud_profile(name)
    }
    fn namespaced_cloud_profile(&self, ns: &str, name: &str) -> Option<Arc<api::core::NamespacedCloudProfile>> {
        self.inner.namespaced_cloud_profile(ns, name)
    }
    fn seed(&self, name: &str) -> Option<Arc<api::core::Seed>> {
        self.inner.seed(name)
    }
    fn shoot(&self, ns: &str, name: &str) -> Option<Arc<api::core::Shoot>> {
        (self.since.elapsed() >= self.delay).then(|| self.inner.shoot(ns, name)).flatten()
    }
    fn shoots(&self) -> Vec<Arc<api::core::Shoot>> {
        self.inner.shoots()
    }
    fn projects(&self) -> Vec<Arc<api::core::Project>> {
        self.inner.projects()
    }
    fn secret_binding(&self, ns: &str, name: &str) -> Option<Arc<api::core::SecretBinding>> {
        self.inner.secret_binding(ns, name)
    }
    fn credentials_binding(&self, ns: &str, name: &str) -> Option<Arc<api::security::CredentialsBinding>> {
        self.inner.credentials_binding(ns, name)
    }
    fn quota(&self, ns: &str, name: &str) -> Option<Arc<api::core::Quota>> {
        self.inner.quota(ns, name)
    }
    fn exposure_class(&self, name: &str) -> Option<Arc<api::core::ExposureClass>> {
        self.inner.exposure_class(name)
    }
    fn managed_seeds(&self) -> Vec<Arc<api::seedmanagement::ManagedSeed>> {
        self.inner.managed_seeds()
    }
    fn controller_registrations(&self) -> Vec<Arc<api::core::ControllerRegistration>> {
        self.inner.controller_registrations()
    }
    fn namespace(&self, name: &str) -> Option<Arc<k8s_openapi::api::core::v1::Namespace>> {
        (self.since.elapsed() >= self.delay).then(|| self.inner.namespace(name)).flatten()
    }
}

/// An AdmissionReview v1 of a plain Pod (no security context: baseline admits it, restricted
/// does not) in namespace `fresh`.
fn pod_review() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "p1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                    "resource": {"group": "", "version": "v1", "resource": "pods"},
                    "name": "web", "namespace": "fresh", "operation": "CREATE",
                    "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
                    "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "fresh"},
                               "spec": {"containers": [{"name": "app", "image": "nginx"}]}},
                    "dryRun": false}
    }))
    .unwrap()
}

fn late_admission(delay: Duration, known: bool) -> Admission {
    let namespace = k8s_openapi::api::core::v1::Namespace {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("fresh".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let inner = crate::review::StaticLookup {
        namespaces: if known { vec![Arc::new(namespace)] } else { vec![] },
        ..Default::default()
    };
    Admission::new(Arc::new(Late { inner, since: Instant::now(), delay }), RulesConfig::default())
}

#[tokio::test]
async fn a_pod_in_a_namespace_the_cache_has_not_seen_yet_waits_for_it() {
    // Without the wait, the unseen namespace is judged `restricted` and the plain pod refused.
    let admission = late_admission(Duration::from_secs(1), true);
    let (answer, allowed) = admission.review_bytes(Endpoint::Validate, "pods", &pod_review());
    assert!(!allowed, "unseen: restricted: {}", String::from_utf8_lossy(&answer));
    // With it, the namespace arrives and its level (unlabelled: baseline) admits the pod.
    let admission = late_admission(Duration::from_secs(1), true);
    namespace_seen(&admission, &pod_review()).await;
    let (answer, allowed) = admission.review_bytes(Endpoint::Validate, "pods", &pod_review());
    assert!(allowed, "{}", String::from_utf8_lossy(&answer));
}

#[tokio::test]
async fn the_wait_for_a_namespace_that_never_comes_is_bounded() {
    let admission = late_admission(Duration::ZERO, false);
    namespace_seen(&admission, &pod_review()).await;
    let (answer, allowed) = admission.review_bytes(Endpoint::Validate, "pods", &pod_review());
    assert!(!allowed, "still unknown: restricted: {}", String::from_utf8_lossy(&answer));
    assert!(String::from_utf8_lossy(&answer).contains("fresh"), "{}", String::from_utf8_lossy(&answer));
}

/// An AdmissionReview v1 of a ManagedSeed `garden/managed` for the shoot `managed`.
fn managed_seed_review() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "m1", "kind": {"group": "seedmanagement.gardener.cloud", "version": "v1alpha1", "kind": "ManagedSeed"},
                    "resource": {"group": "seedmanagement.gardener.cloud", "version": "v1alpha1", "resource": "managedseeds"},
                    "name": "managed", "namespace": "garden", "operation": "CREATE",
                    "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
                    "object": {"apiVersion": "seedmanagement.gardener.cloud/v1alpha1", "kind": "ManagedSeed",
                               "metadata": {"name": "managed", "namespace": "garden"},
                               "spec": {"shoot": {"name": "managed"}}},
                    "dryRun": false}
    }))
    .unwrap()
}

#[tokio::test]
async fn a_managed_seed_applied_with_its_shoot_waits_for_the_shoot_to_reach_the_cache() {
    let mut shoot = crate::fixtures::shoot();
    shoot.metadata.name = Some("managed".into());
    shoot.metadata.namespace = Some("garden".into());
    let late = || {
        let inner = crate::review::StaticLookup { shoots: vec![Arc::new(shoot.clone())], ..Default::default() };
        Admission::new(
            Arc::new(Late { inner, since: Instant::now(), delay: Duration::from_secs(1) }),
            RulesConfig::default(),
        )
    };
    let not_found = |answer: &[u8]| String::from_utf8_lossy(answer).contains("spec.shoot.name: Not found");
    // Without the wait, the shoot the cache has not seen yet is "not found".
    let (answer, _) = late().review_bytes(Endpoint::Validate, "managedseeds", &managed_seed_review());
    assert!(not_found(&answer), "{}", String::from_utf8_lossy(&answer));
    // With it, the shoot arrives.
    let admission = late();
    shoot_seen(&admission, &managed_seed_review()).await;
    let (answer, _) = admission.review_bytes(Endpoint::Validate, "managedseeds", &managed_seed_review());
    assert!(!not_found(&answer), "{}", String::from_utf8_lossy(&answer));
}
