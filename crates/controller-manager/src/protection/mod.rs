//! The protection controllers' wiring: one controller each for CloudProfiles,
//! NamespacedCloudProfiles, ExposureClasses, SecretBindings,
//! CredentialsBindings, Quotas, (metadata only) Secrets, WorkloadIdentities, Seeds,
//! ControllerRegistrations and ControllerDeployments, sharing caches of Shoots, SecretBindings,
//! CredentialsBindings, ControllerRegistrations and ControllerInstallations. A Shoot event
//! (including its deletion) re-queues the CloudProfile, SecretBinding or CredentialsBinding and
//! Seeds it names, a SecretBinding or CredentialsBinding event its credentials and Quotas, a
//! ControllerInstallation event its registration and deployment, a ControllerRegistration event
//! its deployments. (An object a Shoot stopped naming keeps its
//! finalizer until its own next event; its deletion is one, and then finds no users.) See
//! [`reconcile`] and [`decide`].

pub mod decide;
pub mod reconcile;

use crate::runtime::Common;
use ::runtime::runner::Stop;
use ::runtime::wiring::{Events, Wiring};
use api::core::{
    CloudProfile, ControllerDeployment, ControllerInstallation, ControllerRegistration, ExposureClass,
    NamespacedCloudProfile, Quota, SecretBinding, Seed, Shoot,
};
use api::helpers::cloudprofile_ref::ProfileRef;
use api::security::{CredentialsBinding, WorkloadIdentity};
use futures::channel::mpsc;
use futures::{Stream, StreamExt, future};
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::core::{DeserializeGuard, PartialObjectMeta};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use reconcile::Protected;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub struct Context {
    /// Each controller's shared parts, in the order of [`CONTROLLERS`].
    commons: [Common; 11],
    stores: SharedStores,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").finish_non_exhaustive()
    }
}

impl Context {
    /// The shared parts of the controller named `controller` (the CloudProfile controller's
    /// for another name).
    fn common(&self, controller: &str) -> &Common {
        self.commons.iter().find(|c| c.name == controller).unwrap_or(&self.commons[0])
    }

    fn client(&self) -> &kube::Client {
        &self.commons[0].client
    }

    /// The Shoots that could be read.
    fn shoots(&self) -> Vec<Shoot> {
        self.stores.shoots.state().iter().filter_map(|g| g.0.as_ref().ok().cloned()).collect()
    }

    /// What every SecretBinding and CredentialsBinding refers to.
    fn binding_refs(&self) -> Vec<decide::BindingRefs> {
        let secret_bindings = self.stores.bindings.state();
        let credentials_bindings = self.stores.credentials_bindings.state();
        secret_bindings
            .iter()
            .map(|b| decide::BindingRefs::of_secret_binding(b))
            .chain(credentials_bindings.iter().map(|b| decide::BindingRefs::of_credentials_binding(b)))
            .collect()
    }

    fn namespaced_cloud_profiles(&self) -> Vec<Arc<NamespacedCloudProfile>> {
        self.stores.namespaced_cloud_profiles.state()
    }

    fn registrations(&self) -> Vec<Arc<ControllerRegistration>> {
        self.stores.registrations.state()
    }

    fn installations(&self) -> Vec<Arc<ControllerInstallation>> {
        self.stores.installations.state()
    }
}

/// The controllers' names, for [`crate::app`].
pub const CONTROLLERS: [&str; 11] = [
    CloudProfile::CONTROLLER,
    SecretBinding::CONTROLLER,
    CredentialsBinding::CONTROLLER,
    Quota::CONTROLLER,
    <PartialObjectMeta<Secret> as Protected>::CONTROLLER,
    Seed::CONTROLLER,
    ControllerRegistration::CONTROLLER,
    ControllerDeployment::CONTROLLER,
    WorkloadIdentity::CONTROLLER,
    NamespacedCloudProfile::CONTROLLER,
    ExposureClass::CONTROLLER,
];

/// Runs the eleven controllers; `common` builds the shared parts of the controller named so.
pub async fn run(common: impl Fn(&'static str) -> Common, concurrency: u16, stop: Stop, ready: Arc<AtomicBool>) {
    let commons = CONTROLLERS.map(&common);
    let wiring = Wiring::new("protection", commons[0].client.clone(), stop, ready).concurrency(concurrency);
    let Some(mut wiring) = wiring.when_served::<Watched>().await else { return };
    let queues = Queues::default();
    let stores = shared_caches(&mut wiring, &queues);
    let ctx = Arc::new(Context { commons, stores });
    let controllers = controllers(&mut wiring, &ctx, queues);
    wiring.run_with(controllers).await;
}

/// Every kind the controllers watch: they start only once all are served.
type Watched = (
    CloudProfile,
    SecretBinding,
    CredentialsBinding,
    Quota,
    Shoot,
    Seed,
    ControllerRegistration,
    ControllerDeployment,
    ControllerInstallation,
    WorkloadIdentity,
    NamespacedCloudProfile,
    ExposureClass,
);

/// The caches the controllers share, each re-queueing (through `queues`) what its objects use:
/// a Shoot the objects it names, a SecretBinding or CredentialsBinding its credentials and
/// Quotas, a NamespacedCloudProfile its parent, a ControllerRegistration its deployments, a
/// ControllerInstallation its registration and deployment. The feeds are endless watches: they
/// run alongside the controllers.
fn shared_caches(wiring: &mut Wiring, queues: &Queues) -> SharedStores {
    let q = queues;
    let all = watcher::Config::default;
    let (shoots, events) = wiring.cache("shoots", wiring.all::<DeserializeGuard<Shoot>>(), all());
    let shoot_users = ShootUsers {
        profile: q.profile.tx.clone(),
        ncp: q.ncp.tx.clone(),
        exposure: q.exposure.tx.clone(),
        sb: q.sb.tx.clone(),
        cb: q.cb.tx.clone(),
        seed: q.seed.tx.clone(),
    };
    feed(wiring, events, move |guard: DeserializeGuard<Shoot>| {
        if let Ok(shoot) = &guard.0 {
            shoot_users.requeue(shoot);
        }
    });
    let binding_users =
        Arc::new(BindingUsers { secret: q.secret.tx.clone(), wi: q.wi.tx.clone(), quota: q.quota.tx.clone() });
    let (bindings, events) = wiring.cache("secret bindings", wiring.all::<SecretBinding>(), all());
    let users = binding_users.clone();
    feed(wiring, events, move |b: SecretBinding| users.requeue(decide::BindingRefs::of_secret_binding(&b)));
    let (credentials_bindings, events) =
        wiring.cache("credentials bindings", wiring.all::<CredentialsBinding>(), all());
    feed(wiring, events, move |b: CredentialsBinding| {
        binding_users.requeue(decide::BindingRefs::of_credentials_binding(&b));
    });
    // NamespacedCloudProfiles: their parents use them (CloudProfile protection reads this
    // cache); a change re-queues the parent.
    let (namespaced_cloud_profiles, events) =
        wiring.cache("namespaced cloud profiles", wiring.all::<NamespacedCloudProfile>(), all());
    let profile = q.profile.tx.clone();
    feed(wiring, events, move |child: NamespacedCloudProfile| {
        let _ = profile.unbounded_send(ObjectRef::new(&child.spec.parent.name));
    });
    let (registrations, events) =
        wiring.cache("controller registrations", wiring.all::<ControllerRegistration>(), all());
    let deployments = q.deployment.tx.clone();
    feed(wiring, events, move |r: ControllerRegistration| {
        for d in decide::deployments_of(&r) {
            let _ = deployments.unbounded_send(ObjectRef::new(&d));
        }
    });
    let (installations, events) =
        wiring.cache("controller installations", wiring.all::<ControllerInstallation>(), all());
    let (registration, deployment) = (q.registration.tx.clone(), q.deployment.tx.clone());
    feed(wiring, events, move |i: ControllerInstallation| {
        let _ = registration.unbounded_send(ObjectRef::new(&i.spec.registration_ref.name));
        if let Some(d) = &i.spec.deployment_ref {
            let _ = deployment.unbounded_send(ObjectRef::new(&d.name));
        }
    });
    SharedStores { shoots, bindings, credentials_bindings, namespaced_cloud_profiles, registrations, installations }
}

/// Calls `requeue` with each object the events touch (applied or deleted), alongside the
/// controllers (a failed watch yields none; the watcher retries).
fn feed<K>(
    wiring: &mut Wiring,
    events: impl Stream<Item = Events<K>> + Send + 'static,
    mut requeue: impl FnMut(K) + Send + 'static,
) where
    K: kube::Resource + Clone + Send + 'static,
{
    wiring.alongside(events.touched_objects().for_each(move |touched| {
        if let Ok(object) = touched {
            requeue(object);
        }
        future::ready(())
    }));
}

/// The caches the controllers share (besides each controller's own).
struct SharedStores {
    shoots: Store<DeserializeGuard<Shoot>>,
    bindings: Store<SecretBinding>,
    credentials_bindings: Store<CredentialsBinding>,
    namespaced_cloud_profiles: Store<NamespacedCloudProfile>,
    registrations: Store<ControllerRegistration>,
    installations: Store<ControllerInstallation>,
}

/// Where a SecretBinding or CredentialsBinding event re-queues its credentials (Secret or
/// WorkloadIdentity) and Quotas.
struct BindingUsers {
    secret: mpsc::UnboundedSender<ObjectRef<PartialObjectMeta<Secret>>>,
    wi: mpsc::UnboundedSender<ObjectRef<WorkloadIdentity>>,
    quota: mpsc::UnboundedSender<ObjectRef<Quota>>,
}

impl BindingUsers {
    fn requeue(&self, refs: decide::BindingRefs) {
        let (kind, ns, name) = refs.credentials;
        match kind {
            decide::CredentialsKind::Secret => {
                let _ = self.secret.unbounded_send(ObjectRef::new(&name).within(&ns));
            }
            decide::CredentialsKind::WorkloadIdentity => {
                let _ = self.wi.unbounded_send(ObjectRef::new(&name).within(&ns));
            }
            decide::CredentialsKind::Other => {}
        }
        for (ns, name) in refs.quotas {
            let _ = self.quota.unbounded_send(ObjectRef::new(&name).within(&ns));
        }
    }
}

/// Where a Shoot event re-queues the objects the Shoot uses.
struct ShootUsers {
    profile: mpsc::UnboundedSender<ObjectRef<CloudProfile>>,
    ncp: mpsc::UnboundedSender<ObjectRef<NamespacedCloudProfile>>,
    exposure: mpsc::UnboundedSender<ObjectRef<ExposureClass>>,
    sb: mpsc::UnboundedSender<ObjectRef<SecretBinding>>,
    cb: mpsc::UnboundedSender<ObjectRef<CredentialsBinding>>,
    seed: mpsc::UnboundedSender<ObjectRef<Seed>>,
}

impl ShootUsers {
    /// Re-queues the profile, ExposureClass, bindings and Seeds `shoot` names (a closed queue
    /// means its controller stopped: nothing to do).
    fn requeue(&self, shoot: &Shoot) {
        match decide::profile_of(shoot) {
            Some(ProfileRef::Cluster(name)) => {
                let _ = self.profile.unbounded_send(ObjectRef::new(name));
            }
            Some(ProfileRef::Namespaced { namespace, name }) => {
                let _ = self.ncp.unbounded_send(ObjectRef::new(name).within(namespace));
            }
            None => {}
        }
        if let Some(class) = &shoot.spec.exposure_class_name {
            let _ = self.exposure.unbounded_send(ObjectRef::new(class));
        }
        if let (Some(binding), Some(ns)) = (&shoot.spec.secret_binding_name, shoot.namespace()) {
            let _ = self.sb.unbounded_send(ObjectRef::new(binding).within(&ns));
        }
        if let (Some(binding), Some(ns)) = (&shoot.spec.credentials_binding_name, shoot.namespace()) {
            let _ = self.cb.unbounded_send(ObjectRef::new(binding).within(&ns));
        }
        let on = shoot.spec.seed_name.iter().chain(shoot.status.as_ref().and_then(|s| s.seed_name.as_ref()));
        for seed in on {
            let _ = self.seed.unbounded_send(ObjectRef::new(seed));
        }
    }
}

/// A controller's re-queue channel: the feeds of the shared caches send on clones of `tx`,
/// the controller reads `rx`.
struct Queue<K: kube::Resource> {
    tx: mpsc::UnboundedSender<ObjectRef<K>>,
    rx: mpsc::UnboundedReceiver<ObjectRef<K>>,
}

impl<K: kube::Resource> Default for Queue<K> {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded();
        Self { tx, rx }
    }
}

/// One re-queue channel per controller.
#[derive(Default)]
struct Queues {
    seed: Queue<Seed>,
    registration: Queue<ControllerRegistration>,
    deployment: Queue<ControllerDeployment>,
    profile: Queue<CloudProfile>,
    sb: Queue<SecretBinding>,
    cb: Queue<CredentialsBinding>,
    quota: Queue<Quota>,
    secret: Queue<PartialObjectMeta<Secret>>,
    wi: Queue<WorkloadIdentity>,
    ncp: Queue<NamespacedCloudProfile>,
    exposure: Queue<ExposureClass>,
}

/// The eleven controllers, each over its own cache (readiness waits for each, named after its
/// controller), until the stop.
fn controllers(wiring: &mut Wiring, ctx: &Arc<Context>, queues: Queues) -> impl Future<Output = ()> + use<> {
    let q = queues;
    let seed = controller(wiring, ctx, q.seed.rx);
    let registration = controller(wiring, ctx, q.registration.rx);
    let deployment = controller(wiring, ctx, q.deployment.rx);
    let profile = controller(wiring, ctx, q.profile.rx);
    let sb = controller(wiring, ctx, q.sb.rx);
    let cb = controller(wiring, ctx, q.cb.rx);
    let quota = controller(wiring, ctx, q.quota.rx);
    let secret = controller(wiring, ctx, q.secret.rx);
    let wi = controller(wiring, ctx, q.wi.rx);
    let ncp = controller(wiring, ctx, q.ncp.rx);
    let exposure = controller(wiring, ctx, q.exposure.rx);
    async move {
        futures::join!(seed, registration, deployment, profile, sb, cb, quota, secret, wi, ncp, exposure);
    }
}

/// The protection controller of `K`, re-queued by `triggers` besides its own watch.
fn controller<K>(
    wiring: &mut Wiring,
    ctx: &Arc<Context>,
    triggers: mpsc::UnboundedReceiver<ObjectRef<K>>,
) -> impl Future<Output = ()> + use<K>
where
    K: Protected + serde::de::DeserializeOwned,
{
    let controller =
        wiring.controller(K::CONTROLLER, wiring.all::<K>(), watcher::Config::default()).reconcile_on(triggers);
    wiring.drive(controller, reconcile::reconcile::<K>, reconcile::error_policy::<K>, ctx.clone())
}
