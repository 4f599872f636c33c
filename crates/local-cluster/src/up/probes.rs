//! What `up` asks while it waits ([`Probe`]) and the steps of its plan that are not processes
//! ([`Action`]), over the clients of one bring-up ([`Context`]): kube's client for the API
//! server, the registry's HTTPS client, hyper-util's plain client for loopback health endpoints.

use super::Options;
use super::components::{Action, Probe};
use crate::error::{Error, Result};
use crate::host::network;
use crate::layout::Layout;
use crate::pki::{self, Files};
use crate::settings::*;
use crate::{dnsclient, images, manifests, process, registry};
use hyper_util::client::legacy::Client as Pool;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::{Node, Pod, ServiceAccount};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The clients and inputs of one bring-up.
pub struct Context<'a> {
    pub layout: &'a Layout,
    pub options: &'a Options,
    pub pki: &'a Files,
    /// The API server, as the admin.
    pub client: Client,
    /// The image registry, trusting the cluster CA.
    pub registry: registry::Client,
    /// The registry's writer, with its credentials.
    pub writer: registry::Client,
    /// Loopback health endpoints (plain HTTP).
    pub health: Pool<HttpConnector, String>,
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("layout", self.layout).field("options", self.options).finish_non_exhaustive()
    }
}

impl<'a> Context<'a> {
    pub async fn new(layout: &'a Layout, options: &'a Options, pki: &'a Files) -> Result<Self> {
        let ca = pki.path(pki::CA, "ca.crt");
        let ca_pem = std::fs::read(&ca).map_err(Error::io("reading", &ca))?;
        let registry = registry::Client::new(&ca_pem)?;
        let credentials = registry::writer::Files::new(layout.registry_writer()).credentials()?;
        let writer = registry::Client::at(&ca_pem, &registry::writer::address(), Some(&credentials))?;
        let client = super::client_from(&pki.path(pki::ADMIN, "kubeconfig")).await?;
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(Duration::from_secs(1)));
        let health = Pool::builder(TokioExecutor::new()).build(http);
        Ok(Self { layout, options, pki, client, registry, writer, health })
    }

    /// One answer of `probe`: ready, not yet, or what went wrong (reported on timeout).
    pub async fn probe(&self, probe: &Probe) -> std::result::Result<bool, String> {
        match probe {
            Probe::ContainerdSocket => {
                let sock = self.layout.containerd_socket();
                Ok(sock.exists() && process::run("ctr", &["--address", &sock.display().to_string(), "version"]).is_ok())
            }
            Probe::Registry => {
                self.registry.request("GET", "/v2/", &[]).await.map(|r| r.status == 200).map_err(|e| crate::report(&e))
            }
            Probe::RegistryWriter => match self.writer.request("GET", "/v2/", &[]).await {
                Ok(r) if r.status == 401 => Err(format!(
                    "the writer refuses the password in {} (401)",
                    registry::writer::Files::new(self.layout.registry_writer()).password().display()
                )),
                Ok(r) => Ok(r.status == 200),
                Err(e) => Err(crate::report(&e)),
            },
            Probe::ApiServerReady => {
                let req = http::Request::get("/readyz").body(Vec::new()).map_err(|e| e.to_string())?;
                self.client.request_text(req).await.map(|t| t.trim() == "ok").map_err(|e| e.to_string())
            }
            Probe::Healthz(address) => Ok(self.healthz_ok(*address).await),
            Probe::NodeReady => {
                let node = Api::<Node>::all(self.client.clone()).get_opt(NODE_NAME).await.map_err(|e| e.to_string())?;
                Ok(node.is_some_and(|n| super::node_ready(&n)))
            }
            Probe::ClusterDns => {
                let dns = SocketAddr::from((NODE_IP, DNS_PORT));
                let name = format!("kubernetes.default.svc.{CLUSTER_DOMAIN}.");
                let answer = dnsclient::query_a(dns, &name, Duration::from_secs(1));
                Ok(matches!(answer, Ok(dnsclient::Answer::Addresses(a)) if a == vec![KUBERNETES_SERVICE_IP]))
            }
            Probe::DefaultServiceAccount => {
                let sas: Api<ServiceAccount> = Api::namespaced(self.client.clone(), "default");
                sas.get_opt("default").await.map(|s| s.is_some()).map_err(|e| e.to_string())
            }
            Probe::SystemPodsReady => {
                let pods: Api<Pod> = Api::namespaced(self.client.clone(), "kube-system");
                let list = pods.list(&Default::default()).await.map_err(|e| e.to_string())?;
                let waiting: Vec<String> =
                    list.items.iter().filter(|p| !super::pod_ready(p)).map(|p| p.name_any()).collect();
                if waiting.is_empty() { Ok(true) } else { Err(format!("not Ready: {}", waiting.join(", "))) }
            }
        }
    }

    /// `GET /healthz` on a loopback health endpoint answers 200 within two seconds.
    async fn healthz_ok(&self, address: SocketAddr) -> bool {
        let Ok(uri) = format!("http://{address}/healthz").parse::<http::Uri>() else { return false };
        let answer = tokio::time::timeout(Duration::from_secs(2), self.health.get(uri)).await;
        matches!(answer, Ok(Ok(response)) if response.status() == http::StatusCode::OK)
    }

    pub async fn run(&self, action: Action) -> Result<()> {
        match action {
            Action::ImportImages => {
                let imported = images::import_all(self.layout, &self.options.images)?;
                if !imported.is_empty() {
                    tracing::info!(?imported, "images imported");
                }
            }
            Action::PushImages => self.push_images().await?,
            Action::ApplyObjects => apply(&self.client).await?,
            Action::EgressGuard => network::ensure_egress_guard()?,
        }
        Ok(())
    }

    /// Pushes every image into the registry that it lacks.
    async fn push_images(&self) -> Result<()> {
        let started = Instant::now();
        let ca = self.pki.path(pki::CA, "ca.crt");
        let hosts = registry::writer::Files::new(self.layout.registry_writer()).hosts_dir();
        let pushed = registry::push_all(self.layout, &self.options.images, &ca, &hosts).await?;
        tracing::info!(
            pushed = ?pushed.pushed,
            unchanged = pushed.unchanged.len(),
            seconds = format!("{:.1}", started.elapsed().as_secs_f64()),
            "images in the registry {} (pushed through {})",
            registry::address(),
            registry::writer::address()
        );
        Ok(())
    }
}

/// Applies the cluster's own objects (server-side apply, field manager `local-cluster`).
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
