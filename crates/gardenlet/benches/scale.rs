//! gardenlet at scale: many shoots on one real garden API server, counted by the API server.
//!
//! `cargo bench -p gardenlet --bench scale`, configured by environment variables:
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `SHOOTS` | 100 | shoots per seed |
//! | `SEEDS` | 1 | seeds (`local`, `local-2`, ...), each with its own gardenlet process |
//! | `STEADY_SECONDS` | 180 | length of each steady-state window |
//! | `SETTLE_SECONDS` | 30 | pause between all `Succeeded` and the first window |
//! | `RESYNC_SECONDS` | 60 | `shootSyncPeriodSeconds` of the second window (the first runs the default) |
//! | `RESTART_SECONDS` | 90 | the restart phase's length at most |
//! | `CARE_SECONDS` | 60 | `shootCarePeriodSeconds` (the default) |
//! | `SYNCS` | 50 | `shootConcurrentSyncs` |
//! | `RESTART_SYNCS` | `SYNCS` | `shootConcurrentSyncs` after the restart (5 is gardenlet's default) |
//! | `CARE_SYNCS` | 5 | `shootCareConcurrentSyncs` (the default) |
//! | `CREATE_CONCURRENCY` | 20 | Shoot creations in flight |
//! | `TIMEOUT_MINUTES` | 40 | creation must finish within this |
//!
//! One testenv control plane (etcd, kube-apiserver, a namespace/GC kube-controller-manager) is
//! garden and seed at once. Its kube-apiserver writes an audit log (level `Metadata`, JSON);
//! every gardenlet authenticates with its own client certificate (user `gardenlet-<seed>`,
//! group `system:masters`), so the audit log tells its requests apart from everything the
//! bench process does (user `testenv-admin`: the test actuators, the workload simulator,
//! the bench's polling, and the kube-controller-manager).
//!
//! The simulator here is a light one: it marks the control-plane Deployments and StatefulSets
//! rolled out and gives LoadBalancer Services a loopback address, but starts no etcd and no
//! kube-apiserver per shoot. Instead one shared stand-in shoot API (a second testenv
//! kube-apiserver) serves every shoot: for each shoot a TLS relay in this process listens on
//! the shoot's load-balancer address, port 443, with the serving certificate gardenlet
//! generated for the shoot's kube-apiserver, and forwards the bytes to the shared API server
//! (authenticated there as admin). So gardenlet's steps against the shoot's API run for real,
//! all against one API server.
//!
//! Phases (requests are attributed by the audit event's `requestReceivedTimestamp`):
//! 1. creation: all shoots created (bounded concurrency), until every one is `Succeeded`;
//! 2. settle (`SETTLE_SECONDS`);
//! 3. window A (`STEADY_SECONDS`): default resync (1 h, so no shoot is due: only care runs);
//! 4. restart: every gardenlet restarted with `shootSyncPeriodSeconds=RESYNC_SECONDS`; every
//!    shoot is due at once; until each shoot's last operation is newer than the restart, or
//!    `RESTART_SECONDS` (default 90; a resync of an unchanged shoot need not write it);
//! 5. window B (`STEADY_SECONDS`): care and resync.
//!
//! Per care cycle = A / (shoots × windows of the care period in A); per resync cycle =
//! (B − A) / (shoots × resync periods in B). Per shoot per hour at the default settings
//! (resync 3600 s, care 60 s) = 60 × care cycle + 1 × resync cycle.
//!
//! Under `cargo test`/nextest (no `--bench` argument) it does nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // measurement harness: a panic is the report

#[path = "common/proc.rs"]
mod proc;
#[path = "../tests/support/mod.rs"]
mod support;

use api::core::Shoot;
use api::extensions as ext;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use proc::{cpu_seconds, rss_kib};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::actuators::{TestActuator, spawn_controller};

const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: NAME\n  namespace: garden-dev\n  labels:\n    name.seed.gardener.cloud/SEED: \"true\"\nspec:\n  seedName: SEED\n  region: local\n  provider:\n    type: local\n    workers:\n    - name: pool\n      minimum: 1\n      maximum: 2\n      machine:\n        type: local\n        image:\n          name: local\n          version: 1.0.0\n  kubernetes:\n    version: 1.20.2\n  networking:\n    type: local-net\n    pods: 10.96.0.0/11\n    services: 10.112.0.0/13\n";

const AUDIT_POLICY: &str =
    "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n";

const VERBS: [&str; 8] = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"];
const WRITES: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];
/// Per-seed objects: gardenlet's own heartbeat, not per shoot.
const PER_SEED: [&str; 3] = ["leases", "seeds", "seeds/status"];

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(20)..];
    tail.iter().map(|l| l.chars().take(300).collect::<String>()).collect::<Vec<_>>().join("\n")
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

// ---------------------------------------------------------------------------------------------
// The shared stand-in shoot API and the light workload simulator.

/// Where the relays forward to: the shared stand-in kube-apiserver, as admin.
struct Upstream {
    address: SocketAddr,
    tls: tokio_rustls::TlsConnector,
    /// TLS connections accepted by all relays (gardenlet builds a client per shoot and use).
    connections: AtomicU64,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Upstream {
    fn new(env: &testenv::TestEnv) -> Self {
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
}

/// Listens on `address:443` with the shoot's kube-apiserver serving certificate and relays
/// every connection to the shared API server.
async fn start_relay(
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

/// Plays kubelet and cloud load-balancer controller: control-plane Deployments and
/// StatefulSets rolled out, LoadBalancer Services with a loopback ingress address; a shoot's
/// kube-apiserver Deployment is rolled out once its relay listens.
#[derive(Clone)]
struct LightSimulator {
    addresses: Arc<Mutex<BTreeMap<String, Ipv4Addr>>>,
    relays: Arc<tokio::sync::Mutex<BTreeMap<String, tokio::task::JoinHandle<()>>>>,
    upstream: Arc<Upstream>,
}

impl LightSimulator {
    fn address(&self, namespace: &str) -> Ipv4Addr {
        let mut addresses = self.addresses.lock().unwrap();
        if let Some(a) = addresses.get(namespace) {
            return *a;
        }
        let mut a = support::simulator::loopback_address();
        while addresses.values().any(|x| *x == a) {
            a = support::simulator::loopback_address();
        }
        addresses.insert(namespace.to_string(), a);
        a
    }

    fn spawn(&self, client: kube::Client) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            tokio::join!(
                this.clone().deployments(client.clone()),
                this.clone().statefulsets(client.clone()),
                this.clone().services(client)
            );
        })
    }

    async fn deployments(self, client: kube::Client) {
        let api: Api<Deployment> = Api::all(client.clone());
        let config = watcher::Config::default().labels("gardener.cloud/role=controlplane");
        let mut stream = std::pin::pin!(watcher::watcher(api, config).default_backoff().applied_objects());
        while let Some(item) = stream.next().await {
            let Ok(d) = item else { continue };
            let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            let status = d.status.clone().unwrap_or_default();
            if status.observed_generation == d.metadata.generation && status.available_replicas == Some(want) {
                continue;
            }
            let (this, client) = (self.clone(), client.clone());
            tokio::spawn(async move {
                let ns = d.namespace().unwrap_or_default();
                if d.name_any() == "kube-apiserver" && want > 0 {
                    let mut relays = this.relays.lock().await;
                    let mut attempt = 0;
                    while !relays.contains_key(&ns) {
                        match start_relay(&client, &ns, this.address(&ns), this.upstream.clone()).await {
                            Ok(task) => {
                                relays.insert(ns.clone(), task);
                            }
                            Err(e) if attempt < 10 => {
                                attempt += 1;
                                eprintln!("simulator: relay for {ns} (attempt {attempt}): {e}");
                                tokio::time::sleep(Duration::from_millis(500)).await;
                            }
                            Err(e) => return eprintln!("simulator: no relay for {ns}: {e}"),
                        }
                    }
                }
                let patch = json!({"status": {"observedGeneration": d.metadata.generation, "replicas": want,
                    "updatedReplicas": want, "readyReplicas": want, "availableReplicas": want}});
                let api: Api<Deployment> = Api::namespaced(client, &ns);
                let _ = api.patch_status(&d.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await;
            });
        }
    }

    async fn statefulsets(self, client: kube::Client) {
        let api: Api<StatefulSet> = Api::all(client.clone());
        let config = watcher::Config::default().labels("gardener.cloud/role=controlplane");
        let mut stream = std::pin::pin!(watcher::watcher(api, config).default_backoff().applied_objects());
        while let Some(item) = stream.next().await {
            let Ok(s) = item else { continue };
            let want = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            let status = s.status.clone().unwrap_or_default();
            if status.observed_generation == s.metadata.generation && status.ready_replicas == Some(want) {
                continue;
            }
            let patch = json!({"status": {"observedGeneration": s.metadata.generation, "replicas": want,
                "readyReplicas": want, "updatedReplicas": want, "currentReplicas": want, "availableReplicas": want}});
            let api: Api<StatefulSet> = Api::namespaced(client.clone(), &s.namespace().unwrap_or_default());
            let _ = api.patch_status(&s.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await;
        }
    }

    async fn services(self, client: kube::Client) {
        let api: Api<Service> = Api::all(client.clone());
        let mut stream =
            std::pin::pin!(watcher::watcher(api, watcher::Config::default()).default_backoff().applied_objects());
        while let Some(item) = stream.next().await {
            let Ok(s) = item else { continue };
            let is_lb = s.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("LoadBalancer");
            let has_ingress = s
                .status
                .as_ref()
                .and_then(|s| s.load_balancer.as_ref())
                .and_then(|l| l.ingress.as_ref())
                .is_some_and(|i| !i.is_empty());
            if !is_lb || has_ingress {
                continue;
            }
            let address = self.address(&s.namespace().unwrap_or_default());
            let patch = json!({"status": {"loadBalancer": {"ingress": [{"ip": address.to_string()}]}}});
            let api: Api<Service> = Api::namespaced(client.clone(), &s.namespace().unwrap_or_default());
            let _ = api.patch_status(&s.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// gardenlet processes.

struct Gardenlet {
    seed: String,
    port: u16,
    kubeconfig: PathBuf,
    dir: PathBuf,
    child: std::process::Child,
}

impl Gardenlet {
    fn start(seed: &str, index: usize, kubeconfig: &Path, dir: &Path, resync: u64, care: u64) -> Self {
        let port = testenv::free_port(Ipv4Addr::LOCALHOST.into()).unwrap();
        let syncs = env_or("SYNCS", 50);
        let child = spawn_gardenlet(seed, index, kubeconfig, dir, port, (resync, care, syncs));
        Self { seed: seed.to_string(), port, kubeconfig: kubeconfig.to_path_buf(), dir: dir.to_path_buf(), child }
    }

    /// Stops the process and starts it again with other periods.
    fn restart(&mut self, index: usize, resync: u64, care: u64) {
        self.stop();
        let syncs = env_or("RESTART_SYNCS", env_or("SYNCS", 50));
        self.child = spawn_gardenlet(&self.seed, index, &self.kubeconfig, &self.dir, self.port, (resync, care, syncs));
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The `/metrics` text (plain HTTP/1.0 on loopback).
    async fn metrics(&self) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let Ok(mut s) = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).await else {
            return String::new();
        };
        let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").await;
        let mut out = String::new();
        let _ = s.read_to_string(&mut out).await;
        out
    }
}

/// Also when the bench panics: no gardenlet outlives it.
impl Drop for Gardenlet {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn_gardenlet(
    seed: &str,
    index: usize,
    kubeconfig: &Path,
    dir: &Path,
    port: u16,
    (resync, care, syncs): (u64, u64, u16),
) -> std::process::Child {
    let care_syncs: u16 = env_or("CARE_SYNCS", 5);
    let config = dir.join(format!("gardenlet-{seed}.yaml"));
    std::fs::write(
        &config,
        format!(
            "gardenKubeconfig: {}\nseed:\n  name: {seed}\n  capacityShoots: 1000\n  spec:\n    provider: {{type: local, region: local}}\n    networks: {{pods: 10.{}.0.0/16, services: 10.{}.0.0/16}}\nkubeApiserverServiceType: LoadBalancer\ncontrollers:\n  shootConcurrentSyncs: {syncs}\n  shootSyncPeriodSeconds: {resync}\n  shootCarePeriodSeconds: {care}\n  shootCareConcurrentSyncs: {care_syncs}\n",
            kubeconfig.display(),
            1 + 2 * index,
            2 + 2 * index,
        ),
    )
    .unwrap();
    let log =
        std::fs::OpenOptions::new().create(true).append(true).open(dir.join(format!("gardenlet-{seed}.log"))).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_gardenlet"))
        .args([
            "--config",
            &config.display().to_string(),
            "--metrics-bind-address",
            &format!("127.0.0.1:{port}"),
            "--leader-election=false",
        ])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// Peak RSS per gardenlet, sampled every 250 ms; `take` returns and resets the peaks.
#[derive(Clone, Default)]
struct RssSampler {
    pids: Arc<Mutex<Vec<u32>>>,
    peaks: Arc<Mutex<Vec<u64>>>,
}

impl RssSampler {
    fn spawn(&self) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                let pids = this.pids.lock().unwrap().clone();
                {
                    let mut peaks = this.peaks.lock().unwrap();
                    peaks.resize(pids.len(), 0);
                    for (peak, pid) in peaks.iter_mut().zip(&pids) {
                        *peak = (*peak).max(rss_kib(*pid));
                    }
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    }

    fn take(&self) -> Vec<u64> {
        let mut peaks = self.peaks.lock().unwrap();
        let out = peaks.clone();
        peaks.iter_mut().for_each(|p| *p = 0);
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Phases, CPU, and the audit log.

/// CPU seconds of the processes that matter, at one moment.
#[derive(Clone, Debug, Default)]
struct Cpu {
    gardenlets: Vec<f64>,
    apiserver: f64,
    etcd: f64,
    kcm: f64,
    bench: f64,
    standin: f64,
}

impl Cpu {
    fn now(gardenlets: &[Gardenlet], garden: &testenv::TestEnv, standin: &testenv::TestEnv) -> Self {
        let pids = garden.pids();
        Self {
            gardenlets: gardenlets.iter().map(|g| cpu_seconds(g.pid())).collect(),
            etcd: cpu_seconds(pids[0]),
            apiserver: cpu_seconds(pids[1]),
            kcm: pids.get(2).map(|p| cpu_seconds(*p)).unwrap_or_default(),
            bench: cpu_seconds(std::process::id()),
            standin: standin.pids().iter().map(|p| cpu_seconds(*p)).sum(),
        }
    }

    fn since(&self, earlier: &Cpu) -> Cpu {
        Cpu {
            gardenlets: self.gardenlets.iter().zip(&earlier.gardenlets).map(|(a, b)| a - b).collect(),
            apiserver: self.apiserver - earlier.apiserver,
            etcd: self.etcd - earlier.etcd,
            kcm: self.kcm - earlier.kcm,
            bench: self.bench - earlier.bench,
            standin: self.standin - earlier.standin,
        }
    }
}

struct Phase {
    name: &'static str,
    start: Timestamp,
    end: Timestamp,
    seconds: f64,
    cpu: Cpu,
    peak_rss: Vec<u64>,
    relay_connections: u64,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuditEvent {
    stage: String,
    verb: String,
    user: AuditUser,
    user_agent: Option<String>,
    object_ref: Option<AuditObject>,
    request_received_timestamp: String,
}

#[derive(serde::Deserialize)]
struct AuditUser {
    username: String,
}

#[derive(serde::Deserialize)]
struct AuditObject {
    resource: Option<String>,
    subresource: Option<String>,
}

/// Requests per phase: (phase, user, verb, resource) -> count.
type Counts = BTreeMap<(usize, String, String, String), u64>;

/// Every request once: the `ResponseComplete` (or `Panic`) event, for a watch the
/// `ResponseStarted` event (a watch completes only when it ends), by its received time.
fn read_audit(path: &Path, phases: &[Phase]) -> (Counts, u64) {
    let file = std::fs::File::open(path).unwrap();
    let mut counts = Counts::new();
    let mut outside = 0;
    for line in std::io::BufReader::new(file).lines() {
        let line = line.unwrap();
        let Ok(e) = serde_json::from_str::<AuditEvent>(&line) else { continue };
        let counted = match e.stage.as_str() {
            "ResponseStarted" => e.verb == "watch",
            "ResponseComplete" => e.verb != "watch",
            "Panic" => true,
            _ => false,
        };
        if !counted {
            continue;
        }
        let Ok(at) = e.request_received_timestamp.parse::<Timestamp>() else { continue };
        let Some(phase) = phases.iter().position(|p| p.start <= at && at < p.end) else {
            outside += 1;
            continue;
        };
        let resource = match &e.object_ref {
            Some(AuditObject { resource: Some(r), subresource: Some(s) }) => format!("{r}/{s}"),
            Some(AuditObject { resource: Some(r), subresource: None }) => r.clone(),
            _ => "(non-resource)".to_string(),
        };
        // The bench process and kube-controller-manager share the admin certificate.
        let user = match e.user.username.as_str() {
            u if is_gardenlet(u) => e.user.username,
            _ if e.user_agent.as_deref().is_some_and(|a| a.starts_with("kube-controller-manager")) => {
                "kube-controller-manager".to_string()
            }
            "testenv-admin" => "bench".to_string(),
            _ => e.user.username,
        };
        *counts.entry((phase, user, e.verb, resource)).or_default() += 1;
    }
    (counts, outside)
}

fn is_gardenlet(user: &str) -> bool {
    user.starts_with("gardenlet-")
}

/// Sums of the counts of one phase whose user and resource match.
fn by_verb(counts: &Counts, phase: usize, user: impl Fn(&str) -> bool, resource: impl Fn(&str) -> bool) -> Vec<u64> {
    VERBS
        .iter()
        .map(|v| {
            counts
                .iter()
                .filter(|((p, u, verb, r), _)| *p == phase && user(u) && verb == v && resource(r))
                .map(|(_, n)| n)
                .sum()
        })
        .collect()
}

fn reads_writes(v: &[u64]) -> (u64, u64) {
    let reads = VERBS.iter().zip(v).filter(|(verb, _)| !WRITES.contains(verb)).map(|(_, n)| n).sum();
    let writes = VERBS.iter().zip(v).filter(|(verb, _)| WRITES.contains(verb)).map(|(_, n)| n).sum();
    (reads, writes)
}

fn verb_row(label: &str, v: &[u64], divisor: f64) -> String {
    let (r, w) = reads_writes(v);
    let mut row = format!("  {label:<34}");
    for n in v {
        row += &format!(" {:>8.2}", *n as f64 / divisor);
    }
    row + &format!(" | {:>8.2} {:>8.2}", r as f64 / divisor, w as f64 / divisor)
}

fn verb_header() -> String {
    let mut row = format!("  {:<34}", "");
    for v in VERBS {
        row += &format!(" {:>8}", if v == "deletecollection" { "delcoll" } else { v });
    }
    row + &format!(" | {:>8} {:>8}", "reads", "writes")
}

/// The `top` (user class, verb, resource) of a phase, most requests first.
fn top(counts: &Counts, phase: usize, gardenlet: bool, n: usize) -> Vec<(u64, String, String)> {
    let mut sums: BTreeMap<(String, String), u64> = BTreeMap::new();
    for ((p, u, verb, r), c) in counts {
        if *p == phase && is_gardenlet(u) == gardenlet {
            *sums.entry((verb.clone(), r.clone())).or_default() += c;
        }
    }
    let mut v: Vec<_> = sums.into_iter().map(|((verb, r), c)| (c, verb, r)).collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.0));
    v.truncate(n);
    v
}

// ---------------------------------------------------------------------------------------------

struct Ctx<'a> {
    garden: &'a testenv::TestEnv,
    standin: &'a testenv::TestEnv,
    sampler: &'a RssSampler,
    upstream: &'a Upstream,
}

/// A phase that only waits `seconds`.
async fn window(name: &'static str, seconds: u64, gardenlets: &[Gardenlet], ctx: &Ctx<'_>) -> Phase {
    let start = Timestamp::now();
    let cpu0 = Cpu::now(gardenlets, ctx.garden, ctx.standin);
    let conn0 = ctx.upstream.connections.load(Ordering::Relaxed);
    ctx.sampler.take();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    Phase {
        name,
        start,
        end: Timestamp::now(),
        seconds: seconds as f64,
        cpu: Cpu::now(gardenlets, ctx.garden, ctx.standin).since(&cpu0),
        peak_rss: ctx.sampler.take(),
        relay_connections: ctx.upstream.connections.load(Ordering::Relaxed) - conn0,
    }
}

/// The conditions the care controller changed since `since`, counted by what they say now
/// (type, status, reason, the start of the message): in a quiet window there should be none.
async fn condition_changes(shoots: &Api<Shoot>, since: Timestamp) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let Ok(list) = shoots.list(&Default::default()).await else { return out };
    for shoot in &list.items {
        for c in shoot.status.iter().flat_map(|s| s.conditions.iter()) {
            if c.last_update_time.0 >= since {
                let message: String = c.message.chars().take(100).collect();
                let key = format!("{} {:?} {}: {message}", c.type_, c.status, c.reason);
                *out.entry(key).or_default() += 1;
            }
        }
    }
    out
}

fn succeeded(s: &Shoot) -> bool {
    s.status
        .as_ref()
        .and_then(|st| st.last_operation.as_ref())
        .is_some_and(|l| l.state == api::common::LastOperationState::Succeeded && l.progress == 100)
}

fn seed_name(i: usize) -> String {
    if i == 0 { "local".to_string() } else { format!("local-{}", i + 1) }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // listed or run as a test: nothing to do
    }
    let per_seed: usize = env_or("SHOOTS", 100);
    let seeds: usize = env_or("SEEDS", 1);
    let steady: u64 = env_or("STEADY_SECONDS", 180);
    let settle: u64 = env_or("SETTLE_SECONDS", 30);
    let resync: u64 = env_or("RESYNC_SECONDS", 60);
    let care: u64 = env_or("CARE_SECONDS", 60);
    let concurrency: usize = env_or("CREATE_CONCURRENCY", 20);
    let timeout = Duration::from_secs(60 * env_or("TIMEOUT_MINUTES", 40));
    let total = per_seed * seeds;
    println!(
        "gardenlet at scale: {seeds} seed(s) x {per_seed} shoots = {total}; steady windows {steady} s; care {care} s; resync in window B {resync} s"
    );

    let work = tempfile::Builder::new().prefix("scale-bench-").tempdir().unwrap();
    let audit_policy = work.path().join("audit-policy.yaml");
    let audit_log = work.path().join("audit.log");
    std::fs::write(&audit_policy, AUDIT_POLICY).unwrap();
    let mut options = support::simulator::seed_options();
    // Every shoot takes a few cluster IPs in the seed: a /16 (the default /24 is full after
    // about 100 shoots). Nothing listens on them here.
    let range = format!("--service-cluster-ip-range=127.{}.0.0/16", fastrand::u8(250..255));
    options.extra_apiserver_args.extend([
        range,
        format!("--audit-policy-file={}", audit_policy.display()),
        format!("--audit-log-path={}", audit_log.display()),
        "--audit-log-format=json".into(),
        "--audit-log-maxsize=100000".into(),
        "--audit-log-maxbackup=1".into(),
    ]);
    let garden = testenv::TestEnv::start_with(options).await.unwrap();
    // The shoots' service range (the system components' Services take addresses from it).
    let standin = testenv::TestEnv::start_with(testenv::Options {
        extra_apiserver_args: vec!["--service-cluster-ip-range=10.112.0.0/13".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    let client = garden.client().await.unwrap();
    testenv::install_crds(&client, &api::crds::all()).await.unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "garden-dev"}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();

    // The actuators and the simulator serve every seed: they watch all namespaces, by type.
    let simulator = LightSimulator {
        addresses: Arc::default(),
        relays: Arc::default(),
        upstream: Arc::new(Upstream::new(&standin)),
    };
    let _tasks = [
        spawn_controller::<ext::Infrastructure>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::DNSRecord>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::ControlPlane>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::OperatingSystemConfig>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::Network>(client.clone(), &["local-net"], TestActuator::new()),
        spawn_controller::<ext::Worker>(client.clone(), &["local"], TestActuator::new()),
        simulator.spawn(client.clone()),
    ];

    let mut gardenlets: Vec<Gardenlet> = (0..seeds)
        .map(|i| {
            let seed = seed_name(i);
            let kubeconfig = work.path().join(format!("kubeconfig-gardenlet-{seed}"));
            let config = garden.kubeconfig_for(&format!("gardenlet-{seed}"), Some("system:masters")).unwrap();
            std::fs::write(&kubeconfig, serde_yaml::to_string(&config).unwrap()).unwrap();
            Gardenlet::start(&seed, i, &kubeconfig, work.path(), 3600, care)
        })
        .collect();
    let sampler = RssSampler::default();
    *sampler.pids.lock().unwrap() = gardenlets.iter().map(Gardenlet::pid).collect();
    let _sampler = sampler.spawn();
    let rss_after_start: Vec<u64> = {
        tokio::time::sleep(Duration::from_secs(5)).await;
        gardenlets.iter().map(|g| rss_kib(g.pid())).collect()
    };
    sampler.take();

    let mut phases: Vec<Phase> = Vec::new();
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), "garden-dev");

    // Phase 1: creation.
    let (start, cpu0, t0, conn0) = (
        Timestamp::now(),
        Cpu::now(&gardenlets, &garden, &standin),
        Instant::now(),
        simulator.upstream.connections.load(Ordering::Relaxed),
    );
    let names: Vec<(String, String)> =
        (0..seeds).flat_map(|s| (0..per_seed).map(move |i| (seed_name(s), format!("s{}-{i}", s + 1)))).collect();
    futures::stream::iter(names.clone())
        .map(|(seed, name)| {
            let shoots = shoots.clone();
            async move {
                let shoot: Shoot = serde_yaml::from_str(&SHOOT.replace("NAME", &name).replace("SEED", &seed)).unwrap();
                shoots.create(&PostParams::default(), &shoot).await.unwrap();
            }
        })
        .buffer_unordered(concurrency)
        .count()
        .await;
    let created_after = t0.elapsed();
    let mut done_at: BTreeMap<String, Duration> = BTreeMap::new();
    let mut last_report = Instant::now();
    loop {
        let list = shoots.list(&Default::default()).await.unwrap();
        let mut errors = 0;
        let mut example = String::new();
        for s in &list.items {
            let last = s.status.as_ref().and_then(|st| st.last_operation.as_ref());
            if succeeded(s) {
                done_at.entry(s.name_any()).or_insert_with(|| t0.elapsed());
            } else if let Some(l) = last.filter(|l| {
                matches!(l.state, api::common::LastOperationState::Error | api::common::LastOperationState::Failed)
            }) {
                errors += 1;
                example = format!("{}: {}", s.name_any(), l.description.chars().take(300).collect::<String>());
            }
        }
        if done_at.len() >= total {
            break;
        }
        if last_report.elapsed() > Duration::from_secs(30) {
            last_report = Instant::now();
            eprintln!(
                "  t={:>5.0} s: {}/{total} Succeeded, {errors} with an error, gardenlet RSS {:?} MiB",
                t0.elapsed().as_secs_f64(),
                done_at.len(),
                gardenlets.iter().map(|g| mib(rss_kib(g.pid())).round()).collect::<Vec<_>>()
            );
            if !example.is_empty() {
                eprintln!("    e.g. {example}");
            }
        }
        assert!(
            t0.elapsed() < timeout,
            "{}/{total} shoots Succeeded ({errors} with an error, e.g. {example}) after {timeout:?}; gardenlet log tail:\n{}",
            done_at.len(),
            log_tail(&work.path().join("gardenlet-local.log"))
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let creation = t0.elapsed();
    phases.push(Phase {
        name: "creation",
        start,
        end: Timestamp::now(),
        seconds: creation.as_secs_f64(),
        cpu: Cpu::now(&gardenlets, &garden, &standin).since(&cpu0),
        peak_rss: sampler.take(),
        relay_connections: simulator.upstream.connections.load(Ordering::Relaxed) - conn0,
    });
    let mut finish: Vec<f64> = done_at.values().map(Duration::as_secs_f64).collect();
    finish.sort_by(f64::total_cmp);

    let ctx = Ctx { garden: &garden, standin: &standin, sampler: &sampler, upstream: &simulator.upstream };
    phases.push(window("settle", settle, &gardenlets, &ctx).await);
    eprintln!("  window A ({steady} s, default resync, care {care} s)");
    phases.push(window("window A", steady, &gardenlets, &ctx).await);
    let care_changes = condition_changes(&shoots, phases[phases.len() - 1].start).await;

    // Restart with the short resync; wait for one resync pass.
    let (start, t_restart) = (Timestamp::now(), Instant::now());
    let cpu0 = Cpu::now(&gardenlets, &garden, &standin);
    let conn0 = simulator.upstream.connections.load(Ordering::Relaxed);
    for (i, g) in gardenlets.iter_mut().enumerate() {
        g.restart(i, resync, care);
    }
    *sampler.pids.lock().unwrap() = gardenlets.iter().map(Gardenlet::pid).collect();
    let mut resynced = 0;
    // A resync of an unchanged shoot need not write its last operation: wait until every
    // shoot's was updated, or RESTART_SECONDS (every shoot is due at once, so one resync pass).
    let restart_limit = Duration::from_secs(env_or("RESTART_SECONDS", 90));
    while t_restart.elapsed() < restart_limit {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let list = shoots.list(&Default::default()).await.unwrap();
        resynced = list
            .items
            .iter()
            .filter(|s| {
                succeeded(s)
                    && s.status
                        .as_ref()
                        .and_then(|st| st.last_operation.as_ref())
                        .is_some_and(|l| l.last_update_time.0 >= start)
            })
            .count();
        if resynced >= total {
            break;
        }
    }
    let restart_seconds = t_restart.elapsed().as_secs_f64();
    let mut restart_cpu = Cpu::now(&gardenlets, &garden, &standin).since(&cpu0);
    // The new processes started from 0.
    restart_cpu.gardenlets = gardenlets.iter().map(|g| cpu_seconds(g.pid())).collect();
    phases.push(Phase {
        name: "restart",
        start,
        end: Timestamp::now(),
        seconds: restart_seconds,
        cpu: restart_cpu,
        peak_rss: sampler.take(),
        relay_connections: simulator.upstream.connections.load(Ordering::Relaxed) - conn0,
    });
    eprintln!(
        "  restart: {resynced}/{total} shoots with a newer last operation after {restart_seconds:.0} s; window B ({steady} s)"
    );
    phases.push(window("window B", steady, &gardenlets, &ctx).await);
    let rss_end: Vec<u64> = gardenlets.iter().map(|g| rss_kib(g.pid())).collect();

    // Metrics of each gardenlet: anything about caches.
    let mut cache_metrics = Vec::new();
    for g in &gardenlets {
        let text = g.metrics().await;
        let lines: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with('#') && l.split(['{', ' ']).next().is_some_and(|n| n.contains("cache")))
            .map(str::to_string)
            .collect();
        cache_metrics.push((g.seed.clone(), lines));
    }
    for g in &mut gardenlets {
        g.stop();
    }
    tokio::time::sleep(Duration::from_secs(2)).await; // the last audit events are written

    let (counts, _outside) = read_audit(&audit_log, &phases);
    report(&Report {
        seeds,
        per_seed,
        total,
        care,
        resync,
        created_after,
        creation,
        finish: &finish,
        restart_resynced: resynced,
        rss_after_start: &rss_after_start,
        rss_end: &rss_end,
        phases: &phases,
        counts: &counts,
        cache_metrics: &cache_metrics,
        care_changes: &care_changes,
    });
}

struct Report<'a> {
    seeds: usize,
    per_seed: usize,
    total: usize,
    care: u64,
    resync: u64,
    created_after: Duration,
    creation: Duration,
    finish: &'a [f64],
    restart_resynced: usize,
    rss_after_start: &'a [u64],
    rss_end: &'a [u64],
    phases: &'a [Phase],
    counts: &'a Counts,
    cache_metrics: &'a [(String, Vec<String>)],
    /// Conditions changed since the start of window A (see [`condition_changes`]).
    care_changes: &'a BTreeMap<String, usize>,
}

fn report(r: &Report<'_>) {
    let n = r.total as f64;
    let quantile = |q: f64| r.finish[((r.finish.len() as f64 - 1.0) * q).round() as usize];
    let phase = |name: &str| r.phases.iter().position(|p| p.name == name).unwrap();
    let any = |_: &str| true;
    let per_shoot = |res: &str| !PER_SEED.contains(&res);
    let per_seed = |res: &str| PER_SEED.contains(&res);
    println!();
    println!("== {} seed(s) x {} shoots = {} shoots ==", r.seeds, r.per_seed, r.total);
    println!(
        "creation: all created after {:.1} s; all Succeeded after {:.1} s (shoots done: p50 {:.0} s, p90 {:.0} s, max {:.0} s)",
        r.created_after.as_secs_f64(),
        r.creation.as_secs_f64(),
        quantile(0.5),
        quantile(0.9),
        quantile(1.0)
    );
    println!();
    println!("CPU seconds and gardenlet peak RSS per phase:");
    println!(
        "  {:<9} {:>7} {:>10} {:>10} {:>8} {:>8} {:>8} {:>9} {:>8}  {:<}",
        "phase",
        "secs",
        "gardenlet",
        "apiserver",
        "etcd",
        "kcm",
        "bench",
        "shoot-API",
        "g.share",
        "peak RSS MiB per gardenlet"
    );
    for p in r.phases {
        let g: f64 = p.cpu.gardenlets.iter().sum();
        let share = 100.0 * g / (g + p.cpu.apiserver + p.cpu.etcd).max(1e-9);
        println!(
            "  {:<9} {:>7.1} {:>10.1} {:>10.1} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>7.0}%  {}",
            p.name,
            p.seconds,
            g,
            p.cpu.apiserver,
            p.cpu.etcd,
            p.cpu.kcm,
            p.cpu.bench,
            p.cpu.standin,
            share,
            p.peak_rss.iter().map(|k| format!("{:.1}", mib(*k))).collect::<Vec<_>>().join(" ")
        );
    }
    println!(
        "  (g.share: gardenlet / (gardenlet + garden kube-apiserver + etcd); bench = actuators, simulator, relays, polling; shoot-API = the shared stand-in; restart: gardenlet CPU of the new processes)"
    );
    println!(
        "  gardenlet RSS: {} MiB 5 s after start (no shoots), {} MiB at the end",
        r.rss_after_start.iter().map(|k| format!("{:.1}", mib(*k))).collect::<Vec<_>>().join(" "),
        r.rss_end.iter().map(|k| format!("{:.1}", mib(*k))).collect::<Vec<_>>().join(" ")
    );
    println!(
        "  TLS connections to shoot APIs (relay): {}",
        r.phases.iter().map(|p| format!("{} {}", p.name, p.relay_connections)).collect::<Vec<_>>().join(", ")
    );

    let c = phase("creation");
    println!();
    println!("garden API requests during creation, per shoot (audit log, all gardenlets):");
    println!("{}", verb_header());
    println!("{}", verb_row("gardenlet", &by_verb(r.counts, c, is_gardenlet, any), n));
    println!("{}", verb_row("  of which per-seed (leases, seeds)", &by_verb(r.counts, c, is_gardenlet, per_seed), n));
    println!("{}", verb_row("bench (actuators, simulator, polling)", &by_verb(r.counts, c, |u| u == "bench", any), n));
    println!(
        "{}",
        verb_row("everyone else (KCM, apiserver)", &by_verb(r.counts, c, |u| !is_gardenlet(u) && u != "bench", any), n)
    );
    println!("  gardenlet's top requests (total): {}", fmt_top(&top(r.counts, c, true, 12)));

    let (a, b) = (phase("window A"), phase("window B"));
    let (wa, wb) = (r.phases[a].seconds, r.phases[b].seconds);
    let cycles_a = wa / r.care as f64;
    let resyncs_b = wb / r.resync as f64;
    println!();
    println!("steady state (requests by gardenlets in the window, per shoot-related resources; leases/seeds apart):");
    println!("{}", verb_header());
    let va = by_verb(r.counts, a, is_gardenlet, per_shoot);
    let vb = by_verb(r.counts, b, is_gardenlet, per_shoot);
    println!("{}", verb_row(&format!("A: per shoot per care cycle ({cycles_a:.1})"), &va, n * cycles_a));
    println!("{}", verb_row("A: per shoot per hour", &va, n * wa / 3600.0));
    println!("{}", verb_row("B: per shoot per hour", &vb, n * wb / 3600.0));
    let resync_part: Vec<f64> =
        va.iter().zip(&vb).map(|(x, y)| (*y as f64 - *x as f64 * wb / wa) / (n * resyncs_b)).collect();
    let care_part: Vec<f64> = va.iter().map(|x| *x as f64 / (n * cycles_a)).collect();
    let row = |label: &str, v: &[f64]| {
        let mut s = format!("  {label:<34}");
        for x in v {
            s += &format!(" {x:>8.2}");
        }
        let reads: f64 = VERBS.iter().zip(v).filter(|(verb, _)| !WRITES.contains(verb)).map(|(_, x)| x).sum();
        let writes: f64 = VERBS.iter().zip(v).filter(|(verb, _)| WRITES.contains(verb)).map(|(_, x)| x).sum();
        s + &format!(" | {reads:>8.2} {writes:>8.2}")
    };
    println!("{}", row(&format!("B-A: per shoot per resync ({resyncs_b:.1})"), &resync_part));
    let hour: Vec<f64> = care_part.iter().zip(&resync_part).map(|(c, s)| 60.0 * c + s).collect();
    println!("{}", row("default settings: per shoot per hour", &hour));
    for (name, i, w) in [("A", a, wa), ("B", b, wb)] {
        println!(
            "{}",
            verb_row(
                &format!("{name}: per seed per hour (leases, seeds)"),
                &by_verb(r.counts, i, is_gardenlet, per_seed),
                r.seeds as f64 * w / 3600.0
            )
        );
    }
    println!(
        "{}",
        verb_row("A: bench, per shoot per hour", &by_verb(r.counts, a, |u| u == "bench", any), n * wa / 3600.0)
    );
    println!(
        "{}",
        verb_row(
            "A: KCM etc., per shoot per hour",
            &by_verb(r.counts, a, |u| !is_gardenlet(u) && u != "bench", any),
            n * wa / 3600.0
        )
    );
    println!("  window A, gardenlet's top requests (total): {}", fmt_top(&top(r.counts, a, true, 10)));
    println!("  window B, gardenlet's top requests (total): {}", fmt_top(&top(r.counts, b, true, 10)));
    let changed: usize = r.care_changes.values().sum();
    println!("  conditions changed in window A (read after it): {changed}");
    for (what, n) in r.care_changes {
        println!("    {n:>4} x {what}");
    }
    let rs = phase("restart");
    println!(
        "  restart ({:.0} s, {}/{} shoots with a last operation newer than the restart): gardenlet per shoot {}",
        r.phases[rs].seconds,
        r.restart_resynced,
        r.total,
        {
            let v = by_verb(r.counts, rs, is_gardenlet, any);
            let (reads, writes) = reads_writes(&v);
            format!("{:.1} reads, {:.1} writes", reads as f64 / n, writes as f64 / n)
        }
    );
    println!("  restart, gardenlet's top requests (total): {}", fmt_top(&top(r.counts, rs, true, 10)));

    println!();
    println!("requests per gardenlet (all phases): {}", {
        let users: BTreeSet<&String> = r.counts.keys().map(|(_, u, _, _)| u).filter(|u| is_gardenlet(u)).collect();
        users
            .iter()
            .map(|u| {
                let sum: u64 = r.counts.iter().filter(|((_, x, _, _), _)| x == *u).map(|(_, c)| c).sum();
                format!("{u} {sum}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    });
    println!("cache metrics per gardenlet (/metrics lines naming `cache`):");
    for (seed, lines) in r.cache_metrics {
        if lines.is_empty() {
            println!("  {seed}: n/a");
        }
        for l in lines {
            println!("  {seed}: {l}");
        }
    }
}

fn fmt_top(v: &[(u64, String, String)]) -> String {
    v.iter().map(|(c, verb, r)| format!("{verb} {r} {c}")).collect::<Vec<_>>().join(", ")
}
