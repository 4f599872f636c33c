//! **Workload-readiness simulator (test code only).** No kubelet exists here, so no pod ever
//! runs. This simulator plays the parts of the kubelet and of a cloud load-balancer
//! controller for the shoot namespaces: it marks Deployments and StatefulSets as rolled out
//! through their status subresource and gives LoadBalancer Services an ingress address. For
//! the pods that matter it runs stand-ins (see `standin`): when the etcd StatefulSet has a
//! replica it runs the pod's init containers and starts a real etcd, and when the
//! kube-apiserver Deployment has one it starts a real kube-apiserver from the shoot's own
//! certificates at the load-balancer address — so gardenlet's steps against the shoot's API
//! and etcd run for real. Scaled to zero, the process is stopped (etcd's data stays).

use super::standin::{ApiServerStandIn, EtcdStandIn, Volumes};
use futures::{Stream, StreamExt};
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
    addresses: Addresses,
    pub etcds: Arc<Mutex<BTreeMap<String, EtcdStandIn>>>,
    pub apiservers: Arc<Mutex<BTreeMap<String, ApiServerStandIn>>>,
    volumes: Arc<Volumes>,
    starting: Arc<Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    start_slots: Arc<tokio::sync::Semaphore>,
}

/// A loopback address unlikely to be used by another test process.
pub fn loopback_address() -> Ipv4Addr {
    Ipv4Addr::new(127, fastrand::u8(10..250), fastrand::u8(1..250), fastrand::u8(2..250))
}

/// A loopback service range for a seed's test apiserver (distinct from the load-balancer
/// addresses above), so that cluster IPs are addresses the stand-ins can listen on.
pub fn loopback_service_range() -> String {
    format!("--service-cluster-ip-range=127.{}.{}.0/24", fastrand::u8(250..255), fastrand::u8(..))
}

/// Options for a seed's test cluster: kube-controller-manager with namespace deletion and
/// garbage collection only (no Deployment or StatefulSet controllers, whose status the
/// simulator plays) and a loopback service range.
pub fn seed_options() -> testenv::Options {
    testenv::Options {
        controller_manager: true,
        controllers: Some(vec!["namespace".into(), "garbagecollector".into()]),
        extra_apiserver_args: vec![loopback_service_range()],
        ..Default::default()
    }
}

/// The load-balancer address of each shoot namespace: distinct loopback addresses, so that
/// whatever serves a shoot's API can listen on port 443 of its own address.
#[derive(Clone, Default)]
pub struct Addresses(Arc<Mutex<BTreeMap<String, Ipv4Addr>>>);

impl Addresses {
    /// The address of a namespace, allocated on first use.
    pub fn of(&self, namespace: &str) -> Ipv4Addr {
        let mut addresses = self.0.lock().unwrap();
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
}

/// The control-plane objects of kind `K` in every namespace (`gardener.cloud/role=controlplane`),
/// as they are applied.
pub fn control_plane<K>(client: kube::Client) -> impl Stream<Item = K>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let config = watcher::Config::default().labels("gardener.cloud/role=controlplane");
    watcher::watcher(Api::<K>::all(client), config)
        .default_backoff()
        .applied_objects()
        .filter_map(|o| async move { o.ok() })
}

/// The replicas a Deployment asks for.
pub fn deployment_replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// Whether the Deployment's status already says it is rolled out.
pub fn deployment_ready(d: &Deployment) -> bool {
    d.status.as_ref().and_then(|s| s.observed_generation) == d.metadata.generation
        && d.status.as_ref().and_then(|s| s.available_replicas) == Some(deployment_replicas(d))
}

/// The replicas a StatefulSet asks for.
pub fn statefulset_replicas(s: &StatefulSet) -> i32 {
    s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// Whether the StatefulSet's status already says it is rolled out.
pub fn statefulset_ready(s: &StatefulSet) -> bool {
    let status = s.status.clone().unwrap_or_default();
    status.observed_generation == s.metadata.generation && status.ready_replicas == Some(statefulset_replicas(s))
}

/// Writes the status of a rolled-out Deployment.
pub async fn mark_deployment(client: &kube::Client, d: &Deployment) {
    let want = deployment_replicas(d);
    let status = json!({"status": {"observedGeneration": d.metadata.generation, "replicas": want,
        "updatedReplicas": want, "readyReplicas": want, "availableReplicas": want}});
    let api: Api<Deployment> = Api::namespaced(client.clone(), &d.namespace().unwrap_or_default());
    let _ = api.patch_status(&d.name_any(), &PatchParams::default(), &Patch::Merge(&status)).await;
}

/// Writes the status of a rolled-out StatefulSet.
pub async fn mark_statefulset(client: &kube::Client, s: &StatefulSet) {
    let want = statefulset_replicas(s);
    let patch = json!({"status": {"observedGeneration": s.metadata.generation, "replicas": want,
        "readyReplicas": want, "updatedReplicas": want, "currentReplicas": want, "availableReplicas": want}});
    let api: Api<StatefulSet> = Api::namespaced(client.clone(), &s.namespace().unwrap_or_default());
    let _ = api.patch_status(&s.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await;
}

/// Plays the cloud load-balancer controller until aborted: every LoadBalancer Service without
/// an ingress gets its namespace's address.
pub async fn serve_load_balancers(client: kube::Client, addresses: Addresses) {
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
        let address = addresses.of(&s.namespace().unwrap_or_default());
        let patch = json!({"status": {"loadBalancer": {"ingress": [{"ip": address.to_string()}]}}});
        let api: Api<Service> = Api::namespaced(client.clone(), &s.namespace().unwrap_or_default());
        let _ = api.patch_status(&s.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await;
    }
}

impl Simulator {
    pub fn new() -> Self {
        Self {
            addresses: Addresses::default(),
            etcds: Arc::default(),
            apiservers: Arc::default(),
            volumes: Arc::default(),
            starting: Arc::default(),
            start_slots: Arc::new(tokio::sync::Semaphore::new(4)),
        }
    }

    /// The load-balancer address of a namespace, allocated on first use.
    pub fn address(&self, namespace: &str) -> Ipv4Addr {
        self.addresses.of(namespace)
    }

    /// Runs until the returned task is aborted.
    pub fn spawn(&self, client: kube::Client) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let deployments = this.clone().deployments(client.clone());
            let statefulsets = this.clone().statefulsets(client.clone());
            let services = serve_load_balancers(client, this.addresses.clone());
            tokio::join!(deployments, statefulsets, services);
        })
    }

    /// Stops the stand-ins of every namespace (as if the seed's nodes went away).
    pub fn stop_all(&self) {
        self.apiservers.lock().unwrap().clear();
        self.etcds.lock().unwrap().clear();
    }

    fn gate(&self, namespace: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut starting = self.starting.lock().unwrap();
        starting.entry(namespace.to_string()).or_default().clone()
    }

    async fn deployments(self, client: kube::Client) {
        let mut stream = std::pin::pin!(control_plane::<Deployment>(client.clone()));
        while let Some(d) = stream.next().await {
            if deployment_ready(&d) {
                continue;
            }
            let replicas = deployment_replicas(&d);
            if d.name_any() == "kube-apiserver" {
                // Start the stand-in in its own task: many shoots come up at once.
                let (this, client) = (self.clone(), client.clone());
                tokio::spawn(async move {
                    let ns = d.namespace().unwrap_or_default();
                    if replicas == 0 {
                        this.apiservers.lock().unwrap().remove(&ns);
                        return mark_deployment(&client, &d).await;
                    }
                    for attempt in 1..=3 {
                        match this.ensure_apiserver(&client, &ns, d.metadata.generation).await {
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

    /// Runs the stand-in for the Deployment's `generation`: an older one is replaced (and
    /// stopped before its successor binds the same address).
    async fn ensure_apiserver(
        &self,
        client: &kube::Client,
        namespace: &str,
        generation: Option<i64>,
    ) -> Result<(), String> {
        let gate = self.gate(namespace);
        let _guard = gate.lock().await;
        {
            let mut running = self.apiservers.lock().unwrap();
            match running.get(namespace) {
                Some(s) if s.generation >= generation => return Ok(()),
                Some(_) => drop(running.remove(namespace)),
                None => {}
            }
        }
        // A few starts at a time: kube-apiservers starting together on a small machine starve
        // each other.
        let _slot = self.start_slots.acquire().await.map_err(|e| e.to_string())?;
        let etcd_url = self.etcds.lock().unwrap().get(namespace).map(|e| e.local_url.clone());
        let Some(etcd_url) = etcd_url else {
            return Err("etcd does not run (its StatefulSet has no ready replica)".into());
        };
        let standin =
            ApiServerStandIn::start(client, namespace, self.address(namespace), &etcd_url, generation).await?;
        self.apiservers.lock().unwrap().insert(namespace.to_string(), standin);
        Ok(())
    }

    async fn ensure_etcd(&self, client: &kube::Client, sts: &StatefulSet) -> Result<(), String> {
        let namespace = sts.namespace().unwrap_or_default();
        let gate = self.gate(&namespace);
        let _guard = gate.lock().await;
        // A newer StatefulSet generation (a new certificate) restarts etcd on the same ports and data.
        let ports = {
            let mut running = self.etcds.lock().unwrap();
            match running.get(&namespace) {
                Some(e) if e.generation >= sts.metadata.generation => return Ok(()),
                Some(_) => running.remove(&namespace).map(|e| e.ports),
                None => None,
            }
        };
        let standin = EtcdStandIn::start(client, sts, &self.volumes, ports).await?;
        self.etcds.lock().unwrap().insert(namespace, standin);
        Ok(())
    }

    async fn statefulsets(self, client: kube::Client) {
        let mut stream = std::pin::pin!(control_plane::<StatefulSet>(client.clone()));
        while let Some(s) = stream.next().await {
            if statefulset_ready(&s) {
                continue;
            }
            let want = statefulset_replicas(&s);
            let (this, client) = (self.clone(), client.clone());
            tokio::spawn(async move {
                let ns = s.namespace().unwrap_or_default();
                if s.name_any() != "etcd-main" {
                    return mark_statefulset(&client, &s).await;
                }
                if want == 0 {
                    this.etcds.lock().unwrap().remove(&ns);
                    return mark_statefulset(&client, &s).await;
                }
                match this.ensure_etcd(&client, &s).await {
                    Ok(()) => mark_statefulset(&client, &s).await,
                    Err(e) => eprintln!("simulator: stand-in etcd for {ns} failed: {e}"),
                }
            });
        }
    }
}
