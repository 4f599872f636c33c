//! A real etcd + kube-apiserver running on the PKI under test: every certificate, key and
//! bundle they use comes from a `pki` secret set, written to files in a temporary directory.
//! Process handling (kill on drop, logs, readiness) is testenv's.

use kube::config::{KubeConfigOptions, Kubeconfig};
use pki::shoot_set::{ShootInputs, names};
use pki::{SecretSet, data_keys};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;
use testenv::{Assets, Process};

const HOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const READY_TIMEOUT: Duration = Duration::from_secs(120);
const START_ATTEMPTS: usize = 3;

/// Inputs of the shoot set under test: the API server is reached at 127.0.0.1 (an extra SAN),
/// and every kubeconfig points there.
pub fn inputs(server: &str) -> ShootInputs {
    let mut inputs =
        ShootInputs::new("shoot--test--pki", "api.pki.test.internal.example.com", "10.0.0.1".parse().unwrap());
    inputs.external_domain = Some("api.pki.test.example.com".into());
    inputs.extra_sans = vec![HOST.to_string()];
    inputs.admin_server = Some(server.to_string());
    inputs.component_server = Some(server.to_string());
    inputs
}

#[derive(Clone, Copy, Debug)]
struct Ports {
    api: u16,
    etcd_client: u16,
    etcd_peer: u16,
}

/// etcd and kube-apiserver started from a secret set.
#[derive(Debug)]
pub struct ControlPlane {
    // Field order is drop order: kube-apiserver before etcd, the directory last.
    apiserver: Option<Process>,
    etcd: Option<Process>,
    ports: Ports,
    server: String,
    assets: Assets,
    generation: usize,
    dir: tempfile::TempDir,
}

impl ControlPlane {
    /// Starts a control plane on free ports; `secrets_for(server)` makes the secret set once
    /// the server address is known (kubeconfigs embed it). Retries with new ports when one was
    /// taken in the meantime.
    pub async fn start(secrets_for: impl Fn(&str) -> SecretSet) -> (Self, SecretSet) {
        let assets = Assets::from_env().unwrap();
        let mut last = None;
        for _ in 0..START_ATTEMPTS {
            let ports = Ports {
                api: testenv::free_port(HOST).unwrap(),
                etcd_client: testenv::free_port(HOST).unwrap(),
                etcd_peer: testenv::free_port(HOST).unwrap(),
            };
            let server = format!("https://{HOST}:{}", ports.api);
            let secrets = secrets_for(&server);
            let dir = tempfile::Builder::new().prefix("pki-control-plane-").tempdir().unwrap();
            let mut plane =
                Self { apiserver: None, etcd: None, ports, server, assets: assets.clone(), generation: 0, dir };
            match plane.run(&secrets).await {
                Ok(()) => return (plane, secrets),
                Err(e) if e.to_string().contains("address already in use") => last = Some(e),
                Err(e) => panic!("starting the control plane: {e}"),
            }
        }
        panic!("starting the control plane: ports kept being taken: {last:?}")
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Stops both processes and starts them again with `secrets` (same ports, same data).
    pub async fn restart(&mut self, secrets: &SecretSet) {
        self.stop();
        self.run(secrets).await.unwrap_or_else(|e| panic!("restarting the control plane: {e}"));
    }

    fn stop(&mut self) {
        // kube-apiserver first, so it does not log etcd errors while stopping.
        if let Some(mut p) = self.apiserver.take() {
            p.kill();
        }
        if let Some(mut p) = self.etcd.take() {
            p.kill();
        }
    }

    async fn run(&mut self, secrets: &SecretSet) -> Result<(), testenv::Error> {
        self.generation += 1;
        let pki = self.dir.path().join(format!("pki-{}", self.generation));
        let file = |secret: &str, key: &str| write(&pki, secrets, secret, key);
        let etcd_bundle = file("ca-etcd-bundle", data_keys::BUNDLE);
        let etcd_server_cert = file(names::ETCD_SERVER, data_keys::TLS_CERT);
        let etcd_server_key = file(names::ETCD_SERVER, data_keys::TLS_KEY);
        let (etcd_client, peer) = (self.ports.etcd_client, self.ports.etcd_peer);
        let etcd_args = vec![
            "--name=default".to_string(),
            format!("--data-dir={}", self.dir.path().join("etcd").display()),
            format!("--listen-client-urls=https://{HOST}:{etcd_client}"),
            format!("--advertise-client-urls=https://{HOST}:{etcd_client}"),
            format!("--listen-peer-urls=https://{HOST}:{peer}"),
            format!("--initial-advertise-peer-urls=https://{HOST}:{peer}"),
            format!("--initial-cluster=default=https://{HOST}:{peer}"),
            "--client-cert-auth=true".into(),
            format!("--trusted-ca-file={}", etcd_bundle.display()),
            format!("--cert-file={}", etcd_server_cert.display()),
            format!("--key-file={}", etcd_server_key.display()),
            "--peer-client-cert-auth=true".into(),
            format!("--peer-trusted-ca-file={}", etcd_bundle.display()),
            format!("--peer-cert-file={}", etcd_server_cert.display()),
            format!("--peer-key-file={}", etcd_server_key.display()),
            "--unsafe-no-fsync=true".into(),
            "--log-level=warn".into(),
            "--logger=zap".into(),
        ];
        let etcd = self.etcd.insert(Process::spawn("etcd", &self.assets.etcd, &etcd_args, self.dir.path())?);
        etcd.check_alive()?;

        let apiserver_args = vec![
            format!("--etcd-servers=https://{HOST}:{etcd_client}"),
            format!("--etcd-cafile={}", etcd_bundle.display()),
            format!("--etcd-certfile={}", file(names::ETCD_CLIENT, data_keys::TLS_CERT).display()),
            format!("--etcd-keyfile={}", file(names::ETCD_CLIENT, data_keys::TLS_KEY).display()),
            format!("--bind-address={HOST}"),
            format!("--advertise-address={HOST}"),
            format!("--secure-port={}", self.ports.api),
            "--insecure-port=0".into(),
            format!("--cert-dir={}", self.dir.path().join("apiserver-certs").display()),
            format!("--tls-cert-file={}", file(names::KUBE_APISERVER, data_keys::TLS_CERT).display()),
            format!("--tls-private-key-file={}", file(names::KUBE_APISERVER, data_keys::TLS_KEY).display()),
            format!("--client-ca-file={}", file("ca-client-bundle", data_keys::BUNDLE).display()),
            format!("--requestheader-client-ca-file={}", file("ca-front-proxy-bundle", data_keys::BUNDLE).display()),
            format!("--requestheader-allowed-names={}", pki::shoot_set::subjects::FRONT_PROXY_CLIENT),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
            format!("--proxy-client-cert-file={}", file(names::FRONT_PROXY_CLIENT, data_keys::TLS_CERT).display()),
            format!("--proxy-client-key-file={}", file(names::FRONT_PROXY_CLIENT, data_keys::TLS_KEY).display()),
            format!(
                "--kubelet-client-certificate={}",
                file(names::KUBE_APISERVER_KUBELET, data_keys::TLS_CERT).display()
            ),
            format!("--kubelet-client-key={}", file(names::KUBE_APISERVER_KUBELET, data_keys::TLS_KEY).display()),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", file(names::SERVICE_ACCOUNT_KEY, data_keys::SA_PUB).display()),
            format!(
                "--service-account-signing-key-file={}",
                file(names::SERVICE_ACCOUNT_KEY, data_keys::SA_KEY).display()
            ),
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            "--authorization-mode=Node,RBAC".into(),
            "--enable-bootstrap-token-auth=true".into(),
            "--disable-admission-plugins=ServiceAccount".into(),
            "--enable-priority-and-fairness=false".into(),
            "--profiling=false".into(),
        ];
        let apiserver =
            Process::spawn("kube-apiserver", &self.assets.kube_apiserver, &apiserver_args, self.dir.path())?;
        let apiserver = self.apiserver.insert(apiserver);
        let etcd = self.etcd.as_mut().expect("etcd was just started");

        let admin = client(secrets.value(names::KUBECONFIG_ADMIN, data_keys::KUBECONFIG).unwrap()).await;
        testenv::wait_until_ready(&admin, &mut [etcd, apiserver], READY_TIMEOUT).await
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
    }
}

fn write(dir: &Path, secrets: &SecretSet, secret: &str, key: &str) -> PathBuf {
    let value = secrets.value(secret, key).unwrap_or_else(|| panic!("{secret}/{key} is missing from the set"));
    let path = dir.join(secret).join(key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, value).unwrap();
    path
}

/// A client from kubeconfig YAML, TLS verification on (testenv's `client_from`).
pub async fn client(kubeconfig_yaml: &str) -> kube::Client {
    testenv::client_from(&Kubeconfig::from_yaml(kubeconfig_yaml).unwrap()).await.unwrap()
}

/// A client from kubeconfig YAML that also sends `headers` with every request.
pub async fn client_with_headers(kubeconfig_yaml: &str, headers: &[(&'static str, &str)]) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig_yaml).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.unwrap();
    for (name, value) in headers {
        config.headers.push((http_header(name), value.parse().unwrap()));
    }
    kube::Client::try_from(config).unwrap()
}

fn http_header(name: &'static str) -> http::HeaderName {
    http::HeaderName::from_static(name)
}

/// Who the API server says the client is: `Ok(())` when it may create cluster roles (only
/// `system:masters` may here), otherwise the API error.
pub async fn probe(client: &kube::Client) -> Result<(), kube::Error> {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use kube::api::{Api, PostParams};
    let role: ClusterRole = serde_json::from_value(serde_json::json!({"metadata": {"name": "pki-probe"}})).unwrap();
    let params = PostParams { dry_run: true, ..Default::default() };
    Api::<ClusterRole>::all(client.clone()).create(&params, &role).await.map(|_| ())
}

/// The HTTP status of an API error, `None` for transport errors (e.g. TLS).
pub fn status(result: &Result<(), kube::Error>) -> Option<u16> {
    match result {
        Err(kube::Error::Api(status)) => Some(status.code),
        _ => None,
    }
}

/// The user named in a 403 (`User "x" cannot ...`).
pub fn forbidden_user(result: &Result<(), kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) if status.code == 403 => status
            .message
            .split('"')
            .nth(1)
            .map(str::to_string)
            .unwrap_or_else(|| panic!("403 without a user: {}", status.message)),
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
}

/// Asserts the request was refused as unauthenticated (401).
pub fn assert_unauthorized(result: &Result<(), kube::Error>, what: &str) {
    assert_eq!(status(result), Some(401), "{what}: expected 401, got {result:?}");
}

/// Asserts the request failed in the TLS handshake because the client rejected the server's
/// certificate for `reason` (a rustls certificate error such as `NotValidForName`).
pub fn assert_tls_rejected(result: &Result<(), kube::Error>, reason: &str, what: &str) {
    let text = format!("{result:?}");
    assert!(
        result.is_err() && status(result).is_none() && text.contains(reason),
        "{what}: expected the TLS handshake to fail with {reason}, got {text}"
    );
}

/// Runs `future` with a time limit, so a hung server fails the test instead of stalling it.
pub async fn bounded<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), future).await.unwrap_or_else(|_| panic!("{what} took over 60 s"))
}
