//! The light workload simulator: plays kubelet and cloud load-balancer controller, and runs a
//! relay to the shared stand-in shoot API ([`super::relay`]) where a per-shoot kube-apiserver
//! would run.

use super::relay::{Upstream, start_relay};
use crate::support::simulator::{
    Addresses, control_plane, deployment_ready, deployment_replicas, mark_deployment, mark_statefulset,
    serve_load_balancers, statefulset_ready,
};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use kube::ResourceExt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Control-plane Deployments and StatefulSets rolled out, LoadBalancer Services with a loopback
/// ingress address; a shoot's kube-apiserver Deployment is rolled out once its relay listens.
#[derive(Clone)]
pub struct LightSimulator {
    addresses: Addresses,
    relays: Arc<tokio::sync::Mutex<BTreeMap<String, tokio::task::JoinHandle<()>>>>,
    pub upstream: Arc<Upstream>,
}

impl LightSimulator {
    pub fn new(upstream: Upstream) -> Self {
        Self { addresses: Addresses::default(), relays: Arc::default(), upstream: Arc::new(upstream) }
    }

    pub fn spawn(&self, client: kube::Client) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            tokio::join!(
                this.clone().deployments(client.clone()),
                this.clone().statefulsets(client.clone()),
                serve_load_balancers(client, this.addresses.clone())
            );
        })
    }

    async fn deployments(self, client: kube::Client) {
        let mut stream = std::pin::pin!(control_plane::<Deployment>(client.clone()));
        while let Some(d) = stream.next().await {
            if deployment_ready(&d) {
                continue;
            }
            let (this, client) = (self.clone(), client.clone());
            tokio::spawn(async move {
                let ns = d.namespace().unwrap_or_default();
                if d.name_any() == "kube-apiserver"
                    && deployment_replicas(&d) > 0
                    && !this.ensure_relay(&client, &ns).await
                {
                    return;
                }
                mark_deployment(&client, &d).await;
            });
        }
    }

    /// Starts the relay of namespace `ns` unless it runs (a few attempts: the serving
    /// certificate may not be written yet); whether it runs.
    async fn ensure_relay(&self, client: &kube::Client, ns: &str) -> bool {
        let mut relays = self.relays.lock().await;
        let mut attempt = 0;
        while !relays.contains_key(ns) {
            match start_relay(client, ns, self.addresses.of(ns), self.upstream.clone()).await {
                Ok(task) => {
                    relays.insert(ns.to_string(), task);
                }
                Err(e) if attempt < 10 => {
                    attempt += 1;
                    eprintln!("simulator: relay for {ns} (attempt {attempt}): {e}");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => {
                    eprintln!("simulator: no relay for {ns}: {e}");
                    return false;
                }
            }
        }
        true
    }

    async fn statefulsets(self, client: kube::Client) {
        let mut stream = std::pin::pin!(control_plane::<StatefulSet>(client.clone()));
        while let Some(s) = stream.next().await {
            if !statefulset_ready(&s) {
                mark_statefulset(&client, &s).await;
            }
        }
    }
}
