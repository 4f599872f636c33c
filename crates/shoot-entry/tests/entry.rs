//! The entry point end to end on one machine: the real haproxy (`HAPROXY`, from
//! `hack/setup-haproxy.sh`) with the image's configuration (`haproxy.cfg`), the sync watching a
//! real API server as the chart's service account, and stand-in kube-apiservers: TLS servers on
//! loopback addresses that say who they are and then echo.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use rcgen::{CertificateParams, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::json;
use shoot_entry::haproxy::RuntimeApi;
use shoot_entry::routes::ROUTES_CONFIGMAP;
use shoot_entry::sync::RouteSync;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use testenv::TestEnv;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

const NAMESPACE: &str = "garden";
const SYNC_ACCOUNT: &str = "shoot-entry";

fn haproxy_binary() -> PathBuf {
    match std::env::var_os("HAPROXY") {
        Some(path) => PathBuf::from(path),
        None => panic!("HAPROXY is not set; run `export HAPROXY=$(hack/setup-haproxy.sh)` first (make test does)"),
    }
}

/// haproxy with the image's configuration, its addresses from the environment.
struct Haproxy {
    child: Child,
}

impl Haproxy {
    fn start(
        run_dir: &Path,
        api: SocketAddr,
        tunnel: SocketAddr,
        backend_api: u16,
        backend_tunnel: u16,
    ) -> Result<Self> {
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("haproxy.cfg");
        let child = Command::new(haproxy_binary())
            .args(["-db", "-f"])
            .arg(&config)
            .env("ENTRY_RUN_DIR", run_dir)
            .env("ENTRY_API_BIND", api.to_string())
            .env("ENTRY_TUNNEL_BIND", tunnel.to_string())
            .env("ENTRY_API_PORT", backend_api.to_string())
            .env("ENTRY_TUNNEL_PORT", backend_tunnel.to_string())
            .stdout(Stdio::null())
            .spawn()?;
        Ok(Self { child })
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stand-in kube-apiserver at `ip`: on `port`, after the TLS handshake, it writes
/// `<name>:<port>\n` and then echoes.
async fn backend(ip: IpAddr, port: u16, name: &'static str) -> Result<()> {
    let key = KeyPair::generate()?;
    let cert = CertificateParams::new(vec![format!("{name}.example")])?.self_signed(&key)?;
    let certs = vec![CertificateDer::from_pem_slice(cert.pem().as_bytes())?];
    let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes())?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind((ip, port)).await?;
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                if tls.write_all(format!("{name}:{port}\n").as_bytes()).await.is_err() {
                    return;
                }
                let mut buf = [0u8; 1024];
                while let Ok(n) = tls.read(&mut buf).await {
                    if n == 0 || tls.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    Ok(())
}

/// Trusts any certificate: the test checks where a connection lands, not who may be trusted.
#[derive(Debug)]
struct AnyServer;

impl rustls::client::danger::ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::ring::default_provider().signature_verification_algorithms.supported_schemes()
    }
}

type Tls = tokio_rustls::client::TlsStream<TcpStream>;

/// Connects to the entry point at `addr` with server name `sni`; returns the stream and the
/// first line the backend wrote.
async fn connect(addr: SocketAddr, sni: &str) -> Result<(Tls, String)> {
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServer))
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let exchange = async {
        let tcp = TcpStream::connect(addr).await?;
        let mut tls = connector.connect(ServerName::try_from(sni.to_string())?, tcp).await?;
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while !line.ends_with(b"\n") {
            if tls.read(&mut byte).await? == 0 {
                return Err("closed before a line".into());
            }
            line.push(byte[0]);
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((tls, String::from_utf8(line)?.trim().to_string()))
    };
    tokio::time::timeout(Duration::from_secs(10), exchange).await?
}

/// Retries [`connect`] until `check` holds for its result (bounded): the sync applies a change
/// within moments, not at once.
async fn eventually<F>(addr: SocketAddr, sni: &str, what: &str, check: F) -> Result<()>
where
    F: Fn(&Result<(Tls, String)>) -> bool,
{
    let mut last = String::new();
    for _ in 0..100 {
        let result = connect(addr, sni).await;
        if check(&result) {
            return Ok(());
        }
        last = match &result {
            Ok((_, line)) => format!("landed at {line}"),
            Err(e) => format!("failed: {e}"),
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("{sni} via {addr}: never {what} within 10 s; last attempt {last}").into())
}

async fn echo(tls: &mut Tls, text: &str) -> Result<String> {
    tls.write_all(text.as_bytes()).await?;
    let mut buf = vec![0u8; text.len()];
    tokio::time::timeout(Duration::from_secs(5), tls.read_exact(&mut buf)).await??;
    Ok(String::from_utf8(buf)?)
}

async fn set_routes(env: &TestEnv, data: serde_json::Value) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(env.client().await?, NAMESPACE);
    api.patch(ROUTES_CONFIGMAP, &PatchParams::default(), &Patch::Merge(&json!({ "data": data }))).await?;
    Ok(())
}

/// The chart's Role for the sync (charts/gardener/gardenlet/templates/shoot-entry.yaml).
async fn sync_account(env: &TestEnv) -> Result<kube::Client> {
    let admin = env.client().await?;
    let objects = [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": SYNC_ACCOUNT, "namespace": NAMESPACE},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [ROUTES_CONFIGMAP],
                       "verbs": ["get", "list", "watch"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": SYNC_ACCOUNT, "namespace": NAMESPACE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": SYNC_ACCOUNT},
            "subjects": [{"kind": "ServiceAccount", "name": SYNC_ACCOUNT, "namespace": NAMESPACE}]}),
    ];
    let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
    ns.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?).await?;
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = Api::namespaced(admin.clone(), NAMESPACE);
    roles.create(&PostParams::default(), &serde_json::from_value(objects[0].clone())?).await?;
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> = Api::namespaced(admin.clone(), NAMESPACE);
    bindings.create(&PostParams::default(), &serde_json::from_value(objects[1].clone())?).await?;
    Ok(env.client_as_service_account(NAMESPACE, SYNC_ACCOUNT).await?)
}

#[tokio::test]
async fn routes_follow_the_configmap_without_cutting_open_connections() -> Result<()> {
    let env = TestEnv::start().await?;
    let (a, b): (IpAddr, IpAddr) = ("127.0.0.2".parse()?, "127.0.0.3".parse()?);
    let backend_api = testenv::free_port(a)?;
    let backend_tunnel = testenv::free_port(a)?;
    for (ip, name) in [(a, "a"), (b, "b")] {
        backend(ip, backend_api, name).await?;
        backend(ip, backend_tunnel, name).await?;
    }
    let sync_client = sync_account(&env).await?;
    let admin: Api<ConfigMap> = Api::namespaced(env.client().await?, NAMESPACE);
    admin
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ROUTES_CONFIGMAP},
                "data": {"shoot--p--a": "api.a.example 127.0.0.2\n"}}))?,
        )
        .await?;

    // The sync's service account reads the routes and nothing else.
    let secrets: Api<Secret> = Api::namespaced(sync_client.clone(), NAMESPACE);
    let refused = secrets.list(&Default::default()).await.expect_err("the sync may not list Secrets");
    assert!(matches!(&refused, kube::Error::Api(s) if s.code == 403), "{refused}");
    let others: Api<ConfigMap> = Api::namespaced(sync_client.clone(), NAMESPACE);
    let refused = others.get("kube-root-ca.crt").await.expect_err("the sync may read only its ConfigMap");
    assert!(matches!(&refused, kube::Error::Api(s) if s.code == 403), "{refused}");

    let run = tempfile::tempdir()?;
    let sync = RouteSync {
        namespace: NAMESPACE.into(),
        configmap: ROUTES_CONFIGMAP.into(),
        map_file: run.path().join("routes.map"),
        haproxy: RuntimeApi::new(run.path().join("admin.sock")),
    };
    // What the init container does: the file before haproxy starts.
    sync.write_file(&sync.read(&sync_client).await?)?;
    let api = SocketAddr::new("127.0.0.1".parse()?, testenv::free_port("127.0.0.1".parse()?)?);
    let tunnel = SocketAddr::new("127.0.0.1".parse()?, testenv::free_port("127.0.0.1".parse()?)?);
    let mut haproxy = Haproxy::start(run.path(), api, tunnel, backend_api, backend_tunnel)?;
    let runner = tokio::spawn({
        let (sync, client) = (sync.clone(), sync_client.clone());
        async move { sync.run(client).await }
    });

    // Routed by name, each port to its own backend port.
    eventually(api, "api.a.example", "reached a", |r| matches!(r, Ok((_, l)) if *l == format!("a:{backend_api}")))
        .await?;
    let (_, line) = connect(tunnel, "API.A.example").await?;
    assert_eq!(line, format!("a:{backend_tunnel}"), "the tunnel port goes to the tunnel port; names are case-blind");
    // A name without a route, and no name at all, are closed.
    assert!(connect(api, "api.b.example").await.is_err(), "a name without a route must be refused");
    assert!(connect(api, "127.0.0.1").await.is_err(), "a connection without a server name must be refused");
    let (mut open_a, _) = connect(api, "api.a.example").await?;

    // A new shoot: routed within moments, the open connection to a untouched.
    set_routes(&env, json!({"shoot--p--b": "api.b.example 127.0.0.3\n"})).await?;
    eventually(api, "api.b.example", "reached b", |r| matches!(r, Ok((_, l)) if *l == format!("b:{backend_api}")))
        .await?;
    assert_eq!(echo(&mut open_a, "still there").await?, "still there");

    // A shoot gone: its name is refused, open connections stay.
    set_routes(&env, json!({"shoot--p--a": null})).await?;
    eventually(api, "api.a.example", "was refused", |r| r.is_err()).await?;
    assert_eq!(echo(&mut open_a, "after removal").await?, "after removal");

    // A name claimed by two shoots goes to neither.
    set_routes(&env, json!({"shoot--q--x": "api.b.example 127.0.0.2\n"})).await?;
    eventually(api, "api.b.example", "was refused", |r| r.is_err()).await?;
    set_routes(&env, json!({"shoot--q--x": null})).await?;
    eventually(api, "api.b.example", "reached b", |r| matches!(r, Ok((_, l)) if *l == format!("b:{backend_api}")))
        .await?;

    // A restarted haproxy starts from the file the sync keeps.
    drop(haproxy);
    haproxy = Haproxy::start(run.path(), api, tunnel, backend_api, backend_tunnel)?;
    eventually(
        api,
        "api.b.example",
        "reached b after a restart",
        |r| matches!(r, Ok((_, l)) if *l == format!("b:{backend_api}")),
    )
    .await?;
    let map = std::fs::read_to_string(&sync.map_file)?;
    assert!(map.contains("api.b.example 127.0.0.3") && !map.contains("api.a.example"), "{map}");

    runner.abort();
    drop(haproxy);
    Ok(())
}
