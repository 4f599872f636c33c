//! `local-cluster up`: brings the local cluster up, or repairs it. Every step is idempotent:
//! processes that run are left alone, dead ones are started again on the same data, files are
//! rewritten only when their content changes, and the host snapshot is taken only once, before
//! the first change.
//!
//! [`run`] prepares the host (state directories, lock, [`preflight`], snapshot, PKI,
//! [`configs`], network), then follows the [`components::plan`]: one loop starts each
//! [`components::Component`] of the table, waits for its readiness ([`probes`]) where the plan
//! says, and runs the plan's other steps; the admin kubeconfig is written last.

pub mod components;
pub mod configs;
pub mod preflight;
pub mod probes;

use crate::error::{Error, Result};
use crate::host::{network, snapshot::Snapshot};
use crate::layout::Layout;
use crate::pki::{self, Files};
use crate::{process, wait};
use components::{Component, Item, Wait};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use probes::Context;
use std::fs::File;
use std::net::TcpListener;
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

pub async fn run(layout: &Layout, options: &Options) -> Result<()> {
    let started = Instant::now();
    let _lock = prepare(layout, options)?;

    step("pki");
    let pki = Files::new(layout.pki());
    let changed = pki.ensure()?;
    if !changed.is_empty() {
        tracing::info!(?changed, "PKI written");
    }
    configs::write_all(layout, &pki)?;

    step("network");
    network::ensure_bridge()?;
    network::set_sysctl("net.ipv4.ip_forward", "1")?;
    network::set_sysctl("net.bridge.bridge-nf-call-iptables", "1")?;
    network::ensure_egress_guard()?;

    let table = components::components(layout, options, &pki)?;
    let context = Context::new(layout, options, &pki).await?;
    for stage in components::plan() {
        step(stage.step);
        for item in stage.items {
            perform(&context, &table, item).await?;
        }
    }
    finish(layout, &pki, started)
}

/// State directories, the lock, the preflight checks and, once, the host snapshot.
fn prepare(layout: &Layout, options: &Options) -> Result<File> {
    for dir in [layout.root().to_path_buf(), layout.logs(), layout.pids(), layout.config()] {
        std::fs::create_dir_all(&dir).map_err(Error::io("creating", &dir))?;
    }
    let lock = process::lock(&layout.lock(), "up")?;
    preflight::check(options)?;
    if !layout.host_snapshot().exists() {
        let snap = Snapshot::capture();
        let text = serde_json::to_string_pretty(&snap)
            .map_err(|source| Error::Json { what: "encoding the host snapshot".into(), source })?;
        std::fs::write(layout.host_snapshot(), text).map_err(Error::io("writing", layout.host_snapshot()))?;
    }
    Ok(lock)
}

/// One item of the plan.
async fn perform(context: &Context<'_>, table: &[Component], item: Item) -> Result<()> {
    let component = |name: &str| {
        table.iter().find(|c| c.spec.name == name).ok_or_else(|| Error::UnknownComponent(name.to_string()))
    };
    match item {
        Item::Start(name) => start(context.layout, component(name)?),
        Item::Ready(name) => match &component(name)?.readiness {
            Some(readiness) => until(context, readiness).await,
            None => Ok(()),
        },
        Item::Check(wait) => until(context, &wait).await,
        Item::Run(action) => context.run(action).await,
    }
}

async fn until(context: &Context<'_>, readiness: &Wait) -> Result<()> {
    let (layout, timeout) = (context.layout, context.options.timeout);
    wait::until(&readiness.what, timeout, layout, &readiness.alive, || context.probe(&readiness.probe)).await
}

/// Starts `component` unless it runs; a port another process holds is reported before starting.
fn start(layout: &Layout, component: &Component) -> Result<()> {
    let spec = &component.spec;
    if process::running(layout, spec.name).is_none() {
        if let Some(address) = component.address
            && TcpListener::bind(address).is_err()
        {
            return Err(Error::PortTaken { component: spec.name, address: address.to_string(), port: address.port() });
        }
        let (pid, _) = process::ensure(layout, spec)?;
        tracing::info!(component = spec.name, pid, "started");
    }
    Ok(())
}

/// The admin kubeconfig goes last: its presence means the cluster came up.
fn finish(layout: &Layout, pki: &Files, started: Instant) -> Result<()> {
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

fn step(name: &str) {
    tracing::info!(step = name, "local-cluster up");
}

/// A client from a kubeconfig file (the project's one client builder).
pub async fn client_from(path: &Path) -> Result<Client> {
    Ok(runtime::cli::client(Some(path)).await?)
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
