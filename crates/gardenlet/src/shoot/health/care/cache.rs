//! What the care controller reads on every tick, kept so a tick costs the seed no requests:
//!
//! * the control-plane Deployments and StatefulSets of every shoot namespace, from one watch
//!   each that selects `gardener.cloud/role=controlplane`; only what the health checks use is
//!   kept (managed fields and pod templates are dropped on arrival, so 500 shoots' workloads
//!   stay a few MiB);
//! * the etcd pods (label-selected), reduced to their init containers' statuses: a restore from
//!   backups is reported from the `restore` container's termination message;
//! * a client for each shoot's API server, built from the admin kubeconfig Secret and reused
//!   for [`CLIENT_TTL`], dropped early when the shoot's API server does not answer (the
//!   kubeconfig may have changed, say by a CA rotation), so a Secret is read once per shoot
//!   every ten minutes instead of every tick.

use crate::components::common::labels;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a shoot client is reused before the admin kubeconfig is read again.
pub const CLIENT_TTL: Duration = Duration::from_secs(600);

/// The seed's control-plane workloads, as the health checks see them.
#[derive(Clone)]
pub struct Workloads {
    deployments: Store<Deployment>,
    statefulsets: Store<StatefulSet>,
    etcd_pods: Store<Pod>,
}

impl std::fmt::Debug for Workloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workloads")
            .field("deployments", &self.deployments.len())
            .field("statefulsets", &self.statefulsets.len())
            .field("etcd_pods", &self.etcd_pods.len())
            .finish()
    }
}

impl Workloads {
    /// Starts both watches on `seed`; returns the caches and the future that runs the watches.
    pub fn start(seed: &kube::Client) -> (Self, impl std::future::Future<Output = ()> + Send + use<>) {
        let selector = format!("{}={}", labels::GARDENER_ROLE, labels::CONTROL_PLANE);
        let config = watcher::Config::default().labels(&selector);
        let (deployments, d_writer) = reflector::store();
        let (statefulsets, s_writer) = reflector::store();
        let d_watch = reflector::reflector(
            d_writer,
            watcher(Api::<Deployment>::all(seed.clone()), config.clone()).modify(|d| {
                d.metadata.managed_fields = None;
                if let Some(spec) = d.spec.as_mut() {
                    spec.template = Default::default();
                }
            }),
        )
        .default_backoff()
        .for_each(|_| futures::future::ready(()));
        let s_watch = reflector::reflector(
            s_writer,
            watcher(Api::<StatefulSet>::all(seed.clone()), config).modify(|s| {
                s.metadata.managed_fields = None;
                if let Some(spec) = s.spec.as_mut() {
                    spec.template = Default::default();
                    spec.volume_claim_templates = None;
                }
            }),
        )
        .default_backoff()
        .for_each(|_| futures::future::ready(()));
        let etcd_selector = format!(
            "{}={},{}={}",
            labels::APP,
            crate::components::etcd::APP,
            labels::ROLE,
            crate::components::etcd::ROLE
        );
        let (etcd_pods, p_writer) = reflector::store();
        let p_watch = reflector::reflector(
            p_writer,
            watcher(Api::<Pod>::all(seed.clone()), watcher::Config::default().labels(&etcd_selector)).modify(|p| {
                p.metadata.managed_fields = None;
                p.metadata.annotations = None;
                p.spec = None;
                p.status = p
                    .status
                    .take()
                    .map(|s| PodStatus { init_container_statuses: s.init_container_statuses, ..Default::default() });
            }),
        )
        .default_backoff()
        .for_each(|_| futures::future::ready(()));
        let run = async move {
            futures::join!(d_watch, s_watch, p_watch);
        };
        (Self { deployments, statefulsets, etcd_pods }, run)
    }

    /// Waits until both watches have listed.
    pub async fn ready(&self) -> bool {
        let (d, s, p) = futures::join!(
            self.deployments.wait_until_ready(),
            self.statefulsets.wait_until_ready(),
            self.etcd_pods.wait_until_ready()
        );
        d.is_ok() && s.is_ok() && p.is_ok()
    }

    pub fn deployment(&self, namespace: &str, name: &str) -> Option<Arc<Deployment>> {
        self.deployments.get(&ObjectRef::new(name).within(namespace))
    }

    pub fn statefulset(&self, namespace: &str, name: &str) -> Option<Arc<StatefulSet>> {
        self.statefulsets.get(&ObjectRef::new(name).within(namespace))
    }

    /// The etcd pods of `namespace` (their init containers' statuses only).
    pub fn etcd_pods(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.etcd_pods.state().into_iter().filter(|p| p.metadata.namespace.as_deref() == Some(namespace)).collect()
    }
}

/// Clients for shoot API servers, by seed namespace, each with when it was built.
#[derive(Default)]
pub struct ShootClients(Mutex<HashMap<String, (kube::Client, Instant)>>);

impl std::fmt::Debug for ShootClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map(|m| m.len()).unwrap_or_default();
        f.debug_struct("ShootClients").field("clients", &n).finish()
    }
}

impl ShootClients {
    /// The client of `namespace` if it is younger than [`CLIENT_TTL`].
    pub fn fresh(&self, namespace: &str, now: Instant) -> Option<kube::Client> {
        let map = self.0.lock().ok()?;
        map.get(namespace).filter(|(_, built)| now.duration_since(*built) < CLIENT_TTL).map(|(c, _)| c.clone())
    }

    pub fn keep(&self, namespace: &str, client: kube::Client, now: Instant) {
        if let Ok(mut map) = self.0.lock() {
            map.insert(namespace.to_string(), (client, now));
        }
    }

    /// Forgets the client of `namespace` (it failed, or the shoot is gone).
    pub fn forget(&self, namespace: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(namespace);
        }
    }

    /// Forgets the clients of namespaces not in `keep` (shoots that left the seed).
    pub fn retain(&self, keep: &std::collections::HashSet<&str>) {
        if let Ok(mut map) = self.0.lock() {
            map.retain(|ns, _| keep.contains(ns.as_str()));
        }
    }
}
