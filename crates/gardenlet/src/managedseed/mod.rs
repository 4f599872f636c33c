//! The ManagedSeed controller (GEP-13, gardenlet's part): a shoot on this seed registered as a
//! seed of its own. For each ManagedSeed (namespace `garden`) whose shoot runs on this seed, it
//! waits until the shoot is reconciled, gives the new seed's gardenlet an identity in the
//! garden, deploys gardenlet into the shoot, and reports `ShootReconciled` and
//! `SeedRegistered`. Deleting the ManagedSeed deletes the Seed once no shoot uses it, waits
//! until the seed's extensions are uninstalled, and removes gardenlet and its identity. See
//! [`decide`] (pure), [`manifests`] (the objects) and [`reconcile`].
//!
//! Watches: ManagedSeeds in `garden`, the Shoots they name (a change of the shoot re-queues
//! its ManagedSeed), and Seeds (a Seed re-queues the ManagedSeed of its name).

pub mod decide;
pub mod manifests;
pub mod reconcile;
pub mod token;

use crate::config::GardenletConfig;
use api::core::{Seed, Shoot};
use api::seedmanagement::ManagedSeed;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use runtime::wiring::Wiring;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// How gardenlets inside shoots reach the garden.
#[derive(Clone)]
pub struct GardenEndpoint {
    /// The API server URL.
    pub server: String,
    /// The CA (PEM) that signed its serving certificate.
    pub ca_pem: String,
}

impl std::fmt::Debug for GardenEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GardenEndpoint").field("server", &self.server).finish_non_exhaustive()
    }
}

impl GardenEndpoint {
    /// The endpoint of a client configuration (its URL and the CAs it trusts), unless the
    /// settings name others.
    pub fn from_config(
        config: &kube::Config,
        settings: &crate::config::ManagedSeedSettings,
    ) -> Result<Self, std::io::Error> {
        let server = settings
            .garden_cluster_address
            .clone()
            .unwrap_or_else(|| config.cluster_url.to_string().trim_end_matches('/').to_string());
        let ca_pem = match &settings.garden_cluster_ca_file {
            Some(path) => std::fs::read_to_string(path)?,
            None => config.root_cert.as_deref().unwrap_or_default().iter().map(|der| pem(der)).collect(),
        };
        Ok(Self { server, ca_pem })
    }
}

/// A DER certificate as PEM.
pub(crate) fn pem(der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

pub struct Context {
    pub seed_name: String,
    pub garden: Client,
    pub seed: Client,
    /// This gardenlet's configuration: the base of managed gardenlets' configurations.
    pub parent: Arc<GardenletConfig>,
    pub endpoint: GardenEndpoint,
    pub image: String,
    /// How long to wait between looks at things no watch reports (a shoot's objects).
    pub poll: std::time::Duration,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("seed_name", &self.seed_name).finish_non_exhaustive()
    }
}

/// The ManagedSeeds that name `shoot`.
fn managed_seeds_of(store: &Store<ManagedSeed>, shoot: &Shoot) -> Vec<ObjectRef<ManagedSeed>> {
    let (ns, name) = (shoot.namespace(), shoot.name_any());
    store
        .state()
        .iter()
        .filter(|ms| ms.namespace() == ns && ms.spec.shoot.as_ref().is_some_and(|s| s.name == name))
        .map(|ms| ObjectRef::from_obj(ms.as_ref()))
        .collect()
}

/// Runs the controller until `stop`; `ready` turns true once the ManagedSeed cache is filled.
pub async fn run(
    ctx: Context,
    concurrency: u16,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    ready: Arc<AtomicBool>,
) {
    let ns = api::helpers::constants::GARDEN_NAMESPACE;
    let mut wiring = Wiring::new("managed-seed", ctx.garden.clone(), stop, ready).concurrency(concurrency);
    let managed_seeds = Api::<ManagedSeed>::namespaced(ctx.garden.clone(), ns);
    let controller = wiring.controller("managed seeds", managed_seeds, watcher::Config::default());
    let store = controller.store();
    let shoots = Api::<Shoot>::namespaced(ctx.garden.clone(), ns);
    let seeds = Api::<Seed>::all(ctx.garden.clone());
    let controller = controller
        .watches(shoots, watcher::Config::default(), move |shoot| managed_seeds_of(&store, &shoot))
        .watches(seeds, watcher::Config::default(), move |seed: Seed| {
            Some(ObjectRef::new(&seed.name_any()).within(ns))
        });
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, Arc::new(ctx)).await;
}
