//! The ControllerInstallation controller: installs into the seed the extension controllers the
//! garden's controller-manager asks for (one ControllerInstallation per seed and needed
//! ControllerRegistration), keeps them as their ControllerDeployment says, reports `Valid`,
//! `Installed`, `Healthy`, `Progressing` and `Required`, and uninstalls them when the
//! installation is deleted.
//!
//! Watches, garden side: this seed's ControllerInstallations (label `seed.gardener.cloud/name`,
//! set by the controller-manager), ControllerRegistrations and ControllerDeployments (re-queue
//! the installations using them). Seed side: Deployments carrying the installation label
//! (rollout progress), and every extension kind (what is `Required`).
//!
//! gardenlet has no Helm engine: it installs `manifest` ControllerDeployments, whose
//! `providerConfig.manifests` are the rendered objects ([`manifest`]).

pub mod manifest;
pub mod reconcile;
pub mod status;

use api::core::controller::LABEL_CONTROLLER_INSTALLATION;
use api::core::{ControllerDeployment, ControllerInstallation, ControllerRegistration};
use api::extensions::ExtensionKind;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::ApiResource;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use runtime::wiring::{self, Wiring};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};

/// The label the controller-manager puts on a ControllerInstallation naming its seed.
pub const SEED_LABEL: &str = "seed.gardener.cloud/name";

/// The extension objects in the seed by (kind, type): `namespace/name` of each.
pub type InUse = Arc<RwLock<BTreeMap<(String, String), BTreeSet<String>>>>;

pub struct Context {
    pub seed_name: String,
    pub garden: Client,
    pub seed: Client,
    pub registrations: Store<ControllerRegistration>,
    pub deployments: Store<ControllerDeployment>,
    pub workloads: Store<Deployment>,
    pub in_use: InUse,
    discovered: Mutex<HashMap<(String, String), (ApiResource, bool)>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("seed_name", &self.seed_name).finish_non_exhaustive()
    }
}

/// The installations of `store` for which `uses` holds.
fn installations_where(
    store: &Store<ControllerInstallation>,
    uses: impl Fn(&ControllerInstallation) -> bool,
) -> Vec<ObjectRef<ControllerInstallation>> {
    store.state().iter().filter(|i| uses(i)).map(|i| ObjectRef::from_obj(i.as_ref())).collect()
}

/// Runs the controller until `stop`; `ready` turns true once the ControllerInstallation cache
/// is filled (the other caches are not waited for).
pub async fn run(
    garden: Client,
    seed: Client,
    seed_name: String,
    concurrency: u16,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    ready: Arc<AtomicBool>,
) {
    let all = watcher::Config::default;
    let mut wiring = Wiring::new("controller-installation", garden.clone(), stop, ready).concurrency(concurrency);
    let selector = format!("{SEED_LABEL}={seed_name}");
    let installations =
        wiring.controller("controller installations", wiring.all::<ControllerInstallation>(), all().labels(&selector));
    let (registrations, registration_events) =
        wiring::reflect(Api::<ControllerRegistration>::all(garden.clone()), all());
    let (deployments, deployment_events) = wiring::reflect(Api::<ControllerDeployment>::all(garden.clone()), all());
    let (workloads, workload_events) =
        wiring::reflect(Api::<Deployment>::all(seed.clone()), all().labels(LABEL_CONTROLLER_INSTALLATION));
    let in_use: InUse = Arc::default();
    let (changed_tx, changed_rx) = futures::channel::mpsc::unbounded::<()>();
    let tracking = track_all(seed.clone(), in_use.clone(), changed_tx);

    let store = installations.store();
    let ctx = Arc::new(Context {
        seed_name,
        garden,
        seed,
        registrations: registrations.clone(),
        deployments,
        workloads,
        in_use,
        discovered: Mutex::default(),
    });
    let (by_registration, by_deployment) = (store.clone(), store);
    let registrations_for_deployments = registrations;
    let controller = installations
        .watches_stream(registration_events.touched_objects(), move |r: ControllerRegistration| {
            installations_where(&by_registration, |i| i.spec.registration_ref.name == r.name_any())
        })
        .watches_stream(deployment_events.touched_objects(), move |d: ControllerDeployment| {
            let name = d.name_any();
            let regs = registrations_for_deployments.state();
            installations_where(&by_deployment, |i| {
                i.spec.deployment_ref.as_ref().map(|r| r.name == name).unwrap_or_else(|| {
                    regs.iter().any(|r| {
                        r.name_any() == i.spec.registration_ref.name
                            && r.spec
                                .deployment
                                .as_ref()
                                .is_some_and(|d| d.deployment_refs.iter().any(|d| d.name == name))
                    })
                })
            })
        })
        .watches_stream(workload_events.touched_objects(), |d: Deployment| {
            d.labels().get(LABEL_CONTROLLER_INSTALLATION).map(|i| ObjectRef::<ControllerInstallation>::new(i))
        })
        .reconcile_all_on(changed_rx);
    let controller = wiring.drive(controller, reconcile::reconcile, reconcile::error_policy, ctx);
    // The controller stops, too, if the tracking of extension objects ever ends.
    wiring
        .run_with(async move {
            tokio::select! {
                () = controller => {}
                () = tracking => {}
            }
        })
        .await;
}

/// Keeps `in_use` current for every extension kind; signals `changed` when a (kind, type)
/// gains its first object or loses its last (what `Required` depends on).
async fn track_all(seed: Client, in_use: InUse, changed: futures::channel::mpsc::UnboundedSender<()>) {
    use api::extensions::*;
    tokio::join!(
        track::<Infrastructure>(seed.clone(), in_use.clone(), changed.clone()),
        track::<ControlPlane>(seed.clone(), in_use.clone(), changed.clone()),
        track::<Worker>(seed.clone(), in_use.clone(), changed.clone()),
        track::<Network>(seed.clone(), in_use.clone(), changed.clone()),
        track::<OperatingSystemConfig>(seed.clone(), in_use.clone(), changed.clone()),
        track::<DNSRecord>(seed.clone(), in_use.clone(), changed.clone()),
        track::<ContainerRuntime>(seed.clone(), in_use.clone(), changed.clone()),
        track::<Extension>(seed.clone(), in_use.clone(), changed.clone()),
        track::<Bastion>(seed.clone(), in_use.clone(), changed.clone()),
        track::<BackupEntry>(seed.clone(), in_use.clone(), changed.clone()),
        track::<BackupBucket>(seed.clone(), in_use.clone(), changed.clone()),
    );
}

async fn track<K: ExtensionKind>(seed: Client, in_use: InUse, changed: futures::channel::mpsc::UnboundedSender<()>) {
    let kind = K::kind(&()).to_string();
    let key = |o: &K| (kind.clone(), o.default_spec().type_.clone());
    let id = |o: &K| match o.namespace() {
        Some(ns) => format!("{ns}/{}", o.name_any()),
        None => o.name_any(),
    };
    let mut stream = std::pin::pin!(watcher(Api::<K>::all(seed), watcher::Config::default()).default_backoff());
    let mut fresh: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    while let Some(event) = stream.next().await {
        let Ok(event) = event else { continue };
        let Ok(mut index) = in_use.write() else { return };
        let before: BTreeSet<(String, String)> =
            index.iter().filter(|(k, v)| k.0 == kind && !v.is_empty()).map(|(k, _)| k.clone()).collect();
        match event {
            watcher::Event::Init => fresh.clear(),
            watcher::Event::InitApply(o) => {
                fresh.entry(key(&o)).or_default().insert(id(&o));
            }
            watcher::Event::InitDone => {
                index.retain(|k, _| k.0 != kind);
                index.extend(std::mem::take(&mut fresh));
            }
            watcher::Event::Apply(o) => {
                index.entry(key(&o)).or_default().insert(id(&o));
            }
            watcher::Event::Delete(o) => {
                if let Some(set) = index.get_mut(&key(&o)) {
                    set.remove(&id(&o));
                }
            }
        }
        let after: BTreeSet<(String, String)> =
            index.iter().filter(|(k, v)| k.0 == kind && !v.is_empty()).map(|(k, _)| k.clone()).collect();
        drop(index);
        if before != after {
            let _ = changed.unbounded_send(());
        }
    }
}
