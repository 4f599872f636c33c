//! The image registry's API over HTTPS (readiness, the digest check before a push, tests):
//! hyper-util's pooled client over hyper-rustls, verifying the registry's certificate against
//! the cluster CA and nothing else, without a client certificate; anonymous (the reader) or with
//! the writer's [`Credentials`].

use super::address;
use crate::error::{Error, Result};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client as Pool;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The whole exchange after connecting (the registry's answers are small).
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// A response of the registry.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    /// The status, the headers (names in lower case, as `http` keeps them) and the body as text.
    pub fn from_parts(parts: &http::response::Parts, body: &[u8]) -> Self {
        let headers = parts
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).trim().to_string()))
            .collect();
        Self { status: parts.status.as_u16(), headers, body: String::from_utf8_lossy(body).into_owned() }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A user and password for HTTP basic authentication (the registry writer's). `Debug` shows the
/// user only.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    user: String,
    password: String,
}

impl Credentials {
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> Self {
        Self { user: user.into(), password: password.into() }
    }
    pub fn user(&self) -> &str {
        &self.user
    }
    pub fn password(&self) -> &str {
        &self.password
    }
    /// The `Authorization` header's value: `Basic base64(user:password)`.
    pub fn authorization(&self) -> String {
        use base64::Engine;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", self.user, self.password));
        format!("Basic {token}")
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("user", &self.user).finish_non_exhaustive()
    }
}

/// A client of one registry process (`host:port`), trusting `ca_pem` (the cluster CA) only.
#[derive(Clone)]
pub struct Client {
    pool: Pool<hyper_rustls::HttpsConnector<HttpConnector>, http_body_util::Full<hyper::body::Bytes>>,
    address: String,
    /// The `Authorization` header sent with every request, if any.
    authorization: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let authenticated = self.authorization.is_some();
        f.debug_struct("Client").field("address", &self.address).field("authenticated", &authenticated).finish()
    }
}

impl Client {
    /// The reader at [`address`], anonymous.
    pub fn new(ca_pem: &[u8]) -> Result<Self> {
        Self::at(ca_pem, &address(), None)
    }

    /// The registry process at `address` (`host:port`; the certificate must name the host),
    /// with `credentials` on every request if given.
    pub fn at(ca_pem: &[u8], address: &str, credentials: Option<&Credentials>) -> Result<Self> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let fail = |what: String| Error::Registry(format!("a client for https://{address}: {what}"));
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem) {
            let cert = cert.map_err(|e| fail(format!("reading the CA: {e}")))?;
            roots.add(cert).map_err(|e| fail(format!("trusting the CA: {e}")))?;
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| fail(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        // The server name is the node address the URI names (the certificate's IP SAN).
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .wrap_connector(http);
        Ok(Self {
            pool: Pool::builder(TokioExecutor::new()).build(https),
            address: address.to_string(),
            authorization: credentials.map(Credentials::authorization),
        })
    }

    /// One request (no body) to `path` on the registry.
    pub async fn request(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> Result<Response> {
        self.send(method, path, headers, Vec::new()).await
    }

    /// One request with `body` to `path` (a path, or an absolute URL of this registry as a
    /// `Location` header gives it; the credentials never go to another host).
    pub async fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Result<Response> {
        let origin = format!("https://{}", self.address);
        let path = path.strip_prefix(origin.as_str()).unwrap_or(path);
        let uri = format!("{origin}{path}");
        let fail = |what: String| Error::Registry(format!("{method} {uri}: {what}"));
        if !path.starts_with('/') {
            return Err(fail("not a path of this registry".into()));
        }
        let mut builder = http::Request::builder().method(method).uri(&uri);
        if let Some(authorization) = &self.authorization {
            builder = builder.header(http::header::AUTHORIZATION, authorization);
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request =
            builder.body(http_body_util::Full::new(hyper::body::Bytes::from(body))).map_err(|e| fail(e.to_string()))?;
        let exchange = async {
            let response = self.pool.request(request).await.map_err(|e| fail(crate::report(&e)))?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await.map_err(|e| fail(e.to_string()))?.to_bytes();
            Ok(Response::from_parts(&parts, &body))
        };
        match tokio::time::timeout(CONNECT_TIMEOUT + EXCHANGE_TIMEOUT, exchange).await {
            Ok(answer) => answer,
            Err(_) => Err(fail(format!("no answer within {:?}", CONNECT_TIMEOUT + EXCHANGE_TIMEOUT))),
        }
    }
}

/// One request for callers without a runtime (tests, tools): [`Client::request`] on a runtime
/// of its own, on a thread of its own (so it may also be called from within a runtime).
pub fn request(ca_pem: &[u8], method: &str, path: &str, headers: &[(&str, &str)]) -> Result<Response> {
    let run = || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Registry(format!("a runtime for {method} {path}: {e}")))?;
        runtime.block_on(async { Client::new(ca_pem)?.request(method, path, headers).await })
    };
    std::thread::scope(|scope| {
        scope.spawn(run).join().unwrap_or_else(|_| {
            Err(Error::Registry(format!("{method} https://{}{path}: the request panicked", address())))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_read_with_lower_case_header_names() {
        let (parts, ()) = http::Response::builder()
            .status(200)
            .header("Docker-Content-Digest", "sha256:1")
            .header("Content-Length", "2")
            .body(())
            .unwrap()
            .into_parts();
        let r = Response::from_parts(&parts, b"{\"repositories\":[]}");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("docker-content-digest"), Some("sha256:1"));
        assert_eq!(r.header("Docker-Content-Digest"), None, "names are looked up in lower case");
        assert_eq!(r.body, "{\"repositories\":[]}");
    }

    #[test]
    fn credentials_become_a_basic_header_and_never_show_in_debug() {
        let credentials = Credentials::new("local-cluster", "s3cr3t");
        // base64("local-cluster:s3cr3t")
        assert_eq!(credentials.authorization(), "Basic bG9jYWwtY2x1c3RlcjpzM2NyM3Q=");
        assert!(!format!("{credentials:?}").contains("s3cr3t"));
        let client = Client::at(b"", "127.0.0.1:5001", Some(&credentials)).unwrap();
        let shown = format!("{client:?}");
        assert!(!shown.contains("s3cr3t") && !shown.contains("bG9jYWwtY2x1c3RlcjpzM2NyM3Q"), "{shown}");
    }

    #[tokio::test]
    async fn a_registry_that_does_not_answer_is_an_error_naming_the_request() {
        // No CA at all: nothing is trusted, and nothing is reached either.
        let client = Client::new(b"").unwrap();
        // Nothing listens on the node address in unit tests (or the bridge does not exist).
        if std::net::TcpStream::connect_timeout(&address().parse().unwrap(), Duration::from_millis(200)).is_ok() {
            return; // a local cluster runs here: its registry answers.
        }
        let err = client.request("GET", "/v2/", &[]).await.unwrap_err().to_string();
        assert!(err.contains("GET https://10.250.0.1:5000/v2/"), "{err}");
    }
}
