//! The tunnel with a real kube-apiserver: its `cluster` egress goes through the server's socket
//! (`EgressSelectorConfiguration`, HTTP CONNECT) to an agent connected with mutual TLS, which
//! opens the connection to a "kubelet" (a TLS server in this test that answers `containerLogs`).
//! `kubectl logs` works only through a connected agent, only to destinations the agent may
//! reach, and stops working when the agent goes away.

use k8s_openapi::api::core::v1::{Node, Pod};
use konnectivity::{agent, server};
use kube::api::{Api, PostParams};
use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, SanType};
use rustls::pki_types::pem::PemObject;
use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use testenv::{Options, TestEnv};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, Server, ServerTlsConfig};

type Result<T = ()> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// A CA and leaf certificates signed by it.
struct Pki {
    ca: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    fn new() -> Result<Self> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key)?.pem();
        Ok(Self { ca, issuer: Issuer::new(params, key) })
    }

    /// Certificate and key for `names` (the first may be an IP address) and `usage`.
    fn leaf(&self, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Result<(String, String)> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        for name in names {
            params.subject_alt_names.push(match name.parse() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*name).try_into()?),
            });
        }
        params.extended_key_usages = vec![usage];
        Ok((params.signed_by(&key, &self.issuer)?.pem(), key.serialize_pem()))
    }
}

/// A stand-in kubelet: TLS on loopback, answers every request with `body`, counts connections.
async fn kubelet(pki: &Pki, body: Arc<Vec<u8>>) -> Result<(u16, Arc<AtomicUsize>)> {
    let (cert, key) = pki.leaf(&["127.0.0.1"], ExtendedKeyUsagePurpose::ServerAuth)?;
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes())?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let (acceptor, body) = (acceptor.clone(), body.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && tls.read(&mut byte).await.is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tls.write_all(response.as_bytes()).await;
                let _ = tls.write_all(&body).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    Ok((port, connections))
}

fn node(kubelet_port: u16) -> Result<Node> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": {"name": "machine-a"},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
        },
    }))?)
}

fn pod() -> Result<Pod> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": "machine-a", "containers": [{"name": "web", "image": "web"}]},
    }))?)
}

/// Starts an agent allowed to reach `allowed`; stops it when the returned sender is dropped.
fn start_agent(pki: &Pki, port: u16, allowed: &str) -> Result<(Arc<agent::Agent>, tokio::sync::oneshot::Sender<()>)> {
    let (cert, key) = pki.leaf(&["agent"], ExtendedKeyUsagePurpose::ClientAuth)?;
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&pki.ca))
        .identity(Identity::from_pem(cert, key))
        .domain_name("konnectivity.test");
    let endpoint = Endpoint::from_shared(format!("https://127.0.0.1:{port}"))?.tls_config(tls)?;
    let settings = agent::Settings {
        agent_id: format!("agent-{allowed}"),
        allowed: vec![allowed.parse()?],
        ..agent::Settings::default()
    };
    let agent = agent::Agent::new(endpoint, settings, &prometheus::Registry::new())?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(agent.clone().run(async move {
        let _ = stopped.await;
    }));
    Ok((agent, stop))
}

/// Waits (bounded) until `holds` is true; the error names `what`.
async fn until(what: &str, holds: impl Fn() -> bool) -> Result {
    for _ in 0..200 {
        if holds() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("{what}: not after 10 s").into())
}

/// Waits (bounded) until the server holds `count` agent streams.
async fn agents(tunnel: &server::Tunnel, count: usize) -> Result {
    until(&format!("the server holds {count} agent streams"), || tunnel.agents() == count)
        .await
        .map_err(|e| format!("{e} (it holds {})", tunnel.agents()).into())
}

fn metric(registry: &prometheus::Registry, name: &str, label: &str) -> u64 {
    registry
        .gather()
        .iter()
        .filter(|family| family.name() == name)
        .flat_map(|family| family.get_metric())
        .filter(|m| m.get_label().iter().any(|l| l.value() == label))
        .map(|m| m.get_counter().get_value() as u64)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_reaches_a_kubelet_only_through_a_connected_allowed_agent() -> Result {
    let pki = Pki::new()?;
    let dir = tempfile::tempdir()?;

    // The server: agents on a loopback port (mutual TLS), the API server on a Unix socket.
    let registry = prometheus::Registry::new();
    let settings = server::Settings { server_id: "server-0".into(), ..server::Settings::default() };
    let tunnel = server::Tunnel::new(settings, &registry)?;
    let socket = dir.path().join("konnectivity-server.socket");
    tokio::spawn(tunnel.clone().serve_api_server(UnixListener::bind(&socket)?, std::future::pending()));
    let (cert, key) = pki.leaf(&["konnectivity.test"], ExtendedKeyUsagePurpose::ServerAuth)?;
    let tls =
        ServerTlsConfig::new().identity(Identity::from_pem(cert, key)).client_ca_root(Certificate::from_pem(&pki.ca));
    let agents_listener = TcpListener::bind("127.0.0.1:0").await?;
    let agent_port = agents_listener.local_addr()?.port();
    let grpc = Server::builder().tls_config(tls)?.add_service(tunnel.agent_service());
    tokio::spawn(grpc.serve_with_incoming(TcpListenerStream::new(agents_listener)));

    // The API server sends its cluster egress through the socket.
    let egress = dir.path().join("egress.yaml");
    std::fs::write(
        &egress,
        format!(
            "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\negressSelections:\n\
             - name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n    transport:\n      uds:\n        udsName: {}\n",
            socket.display()
        ),
    )?;
    let env = TestEnv::start_with(Options {
        extra_apiserver_args: vec![format!("--egress-selector-config-file={}", egress.display())],
        ..Options::default()
    })
    .await?;
    let client = env.client().await?;

    // A megabyte of "logs", so that the bytes cross the stream in many packets.
    let body: Arc<Vec<u8>> = Arc::new((0..1024 * 1024).map(|i| b'a' + (i % 26) as u8).collect());
    let (kubelet_port, kubelet_connections) = kubelet(&pki, body.clone()).await?;
    Api::<Node>::all(client.clone()).create(&PostParams::default(), &node(kubelet_port)?).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(&PostParams::default(), &pod()?).await?;
    let params = kube::api::LogParams::default();
    let logs = || pods.logs("web", &params);

    // No agent: the API server's request fails at once, and nothing reached the kubelet.
    let refused = logs().await;
    assert!(refused.is_err(), "logs without an agent: {refused:?}");
    assert_eq!(kubelet_connections.load(Ordering::SeqCst), 0);
    assert_eq!(metric(&registry, "konnectivity_server_dials_total", "no_agent"), 1);

    // An agent that may not reach the kubelet's network refuses the dial.
    let (confined, stop) = start_agent(&pki, agent_port, "10.0.0.0/8")?;
    agents(&tunnel, 1).await?;
    // The agent counts the stream once the server's answer reaches it, a moment after the server.
    until("the agent holds one server stream", || confined.servers() == 1).await?;
    let refused = logs().await;
    assert!(refused.is_err(), "logs through an agent that may not dial there: {refused:?}");
    assert_eq!(kubelet_connections.load(Ordering::SeqCst), 0);
    assert_eq!(metric(&registry, "konnectivity_server_dials_total", "failed"), 1);
    drop(stop);
    agents(&tunnel, 0).await?;

    // An agent that may: the logs arrive whole, through the tunnel.
    let (_agent, stop) = start_agent(&pki, agent_port, "127.0.0.0/8")?;
    agents(&tunnel, 1).await?;
    for _ in 0..3 {
        let text = logs().await?;
        assert!(text.as_bytes() == body.as_slice(), "logs differ: {} bytes of {}", text.len(), body.len());
    }
    assert_eq!(kubelet_connections.load(Ordering::SeqCst), 3);
    assert_eq!(metric(&registry, "konnectivity_server_dials_total", "ok"), 3);

    // The agent goes: its stream ends and the tunnel is closed again.
    drop(stop);
    agents(&tunnel, 0).await?;
    assert!(logs().await.is_err(), "logs after the agent left");
    assert_eq!(kubelet_connections.load(Ordering::SeqCst), 3);
    Ok(())
}
