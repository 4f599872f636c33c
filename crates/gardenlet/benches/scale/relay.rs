//! The shared stand-in shoot API: one testenv kube-apiserver serves every shoot, reached through
//! a TLS relay per shoot that listens on the shoot's load-balancer address with the serving
//! certificate gardenlet generated for the shoot's kube-apiserver.

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the relays forward to: the shared stand-in kube-apiserver, as admin.
pub struct Upstream {
    address: SocketAddr,
    tls: tokio_rustls::TlsConnector,
    /// TLS connections accepted by all relays (gardenlet builds a client per shoot and use).
    connections: AtomicU64,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Upstream {
    pub fn new(env: &testenv::TestEnv) -> Self {
        let (cert, key) = env.client_certificate("shoot-relay", Some("system:masters")).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        for ca in CertificateDer::pem_slice_iter(env.ca_pem().as_bytes()) {
            roots.add(ca.unwrap()).unwrap();
        }
        let certs = CertificateDer::pem_slice_iter(cert.as_bytes()).collect::<Result<Vec<_>, _>>().unwrap();
        let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
        let mut config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_client_auth_cert(certs, key)
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let address = env.server_url().trim_start_matches("https://").parse().unwrap();
        Self { address, tls: tokio_rustls::TlsConnector::from(Arc::new(config)), connections: AtomicU64::new(0) }
    }

    /// TLS connections accepted by all relays so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
}

/// Listens on `address:443` with the shoot's kube-apiserver serving certificate and relays
/// every connection to the shared API server.
pub async fn start_relay(
    client: &kube::Client,
    namespace: &str,
    address: Ipv4Addr,
    upstream: Arc<Upstream>,
) -> Result<tokio::task::JoinHandle<()>, String> {
    let secret = Api::<Secret>::namespaced(client.clone(), namespace)
        .get("kube-apiserver")
        .await
        .map_err(|e| format!("reading the kube-apiserver secret: {e}"))?;
    let data = secret.data.unwrap_or_default();
    let (Some(cert), Some(key)) = (data.get("tls.crt"), data.get("tls.key")) else {
        return Err("the kube-apiserver secret has no tls.crt/tls.key".into());
    };
    let certs = CertificateDer::pem_slice_iter(&cert.0).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::from_pem_slice(&key.0).map_err(|e| e.to_string())?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener =
        tokio::net::TcpListener::bind((address, 443)).await.map_err(|e| format!("listening on {address}:443: {e}"))?;
    Ok(tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let (acceptor, upstream) = (acceptor.clone(), upstream.clone());
            tokio::spawn(async move {
                let Ok(mut down) = acceptor.accept(tcp).await else { return };
                upstream.connections.fetch_add(1, Ordering::Relaxed);
                let Ok(up) = tokio::net::TcpStream::connect(upstream.address).await else { return };
                let name = ServerName::try_from(upstream.address.ip().to_string()).unwrap();
                let Ok(mut up) = upstream.tls.connect(name, up).await else { return };
                let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
            });
        }
    }))
}
