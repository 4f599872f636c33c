//! `local-cluster up`: brings the local cluster up, or repairs it. Every step is idempotent:
//! processes that run are left alone, dead ones are started again on the same data, files are
//! rewritten only when their content changes, and the host snapshot is taken only once, before
//! the first change.

use crate::error::{Error, Result};
use crate::host::{network, snapshot::Snapshot};
use crate::layout::Layout;
use crate::pki::{self, Files};
use crate::process::{self, Spec};
use crate::settings::*;
use crate::{images, manifests, registry, render, wait};
use k8s_openapi::api::core::v1::{Node, Pod, ServiceAccount};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Inputs of `up`.
#[derive(Clone, Debug)]
pub struct Options {
    /// Directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
    /// kube-proxy (`hack/setup-envtest.sh --node`).
    pub assets: PathBuf,
    /// Directory with the image archives (`hack/images.sh`).
    pub images: PathBuf,
    /// How long each readiness wait may take.
    pub timeout: Duration,
    /// The image registry's binary (`docker-registry`, unpacked by `hack/setup-local.sh`).
    pub registry: PathBuf,
}

const SETUP: &str = "run `make local-up`, which provisions it (hack/setup-local.sh)";

pub async fn run(layout: &Layout, options: &Options) -> Result<()> {
    let started = Instant::now();
    for dir in [layout.root().to_path_buf(), layout.logs(), layout.pids(), layout.config()] {
        std::fs::create_dir_all(&dir).map_err(Error::io("creating", &dir))?;
    }
    let _lock = process::lock(&layout.lock(), "up")?;
    preflight(options)?;
    if !layout.host_snapshot().exists() {
        let snap = Snapshot::capture();
        let text = serde_json::to_string_pretty(&snap)
            .map_err(|source| Error::Json { what: "encoding the host snapshot".into(), source })?;
        std::fs::write(layout.host_snapshot(), text).map_err(Error::io("writing", layout.host_snapshot()))?;
    }

    step("pki");
    let pki = Files::new(layout.pki());
    let changed = pki.ensure()?;
    if !changed.is_empty() {
        tracing::info!(?changed, "PKI written");
    }
    write_configs(layout, &pki)?;

    step("network");
    network::ensure_bridge()?;
    network::set_sysctl("net.ipv4.ip_forward", "1")?;
    network::set_sysctl("net.bridge.bridge-nf-call-iptables", "1")?;
    network::ensure_egress_guard()?;

    step("control plane");
    let bin = |name: &str| options.assets.join(name);
    let etcd = Spec::new("etcd", bin("etcd"), render::etcd_args(layout, &pki));
    start(layout, &etcd, &format!("127.0.0.1:{ETCD_CLIENT_PORT}"))?;
    let apiserver = Spec::new("kube-apiserver", bin("kube-apiserver"), render::apiserver_args(&pki));
    start(layout, &apiserver, &format!("{NODE_IP}:{APISERVER_PORT}"))?;
    // containerd starts and the images are imported while the API server starts.
    let containerd = Spec::new(
        "containerd",
        "/usr/bin/containerd",
        vec!["--config".into(), layout.config_file("containerd.toml").display().to_string()],
    );
    process::ensure(layout, &containerd)?;
    let registry_spec = Spec::new(
        "registry",
        &options.registry,
        vec!["serve".into(), layout.config_file("registry.yaml").display().to_string()],
    );
    start(layout, &registry_spec, &registry::address())?;
    let sock = layout.containerd_socket();
    wait::until("containerd's socket", options.timeout, layout, &["containerd"], || {
        let ready =
            sock.exists() && process::run("ctr", &["--address", &sock.display().to_string(), "version"]).is_ok();
        async move { Ok(ready) }
    })
    .await?;
    let imported = images::import_all(layout, &options.images)?;
    if !imported.is_empty() {
        tracing::info!(?imported, "images imported");
    }
    push_images(layout, options, &pki).await?;
    let client = client_from(&pki.path(pki::ADMIN, "kubeconfig")).await?;
    wait::until("kube-apiserver /readyz", options.timeout, layout, &["etcd", "kube-apiserver"], || {
        let client = client.clone();
        async move {
            let req = http::Request::get("/readyz").body(Vec::new()).map_err(|e| e.to_string())?;
            client.request_text(req).await.map(|t| t.trim() == "ok").map_err(|e| e.to_string())
        }
    })
    .await?;
    start(
        layout,
        &Spec::new(
            "kube-controller-manager",
            bin("kube-controller-manager"),
            render::controller_manager_args(layout, &pki),
        ),
        &format!("127.0.0.1:{KCM_PORT}"),
    )?;
    start(
        layout,
        &Spec::new("kube-scheduler", bin("kube-scheduler"), render::scheduler_args(layout)),
        &format!("127.0.0.1:{SCHEDULER_PORT}"),
    )?;

    step("objects");
    apply(&client).await?;

    step("node");
    let kubelet =
        Spec::new("kubelet", bin("kubelet"), render::kubelet_args(layout)).env("AWS_EC2_METADATA_DISABLED", "true");
    start(layout, &kubelet, &format!("{NODE_IP}:{KUBELET_PORT}"))?;
    start(
        layout,
        &Spec::new("kube-proxy", bin("kube-proxy"), render::kube_proxy_args(layout)),
        &format!("127.0.0.1:{KUBE_PROXY_HEALTHZ_PORT}"),
    )?;
    let addons = Spec::new(
        "addons",
        std::env::current_exe().map_err(Error::io("finding the own binary", "/proc/self/exe"))?,
        vec!["addons".into(), format!("--state-dir={}", layout.root().display())],
    );
    start(layout, &addons, &format!("{NODE_IP}:{DNS_PORT}"))?;

    wait::until("kubelet healthy", options.timeout, layout, &["kubelet"], || async {
        Ok(http_get(&format!("127.0.0.1:{KUBELET_HEALTHZ_PORT}"), "/healthz")
            .is_some_and(|s| s.starts_with("HTTP/1.1 200")))
    })
    .await?;
    let nodes: Api<Node> = Api::all(client.clone());
    wait::until(&format!("node {NODE_NAME} Ready"), options.timeout, layout, &["kubelet", "containerd"], || {
        let nodes = nodes.clone();
        async move {
            let node = nodes.get_opt(NODE_NAME).await.map_err(|e| e.to_string())?;
            Ok(node.is_some_and(|n| node_ready(&n)))
        }
    })
    .await?;
    // kube-proxy and the kubelet put their FORWARD jumps in front of the guard; move it back to
    // the top once kube-proxy has synced (it does not reorder afterwards).
    wait::until("kube-proxy healthy", options.timeout, layout, &["kube-proxy"], || async {
        Ok(http_get(&format!("127.0.0.1:{KUBE_PROXY_HEALTHZ_PORT}"), "/healthz")
            .is_some_and(|s| s.starts_with("HTTP/1.1 200")))
    })
    .await?;
    network::ensure_egress_guard()?;

    step("system");
    let dns = SocketAddr::from((NODE_IP, DNS_PORT));
    wait::until("cluster DNS", options.timeout, layout, &["addons"], || async move {
        let answer = crate::dnsclient::query_a(
            dns,
            &format!("kubernetes.default.svc.{CLUSTER_DOMAIN}."),
            Duration::from_secs(1),
        );
        Ok(matches!(answer, Ok(crate::dnsclient::Answer::Addresses(a)) if a == vec![KUBERNETES_SERVICE_IP]))
    })
    .await?;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    wait::until("the default ServiceAccount", options.timeout, layout, &["kube-controller-manager"], || {
        let sas = sas.clone();
        async move { sas.get_opt("default").await.map(|s| s.is_some()).map_err(|e| e.to_string()) }
    })
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    wait::until("kube-system pods Ready", options.timeout, layout, &["kubelet"], || {
        let pods = pods.clone();
        async move {
            let list = pods.list(&Default::default()).await.map_err(|e| e.to_string())?;
            let waiting: Vec<String> = list.items.iter().filter(|p| !pod_ready(p)).map(|p| p.name_any()).collect();
            if waiting.is_empty() { Ok(true) } else { Err(format!("not Ready: {}", waiting.join(", "))) }
        }
    })
    .await?;

    // The admin kubeconfig goes last: its presence means the cluster came up.
    let admin = std::fs::read_to_string(pki.path(pki::ADMIN, "kubeconfig"))
        .map_err(Error::io("reading", pki.path(pki::ADMIN, "kubeconfig")))?;
    pki::write_private(&layout.kubeconfig(), &admin)?;
    eprintln!(
        "local-cluster: up in {:.1} s; export KUBECONFIG={}",
        started.elapsed().as_secs_f64(),
        std::fs::canonicalize(layout.kubeconfig()).unwrap_or(layout.kubeconfig()).display()
    );
    Ok(())
}

/// Waits for the image registry, then pushes every image into it that it lacks.
async fn push_images(layout: &Layout, options: &Options, pki: &Files) -> Result<()> {
    let ca = pki.path(pki::CA, "ca.crt");
    let ca_pem = std::fs::read(&ca).map_err(Error::io("reading", &ca))?;
    wait::until("the image registry", options.timeout, layout, &["registry"], || {
        let answer = registry::request(&ca_pem, "GET", "/v2/", &[]);
        async move { answer.map(|r| r.status == 200).map_err(|e| crate::report(&e)) }
    })
    .await?;
    let started = Instant::now();
    let pushed = registry::push_all(layout, &options.images, &ca)?;
    tracing::info!(
        pushed = ?pushed.pushed,
        unchanged = pushed.unchanged.len(),
        seconds = format!("{:.1}", started.elapsed().as_secs_f64()),
        "images in the registry {}",
        registry::address()
    );
    Ok(())
}

fn step(name: &str) {
    tracing::info!(step = name, "local-cluster up");
}

/// Everything `up` needs from the host, checked before anything changes.
fn preflight(options: &Options) -> Result<()> {
    for name in ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"] {
        let path = options.assets.join(name);
        if !path.is_file() {
            return Err(Error::MissingBinary { binary: name.into(), path, fix: SETUP.into() });
        }
    }
    for path in [
        "/usr/bin/containerd",
        "/usr/bin/ctr",
        "/usr/sbin/runc",
        "/usr/lib/cni/bridge",
        "/usr/lib/cni/host-local",
        "/usr/lib/cni/portmap",
    ] {
        if !Path::new(path).is_file() {
            return Err(Error::MissingBinary {
                binary: path.rsplit('/').next().unwrap_or(path).into(),
                path: path.into(),
                fix: SETUP.into(),
            });
        }
    }
    if !options.registry.is_file() {
        return Err(Error::MissingBinary {
            binary: "docker-registry".into(),
            path: options.registry.clone(),
            fix: "run `hack/setup-local.sh`, which unpacks it".into(),
        });
    }
    for tool in ["iptables", "ip6tables", "ip", "nft", "tar"] {
        if process::run("sh", &["-c", &format!("command -v {tool}")]).is_err() {
            return Err(Error::MissingBinary { binary: tool.into(), path: tool.into(), fix: SETUP.into() });
        }
    }
    if !options.images.join("registry.k8s.io_pause_3.6.tar").is_file() {
        return Err(Error::MissingBinary {
            binary: "the pause image".into(),
            path: options.images.join("registry.k8s.io_pause_3.6.tar"),
            fix: "run `make images`".into(),
        });
    }
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !filesystems.contains("overlay") {
        return Err(Error::MissingKernelFeature {
            feature: "overlayfs",
            detail: "containerd's snapshotter needs it; load it with `modprobe overlay`".into(),
        });
    }
    if !Path::new("/proc/sys/net/bridge/bridge-nf-call-iptables").exists() {
        return Err(Error::MissingKernelFeature {
            feature: "br_netfilter",
            detail: "Services between pods on one bridge need it; load it with `modprobe br_netfilter`".into(),
        });
    }
    if !Path::new("/sys/fs/cgroup/memory").is_dir() && !Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        return Err(Error::MissingKernelFeature {
            feature: "the memory cgroup",
            detail: "the kubelet needs a mounted memory cgroup controller".into(),
        });
    }
    Ok(())
}

fn write_configs(layout: &Layout, pki: &Files) -> Result<()> {
    let files: Vec<(PathBuf, String)> = vec![
        (layout.config_file("containerd.toml"), render::containerd_config(layout)),
        (layout.containerd().join("certs.d").join("_default").join("hosts.toml"), render::registry_hosts()),
        (layout.cni_conf().join("10-local-cluster.conflist"), render::cni_config(layout)),
        (layout.config_file("kubelet.yaml"), render::kubelet_config(layout, pki)),
        (layout.config_file("kube-proxy.yaml"), render::kube_proxy_config(layout)),
        (layout.resolv_conf(), render::resolv_conf()),
        (
            layout.config_file("registry.yaml"),
            registry::config(
                &layout.registry(),
                &pki.path(pki::REGISTRY, "tls.crt"),
                &pki.path(pki::REGISTRY, "tls.key"),
            ),
        ),
    ];
    for (path, text) in files {
        write_if_changed(&path, &text, false)?;
    }
    for (component, secret) in [
        ("kubelet", pki::KUBELET),
        ("kube-proxy", pki::KUBE_PROXY),
        (pki::KCM, pki::KCM),
        (pki::SCHEDULER, pki::SCHEDULER),
        ("addons", pki::ADDONS),
    ] {
        let path = pki.path(secret, "kubeconfig");
        let text = std::fs::read_to_string(&path).map_err(Error::io("reading", &path))?;
        write_if_changed(&layout.config_file(&format!("{component}.kubeconfig")), &text, true)?;
    }
    Ok(())
}

fn write_if_changed(path: &Path, text: &str, private: bool) -> Result<()> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io("creating", dir))?;
    }
    if private {
        pki::write_private(path, text)
    } else {
        std::fs::write(path, text).map_err(Error::io("writing", path))
    }
}

/// Starts `spec` unless it runs; a port another process holds is reported before starting.
fn start(layout: &Layout, spec: &Spec, address: &str) -> Result<()> {
    if process::running(layout, spec.name).is_none() {
        if let Ok(addr) = address.parse::<SocketAddr>()
            && TcpListener::bind(addr).is_err()
        {
            return Err(Error::PortTaken { component: spec.name, address: address.to_string(), port: addr.port() });
        }
        let (pid, _) = process::ensure(layout, spec)?;
        tracing::info!(component = spec.name, pid, "started");
    }
    Ok(())
}

/// A client from a kubeconfig file (the project's one client builder).
pub async fn client_from(path: &Path) -> Result<Client> {
    Ok(extension_sdk::cli::client(Some(path)).await?)
}

async fn apply(client: &Client) -> Result<()> {
    let params = PatchParams::apply("local-cluster").force();
    for obj in manifests::all() {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default();
        let kind = obj["kind"].as_str().unwrap_or_default();
        let name = obj["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let (resource, caps) =
            kube::discovery::pinned_kind(client, &gvk).await.map_err(Error::kube(format!("discovering {kind}")))?;
        let api: Api<kube::api::DynamicObject> = match (caps.scope, obj["metadata"]["namespace"].as_str()) {
            (kube::discovery::Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
            _ => Api::all_with(client.clone(), &resource),
        };
        api.patch(&name, &params, &Patch::Apply(&obj)).await.map_err(Error::kube(format!("applying {kind} {name}")))?;
    }
    Ok(())
}

pub fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub fn pod_ready(pod: &Pod) -> bool {
    let succeeded = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded");
    succeeded
        || pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A plain HTTP GET on loopback (health endpoints); the status line and body, or `None`.
fn http_get(address: &str, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect_timeout(&address.parse().ok()?, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    stream.read_to_string(&mut out).ok()?;
    Some(out)
}
