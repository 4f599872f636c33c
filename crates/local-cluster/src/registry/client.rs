//! The image registry's API over HTTPS (readiness, the digest check before a push, tests):
//! hyper-util's pooled client over hyper-rustls, verifying the registry's certificate against
//! the cluster CA and nothing else, without a client certificate.

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

/// A client of the registry at [`address`], trusting `ca_pem` (the cluster CA) only.
#[derive(Clone, Debug)]
pub struct Client {
    pool: Pool<hyper_rustls::HttpsConnector<HttpConnector>, String>,
}

impl Client {
    pub fn new(ca_pem: &[u8]) -> Result<Self> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let fail = |what: String| Error::Registry(format!("a client for https://{}: {what}", address()));
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
        Ok(Self { pool: Pool::builder(TokioExecutor::new()).build(https) })
    }

    /// One request (no body) to `path` on the registry.
    pub async fn request(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> Result<Response> {
        let uri = format!("https://{}{path}", address());
        let fail = |what: String| Error::Registry(format!("{method} {uri}: {what}"));
        let mut builder = http::Request::builder().method(method).uri(&uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder.body(String::new()).map_err(|e| fail(e.to_string()))?;
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
