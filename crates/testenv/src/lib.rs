//! A real Kubernetes control plane for tests: a fresh etcd and kube-apiserver (and optionally
//! kube-controller-manager) on free loopback ports, with their own PKI, handing out
//! [`kube::Client`]s and a kubeconfig file.
//!
//! Binaries come from `KUBEBUILDER_ASSETS`, provisioned by `hack/setup-envtest.sh`. A missing
//! binary is an error that names that command; tests never skip silently.
//!
//! Every [`TestEnv`] is independent (its own ports, data directory and PKI), so one test
//! process can run several clusters, e.g. a garden and two seeds. Dropping a [`TestEnv`] kills
//! its processes and removes its directory, also when a test panics.

pub mod access;
mod assets;
pub mod binary;
mod certs;
pub mod cli;
mod crds;
pub mod helm;
pub mod poll;
mod process;
mod snapshot;

pub use assets::{Assets, SETUP_COMMAND};
pub use crds::{install_crds, is_established, wait_established};
/// Low-level building block for tests that start control-plane binaries themselves.
pub use process::ProcessGuard as Process;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use certs::Material;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::config::{KubeConfigOptions, Kubeconfig};
use process::ProcessGuard;
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Errors while starting or using a test environment.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("control-plane binaries are missing: {0}")]
    MissingAssets(String),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("generating the test PKI ({what})")]
    Pki {
        what: &'static str,
        #[source]
        source: rcgen::Error,
    },
    #[error("{name} exited early ({status}); last log lines:\n{log_tail}")]
    Exited { name: &'static str, status: String, log_tail: String },
    #[error("{what} was not ready within {timeout:?}; last log lines:\n{log_tail}")]
    NotReady { what: String, timeout: Duration, log_tail: String },
    #[error("building a client from the test kubeconfig")]
    Kubeconfig(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("{what} failed:\n{stderr}")]
    Helm { what: String, stderr: String },
    #[error("{what}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// kube-controller-manager controllers run by default: everything but what needs nodes or a
/// cloud.
const DEFAULT_CONTROLLERS: &str = "*,-nodeipam,-nodelifecycle,-cloud-node-lifecycle,-route,-service,-attachdetach,-persistentvolume-binder,-persistentvolume-expander,-pvc-protection,-pv-protection,-ttl,-bootstrapsigner,-tokencleaner";

/// The service range of a test API server unless its options set another.
const SERVICE_RANGE: &str = "10.0.0.0/24";
/// How long startup may take before it is reported as a failure.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);
/// Beta API versions a test API server does not serve: each one that has a GA version, plus
/// `extensions/v1beta1` and flowcontrol (priority and fairness is off). kube-apiserver builds
/// the storage and the OpenAPI document of every served version at start, and tests start
/// about 330 of them in `make test`; without these the start costs about a quarter less CPU
/// (measured: 6.3 s → 4.7 s to `/readyz`, docs/testing.md). `policy/v1beta1` stays: it is the
/// only version of PodDisruptionBudget in 1.20. A test may serve one again with its own
/// `--runtime-config=<group/version>=true` (the flag's entries add up).
const UNSERVED_BETA_APIS: &[&str] = &[
    "admissionregistration.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1beta1",
    "apiregistration.k8s.io/v1beta1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "batch/v1beta1",
    "certificates.k8s.io/v1beta1",
    "coordination.k8s.io/v1beta1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1beta1",
    "scheduling.k8s.io/v1beta1",
    "storage.k8s.io/v1beta1",
];

/// The `--runtime-config` flag that leaves [`UNSERVED_BETA_APIS`] out.
fn runtime_config() -> String {
    let entries: Vec<String> = UNSERVED_BETA_APIS.iter().map(|gv| format!("{gv}=false")).collect();
    format!("--runtime-config={}", entries.join(","))
}

/// Attempts when a freshly picked port was taken by a parallel test in the meantime.
const START_ATTEMPTS: usize = 3;

/// Options for [`TestEnv::start_with`].
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Also run kube-controller-manager (namespace deletion, garbage collection).
    pub controller_manager: bool,
    /// The kube-controller-manager controllers to run (its `--controllers`); `None` runs the
    /// default set. Tests that simulate workload status themselves should run only
    /// `namespace` and `garbagecollector`, or the Deployment controller rewrites that status.
    pub controllers: Option<Vec<String>>,
    /// Extra kube-apiserver flags (`--name=value`); an `--authorization-mode` replaces the
    /// default `RBAC`.
    pub extra_apiserver_args: Vec<String>,
    /// CRDs the control plane starts with, `Established`, before kube-controller-manager or
    /// anything else runs. The first environment with a given set installs them and keeps an
    /// etcd snapshot; later ones start from it (much cheaper for kube-apiserver: see
    /// `snapshot.rs`). Not with an `--encryption-provider-config`: that environment installs
    /// them.
    pub crds: Vec<CustomResourceDefinition>,
}

/// `crds` served: waited for when etcd was `restored` from the snapshot, else installed (and
/// saved as `snapshot`, when there is one).
async fn crds_served(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    restored: bool,
    snapshot: Option<&snapshot::Snapshot>,
    etcd_url: &str,
) -> Result<(), Error> {
    if crds.is_empty() {
        return Ok(());
    }
    if restored {
        let names: Vec<String> = crds.iter().filter_map(|c| c.metadata.name.clone()).collect();
        wait_established(client, &names).await?;
        return forget_the_snapshots_ca(client).await;
    }
    install_crds(client, crds).await?;
    if let Some(snapshot) = snapshot {
        snapshot.save(etcd_url);
    }
    Ok(())
}

/// Deletes the authentication ConfigMap restored from the snapshot: kube-apiserver merges its
/// client CA into the one it finds, so it would go on trusting the CA of the environment that
/// took the snapshot. It writes the ConfigMap again with its own CA only.
async fn forget_the_snapshots_ca(client: &kube::Client) -> Result<(), Error> {
    let config_maps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client.clone(), "kube-system");
    match config_maps.delete("extension-apiserver-authentication", &Default::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(Error::Kube { what: "deleting the restored authentication ConfigMap".into(), source }),
    }
}

/// The snapshot that `options.crds` may start from (see [`Options::crds`]).
fn crd_snapshot(assets: &Assets, options: &Options) -> Option<snapshot::Snapshot> {
    let encrypted = options.extra_apiserver_args.iter().any(|a| a.starts_with("--encryption-provider-config"));
    if options.crds.is_empty() || encrypted {
        return None;
    }
    // What the API server stores at bootstrap depends on the service range (the `kubernetes`
    // Service's address, the range allocation); the other flags tests pass do not change it.
    let service_range = options
        .extra_apiserver_args
        .iter()
        .rev()
        .find_map(|a| a.strip_prefix("--service-cluster-ip-range="))
        .unwrap_or(SERVICE_RANGE);
    snapshot::Snapshot::for_crds(assets, &options.crds, service_range)
}

/// A running etcd + kube-apiserver (+ kube-controller-manager).
#[derive(Debug)]
pub struct TestEnv {
    // Field order is drop order: controller-manager and apiserver stop before etcd, and the
    // directory goes last.
    controller_manager: Option<ProcessGuard>,
    apiserver: ProcessGuard,
    etcd: ProcessGuard,
    etcd_url: String,
    server_url: String,
    kubeconfig: Kubeconfig,
    kubeconfig_path: PathBuf,
    ca_pem: String,
    from_snapshot: bool,
    dir: tempfile::TempDir,
}

impl TestEnv {
    /// Starts etcd and kube-apiserver and waits until `/readyz` answers.
    pub async fn start() -> Result<Self, Error> {
        Self::start_with(Options::default()).await
    }

    /// Starts a control plane with the given options.
    pub async fn start_with(options: Options) -> Result<Self, Error> {
        let assets = Assets::from_env()?;
        let mut last = None;
        for _ in 0..START_ATTEMPTS {
            match Self::try_start(&assets, &options).await {
                Ok(env) => return Ok(env),
                Err(e @ Error::Exited { .. }) if e.to_string().contains("address already in use") => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::MissingAssets("no start attempt was made".into())))
    }

    async fn try_start(assets: &Assets, options: &Options) -> Result<Self, Error> {
        let host = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let dir = tempfile::Builder::new()
            .prefix("testenv-")
            .tempdir()
            .map_err(|source| Error::Io { what: "creating the test environment directory".into(), source })?;
        let material = certs::generate(host)?;
        let files = write_material(dir.path(), &material)?;

        let etcd_client = free_port(host)?;
        let etcd_peer = free_port(host)?;
        let etcd_url = format!("http://{host}:{etcd_client}");
        let snapshot = crd_snapshot(assets, options);
        let data_dir = dir.path().join("etcd");
        let restored = snapshot.as_ref().is_some_and(|s| s.restore(&data_dir, &format!("http://{host}:{etcd_peer}")));
        let etcd_args = vec![
            format!("--data-dir={}", data_dir.display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls=http://{host}:{etcd_peer}"),
            format!("--initial-advertise-peer-urls=http://{host}:{etcd_peer}"),
            format!("--initial-cluster=default=http://{host}:{etcd_peer}"),
            "--unsafe-no-fsync=true".into(),
            "--log-level=warn".into(),
            "--logger=zap".into(),
        ];
        let mut etcd = ProcessGuard::spawn("etcd", &assets.etcd, &etcd_args, dir.path())?;

        let insecure_ports = assets::has_insecure_ports(assets.minor_version()?);
        let secure_port = free_port(host)?;
        let mut apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            format!("--bind-address={host}"),
            format!("--advertise-address={host}"),
            format!("--secure-port={secure_port}"),
            format!("--cert-dir={}", dir.path().join("apiserver-certs").display()),
            format!("--tls-cert-file={}", files.serving_cert.display()),
            format!("--tls-private-key-file={}", files.serving_key.display()),
            format!("--client-ca-file={}", files.ca_cert.display()),
            format!("--service-cluster-ip-range={SERVICE_RANGE}"),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", files.sa_public.display()),
            format!("--service-account-signing-key-file={}", files.sa_private.display()),
            "--disable-admission-plugins=ServiceAccount".into(),
            "--allow-privileged=true".into(),
            "--enable-priority-and-fairness=false".into(),
            "--profiling=false".into(),
            runtime_config(),
        ];
        if insecure_ports {
            apiserver_args.push("--insecure-port=0".into());
        }
        // kube-apiserver appends repeated list flags, so an `--authorization-mode` among the
        // extra flags replaces the default instead of following it.
        if !options.extra_apiserver_args.iter().any(|a| a.starts_with("--authorization-mode=")) {
            apiserver_args.push("--authorization-mode=RBAC".into());
        }
        apiserver_args.extend(options.extra_apiserver_args.iter().cloned());
        let mut apiserver = ProcessGuard::spawn("kube-apiserver", &assets.kube_apiserver, &apiserver_args, dir.path())?;

        let server_url = format!("https://{host}:{secure_port}");
        let kubeconfig = admin_kubeconfig(&server_url, &material);
        let kubeconfig_path = dir.path().join("kubeconfig");
        let yaml = serde_yaml::to_string(&kubeconfig).map_err(|e| Error::Kubeconfig(Box::new(e)))?;
        std::fs::write(&kubeconfig_path, yaml)
            .map_err(|source| Error::Io { what: format!("writing {}", kubeconfig_path.display()), source })?;

        let client = client_from(&kubeconfig).await?;
        wait_ready(&client, &mut etcd, &mut apiserver).await?;
        crds_served(&client, &options.crds, restored, snapshot.as_ref(), &etcd_url).await?;

        let controller_manager = if options.controller_manager {
            let mut args = vec![
                format!("--kubeconfig={}", kubeconfig_path.display()),
                "--leader-elect=false".into(),
                "--secure-port=0".into(),
                format!(
                    "--controllers={}",
                    options
                        .controllers
                        .as_ref()
                        .map(|c| c.join(","))
                        .unwrap_or_else(|| DEFAULT_CONTROLLERS.to_string())
                ),
                format!("--service-account-private-key-file={}", files.sa_private.display()),
                format!("--root-ca-file={}", files.ca_cert.display()),
                format!("--cluster-signing-cert-file={}", files.ca_cert.display()),
                format!("--cluster-signing-key-file={}", files.ca_key.display()),
                "--use-service-account-credentials=false".into(),
                "--concurrent-gc-syncs=5".into(),
                "--namespace-sync-period=1s".into(),
            ];
            if insecure_ports {
                args.push("--port=0".into());
            }
            let mut kcm =
                ProcessGuard::spawn("kube-controller-manager", &assets.kube_controller_manager, &args, dir.path())?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            kcm.check_alive()?;
            Some(kcm)
        } else {
            None
        };

        Ok(Self {
            controller_manager,
            apiserver,
            etcd,
            etcd_url,
            server_url,
            kubeconfig,
            kubeconfig_path,
            ca_pem: material.ca_cert.clone(),
            from_snapshot: restored,
            dir,
        })
    }

    /// Whether etcd started from the snapshot of [`Options::crds`] (else they were installed).
    pub fn started_from_snapshot(&self) -> bool {
        self.from_snapshot
    }

    /// A new client with admin (`system:masters`) credentials.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        client_from(&self.kubeconfig).await
    }

    /// A client that acts as the ServiceAccount `namespace/name` (impersonation by the admin,
    /// with the groups the apiserver gives a service account token), so a component's
    /// controllers run with exactly the RBAC bound to its ServiceAccount.
    pub async fn client_as_service_account(&self, namespace: &str, name: &str) -> Result<kube::Client, Error> {
        let mut config = kube::Config::from_custom_kubeconfig(self.kubeconfig.clone(), &KubeConfigOptions::default())
            .await
            .map_err(|e| Error::Kubeconfig(Box::new(e)))?;
        config.auth_info.impersonate = Some(format!("system:serviceaccount:{namespace}:{name}"));
        config.auth_info.impersonate_groups = Some(vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
            "system:authenticated".into(),
        ]);
        kube::Client::try_from(config).map_err(|e| Error::Kubeconfig(Box::new(e)))
    }

    /// A client certificate and key (PEM) for another user, signed by the environment's CA, so
    /// that processes under test show as themselves in the API server's audit log and metrics
    /// (`group` `system:masters` gives it admin rights without RBAC).
    pub fn client_certificate(&self, user: &str, group: Option<&str>) -> Result<(String, String), Error> {
        let path = self.dir.path().join("ca.key");
        let ca_key = std::fs::read_to_string(&path)
            .map_err(|source| Error::Io { what: format!("reading {}", path.display()), source })?;
        certs::client(&self.ca_pem, &ca_key, user, group)
    }

    /// A kubeconfig like the admin's, but authenticating as `user` in `group` (see
    /// [`TestEnv::client_certificate`]).
    pub fn kubeconfig_for(&self, user: &str, group: Option<&str>) -> Result<Kubeconfig, Error> {
        let (cert, key) = self.client_certificate(user, group)?;
        let yaml = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: testenv\nclusters:\n- name: testenv\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\ncontexts:\n- name: testenv\n  context:\n    cluster: testenv\n    user: {user}\nusers:\n- name: {user}\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\n",
            server = self.server_url,
            ca = B64.encode(&self.ca_pem),
            cert = B64.encode(&cert),
            key = B64.encode(&key),
        );
        Kubeconfig::from_yaml(&yaml).map_err(|e| Error::Kubeconfig(Box::new(e)))
    }

    /// The admin kubeconfig (certificates embedded).
    pub fn kubeconfig(&self) -> &Kubeconfig {
        &self.kubeconfig
    }

    /// The admin kubeconfig as a file, for tools and for processes under test.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// etcd's client URL (`http://127.0.0.1:<port>`; plain HTTP on loopback, no client
    /// certificate), for tests that read what kube-apiserver stored, e.g. with
    /// `ETCDCTL_API=3 etcdctl --endpoints=<url> get /registry/...` (etcdctl is in the assets
    /// directory).
    pub fn etcd_url(&self) -> &str {
        &self.etcd_url
    }

    /// The CA that signed the serving certificate and the admin client certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The environment's working directory (logs, certificates, etcd data).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Process IDs of etcd, kube-apiserver and (if running) kube-controller-manager.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids = vec![self.etcd.pid(), self.apiserver.pid()];
        pids.extend(self.controller_manager.as_ref().map(ProcessGuard::pid));
        pids
    }

    /// Whether kube-controller-manager runs in this environment.
    pub fn has_controller_manager(&self) -> bool {
        self.controller_manager.is_some()
    }
}

struct Files {
    ca_cert: PathBuf,
    ca_key: PathBuf,
    serving_cert: PathBuf,
    serving_key: PathBuf,
    sa_public: PathBuf,
    sa_private: PathBuf,
}

fn write_material(dir: &Path, m: &Material) -> Result<Files, Error> {
    let write = |name: &str, content: &str| -> Result<PathBuf, Error> {
        let path = dir.join(name);
        std::fs::write(&path, content)
            .map_err(|source| Error::Io { what: format!("writing {}", path.display()), source })?;
        Ok(path)
    };
    Ok(Files {
        ca_cert: write("ca.crt", &m.ca_cert)?,
        ca_key: write("ca.key", &m.ca_key)?,
        serving_cert: write("apiserver.crt", &m.serving_cert)?,
        serving_key: write("apiserver.key", &m.serving_key)?,
        sa_public: write("sa.pub", &m.sa_public)?,
        sa_private: write("sa.key", &m.sa_private)?,
    })
}

fn admin_kubeconfig(server: &str, m: &Material) -> Kubeconfig {
    let yaml = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: testenv\nclusters:\n- name: testenv\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\ncontexts:\n- name: testenv\n  context:\n    cluster: testenv\n    user: admin\nusers:\n- name: admin\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\n",
        ca = B64.encode(&m.ca_cert),
        cert = B64.encode(&m.admin_cert),
        key = B64.encode(&m.admin_key),
    );
    // The text above is fixed apart from base64 values and a URL, so it always parses.
    Kubeconfig::from_yaml(&yaml).unwrap_or_default()
}

/// Builds a client from a kubeconfig (TLS verification on).
pub async fn client_from(kubeconfig: &Kubeconfig) -> Result<kube::Client, Error> {
    let config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &KubeConfigOptions::default())
        .await
        .map_err(|e| Error::Kubeconfig(Box::new(e)))?;
    kube::Client::try_from(config).map_err(|e| Error::Kubeconfig(Box::new(e)))
}

/// Picks a currently free TCP port on `host` (it may be taken again before it is used; callers
/// retry on "address already in use").
pub fn free_port(host: IpAddr) -> Result<u16, Error> {
    let listener = TcpListener::bind((host, 0))
        .map_err(|source| Error::Io { what: format!("finding a free port on {host}"), source })?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|source| Error::Io { what: "reading the bound port".into(), source })
}

async fn wait_ready(client: &kube::Client, etcd: &mut ProcessGuard, apiserver: &mut ProcessGuard) -> Result<(), Error> {
    wait_until_ready(client, &mut [etcd, apiserver], STARTUP_TIMEOUT).await
}

/// Waits until `/readyz` answers `ok` through `client`, failing early when one of `processes`
/// exits. On timeout the error carries the log tail of the last process (the kube-apiserver,
/// by convention).
/// `/readyz` can answer before the apiserver's bootstrap controller has created the `default`
/// namespace; tests that write there right away would fail. A client not allowed to read it
/// (401/403) cannot tell and does not wait for it.
async fn default_namespace_exists(client: &kube::Client) -> bool {
    let Ok(request) = http::Request::get("/api/v1/namespaces/default").body(Vec::new()) else { return false };
    match client.request_text(request).await {
        Ok(_) => true,
        Err(kube::Error::Api(s)) => s.code == 401 || s.code == 403,
        Err(_) => false,
    }
}

pub async fn wait_until_ready(
    client: &kube::Client,
    processes: &mut [&mut Process],
    timeout: Duration,
) -> Result<(), Error> {
    let started = Instant::now();
    loop {
        for process in processes.iter_mut() {
            process.check_alive()?;
        }
        let request = http::Request::get("/readyz").body(Vec::new());
        if let Ok(request) = request
            && let Ok(body) = client.request_text(request).await
            && body.trim() == "ok"
            && default_namespace_exists(client).await
        {
            return Ok(());
        }
        if started.elapsed() > timeout {
            return Err(Error::NotReady {
                what: "kube-apiserver /readyz".into(),
                timeout,
                log_tail: processes.last().map(|p| p.log_tail()).unwrap_or_default(),
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
