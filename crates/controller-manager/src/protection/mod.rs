//! The protection controllers' wiring: one controller each for CloudProfiles, SecretBindings,
//! Quotas and (metadata only) Secrets, sharing caches of Shoots and SecretBindings. A Shoot
//! event (including its deletion) re-queues the CloudProfile and SecretBinding it names, a
//! SecretBinding event its Secret and Quotas. (An object a Shoot stopped naming keeps its
//! finalizer until its own next event; its deletion is one, and then finds no users.) See
//! [`reconcile`] and [`decide`].

pub mod decide;
pub mod reconcile;

use crate::runtime::{self, Common};
use api::core::{CloudProfile, Quota, SecretBinding, Shoot};
use extension_sdk::runner::Stop;
use futures::channel::mpsc;
use futures::{Stream, StreamExt, future};
use k8s_openapi::api::core::v1::Secret;
use kube::core::{DeserializeGuard, PartialObjectMeta};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use reconcile::Protected;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub struct Context {
    cloud_profile: Common,
    secret_binding: Common,
    quota: Common,
    secret: Common,
    shoots: Store<DeserializeGuard<Shoot>>,
    bindings: Store<SecretBinding>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").finish_non_exhaustive()
    }
}

impl Context {
    fn common(&self, controller: &str) -> &Common {
        [&self.secret_binding, &self.quota, &self.secret]
            .into_iter()
            .find(|c| c.name == controller)
            .unwrap_or(&self.cloud_profile)
    }

    fn client(&self) -> &kube::Client {
        &self.cloud_profile.client
    }

    /// The Shoots that could be read.
    fn shoots(&self) -> Vec<Shoot> {
        self.shoots.state().iter().filter_map(|g| g.0.as_ref().ok().cloned()).collect()
    }

    fn bindings(&self) -> Vec<Arc<SecretBinding>> {
        self.bindings.state()
    }
}

/// The controllers' names, for [`crate::app`].
pub const CONTROLLERS: [&str; 4] = [
    CloudProfile::CONTROLLER,
    SecretBinding::CONTROLLER,
    Quota::CONTROLLER,
    <PartialObjectMeta<Secret> as Protected>::CONTROLLER,
];

/// Runs the four controllers; `common` builds the shared parts of the controller named so.
pub async fn run(common: impl Fn(&'static str) -> Common, concurrency: u16, stop: Stop, ready: Arc<AtomicBool>) {
    let [cloud_profile, secret_binding, quota, secret] = CONTROLLERS.map(&common);
    let client = cloud_profile.client.clone();
    let resources = [
        kube::api::ApiResource::erase::<CloudProfile>(&()),
        kube::api::ApiResource::erase::<SecretBinding>(&()),
        kube::api::ApiResource::erase::<Quota>(&()),
        kube::api::ApiResource::erase::<Shoot>(&()),
    ];
    match runtime::wait_for_resources(&client, "protection", &resources, stop.clone()).await {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            tracing::error!(error = %extension_sdk::cli::report(&e), "the protection controllers cannot start");
            return;
        }
    }
    let flags: Vec<Arc<AtomicBool>> = (0..6).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let (shoots, shoot_events) = runtime::reflect(
        Api::<DeserializeGuard<Shoot>>::all(client.clone()),
        watcher::Config::default(),
        flags[0].clone(),
    );
    let (bindings, binding_events) =
        runtime::reflect(Api::<SecretBinding>::all(client.clone()), watcher::Config::default(), flags[1].clone());
    let (profile_tx, profile_rx) = mpsc::unbounded();
    let (sb_tx, sb_rx) = mpsc::unbounded();
    let (secret_tx, secret_rx) = mpsc::unbounded();
    let (quota_tx, quota_rx) = mpsc::unbounded();
    // The feeds are endless watches: they end with the controllers.
    let feed_shoots = shoot_events.take_until(stop.clone()).for_each(move |event| {
        for guard in touched(event) {
            if let Ok(shoot) = &guard.0 {
                if let Some(profile) = shoot.spec.cloud_profile_name() {
                    let _ = profile_tx.unbounded_send(ObjectRef::new(profile));
                }
                if let (Some(binding), Some(ns)) = (&shoot.spec.secret_binding_name, shoot.namespace()) {
                    let _ = sb_tx.unbounded_send(ObjectRef::new(binding).within(&ns));
                }
            }
        }
        future::ready(())
    });
    let feed_bindings = binding_events.take_until(stop.clone()).for_each(move |event| {
        for binding in touched(event) {
            let (ns, name) = decide::secret_of(&binding);
            let _ = secret_tx.unbounded_send(ObjectRef::new(&name).within(&ns));
            for (ns, name) in decide::quotas_of(&binding) {
                let _ = quota_tx.unbounded_send(ObjectRef::new(&name).within(&ns));
            }
        }
        future::ready(())
    });
    let ctx = Arc::new(Context { cloud_profile, secret_binding, quota, secret, shoots, bindings });
    let sync = runtime::report_when_synced(flags.clone(), ready, stop.clone());
    futures::join!(
        feed_shoots,
        feed_bindings,
        controller::<CloudProfile>(&client, &ctx, flags[2].clone(), profile_rx, concurrency, stop.clone()),
        controller::<SecretBinding>(&client, &ctx, flags[3].clone(), sb_rx, concurrency, stop.clone()),
        controller::<Quota>(&client, &ctx, flags[4].clone(), quota_rx, concurrency, stop.clone()),
        controller::<PartialObjectMeta<Secret>>(&client, &ctx, flags[5].clone(), secret_rx, concurrency, stop.clone()),
        sync,
    );
}

/// The objects an event is about (a failed watch yields none; the watcher retries).
fn touched<K>(event: Result<watcher::Event<K>, watcher::Error>) -> Vec<K> {
    match event {
        Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o) | watcher::Event::Delete(o)) => vec![o],
        _ => Vec::new(),
    }
}

async fn controller<K>(
    client: &kube::Client,
    ctx: &Arc<Context>,
    synced: Arc<AtomicBool>,
    triggers: impl Stream<Item = ObjectRef<K>> + Send + 'static,
    concurrency: u16,
    stop: Stop,
) where
    K: Protected + serde::de::DeserializeOwned,
{
    let (store, events) = runtime::reflect(Api::<K>::all(client.clone()), watcher::Config::default(), synced);
    Controller::for_stream(events.applied_objects(), store)
        .with_config(kube::runtime::Config::default().concurrency(concurrency))
        .reconcile_on(triggers)
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile::<K>, reconcile::error_policy::<K>, ctx.clone())
        .for_each(|r| {
            runtime::log_result(K::CONTROLLER, r);
            future::ready(())
        })
        .await;
}
