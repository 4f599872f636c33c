//! **Workload-readiness simulator (test code only).** No kubelet exists here, so no pod ever
//! runs. This simulator plays the parts of the kubelet and of a cloud load-balancer
//! controller for the shoot namespaces: it marks Deployments and StatefulSets as rolled out
//! through their status subresource, gives LoadBalancer Services an ingress address, and —
//! when the kube-apiserver Deployment appears — starts a stand-in kube-apiserver process from
//! the shoot's own generated certificates at that address, so gardenlet's steps against the
//! shoot's API run for real.

use super::standin::StandIn;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Service;
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub struct Simulator {
    /// The load-balancer address of each shoot namespace (distinct loopback addresses, so
    /// every stand-in kube-apiserver can listen on port 443).
    addresses: Arc<Mutex<BTreeMap<String, Ipv4Addr>>>,
    pub standins: Arc<Mutex<BTreeMap<String, StandIn>>>,
    starting: Arc<Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    start_slots: Arc<tokio::sync::Semaphore>,
}

/// A loopback address unlikely to be used by another test process.
pub fn loopback_address() -> Ipv4Addr {
    Ipv4Addr::new(127, fastrand::u8(10..250), fastrand::u8(1..250), fastrand::u8(2..250))
}

async fn mark_deployment(client: &kube::Client, d: &Deployment) {
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = json!({"status": {"observedGeneration": d.metadata.generation, "replicas": want,
        "updatedReplicas": want, "readyReplicas": want, "availableReplicas": want}});
    let api: Api<Deployment> = Api::namespaced(client.clone(), &d.namespace().unwrap_or_default());
    let _ = api.patch_status(&d.name_any(), &PatchParams::default(), &Patch::Merge(&status)).await;
}

impl Simulator {
    pub fn new() -> Self {
        Self {
            addresses: Arc::default(),
            standins: Arc::default(),
            starting: Arc::default(),
            start_slots: Arc::new(tokio::sync::Semaphore::new(4)),
        }
    }

    /// The load-balancer address of a namespace, allocated on first use.
    pub fn address(&self, namespace: &str) -> Ipv4Addr {
        let mut addresses = self.addresses.lock().unwrap();
        if let Some(a) = addresses.get(namespace) {
            return *a;
        }
        let mut a = loopback_address();
        while addresses.values().any(|x| *x == a) {
            a = loopback_address();
        }
        addresses.insert(namespace.to_string(), a);
        a
    }

    /// Runs until the returned task is aborted.
    pub fn spawn(&self, client: kube::Client) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let deployments = this.clone().deployments(client.clone());
            let statefulsets = Self::statefulsets(client.clone());
            let services = this.clone().services(client);
            tokio::join!(deployments, statefulsets, services);
        })
    }

    async fn deployments(self, client: kube::Client) {
        let api: Api<Deployment> = Api::all(client.clone());
        let config = watcher::Config::default().labels("gardener.cloud/role=controlplane");
        let mut stream = std::pin::pin!(watcher::watcher(api, config).default_backoff().applied_objects());
        while let Some(item) = stream.next().await {
            let Ok(d) = item else { continue };
            let ready = d.status.as_ref().and_then(|s| s.observed_generation) == d.metadata.generation
                && d.status.as_ref().and_then(|s| s.available_replicas)
                    == Some(d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1));
            if ready {
                continue;
            }
            let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            if d.name_any() == "kube-apiserver" && replicas > 0 {
                // Start the stand-in in its own task: many shoots come up at once.
                let (this, client) = (self.clone(), client.clone());
                tokio::spawn(async move {
                    let ns = d.namespace().unwrap_or_default();
                    for attempt in 1..=3 {
                        match this.ensure_standin(&client, &ns).await {
                            Ok(()) => return mark_deployment(&client, &d).await,
                            Err(e) => {
                                eprintln!("simulator: stand-in kube-apiserver for {ns} failed (attempt {attempt}): {e}")
                            }
                        }
                    }
                });
                continue;
            }
            mark_deployment(&client, &d).await;
        }
    }

    async fn ensure_standin(&self, client: &kube::Client, namespace: &str) -> Result<(), String> {
        // One start per namespace at a time; later callers wait for it.
        let gate = {
            let mut starting = self.starting.lock().unwrap();
            starting.entry(namespace.to_string()).or_default().clone()
        };
        let _guard = gate.lock().await;
        // A few starts at a time: kube-apiservers starting together on a small machine starve
        // each other.
        let _slot = self.start_slots.acquire().await.map_err(|e| e.to_string())?;
        if self.standins.lock().unwrap().contains_key(namespace) {
            return Ok(());
        }
        let standin = StandIn::start(client, namespace, self.address(namespace)).await?;
        self.standins.lock().unwrap().insert(namespace.to_string(), standin);
        Ok(())
    }

    async fn statefulsets(client: kube::Client) {
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
