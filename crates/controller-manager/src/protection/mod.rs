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

use crate::runtime::{self, Common};
use ::runtime::runner::Stop;
use api::core::{
    CloudProfile, ControllerDeployment, ControllerInstallation, ControllerRegistration, ExposureClass,
    NamespacedCloudProfile, Quota, SecretBinding, Seed, Shoot,
};
use api::helpers::cloudprofile_ref::ProfileRef;
use api::security::{CredentialsBinding, WorkloadIdentity};
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
    credentials_binding: Common,
    quota: Common,
    secret: Common,
    seed: Common,
    registration: Common,
    deployment: Common,
    workload_identity: Common,
    namespaced_cloud_profile: Common,
    exposure_class: Common,
    shoots: Store<DeserializeGuard<Shoot>>,
    bindings: Store<SecretBinding>,
    credentials_bindings: Store<CredentialsBinding>,
    namespaced_cloud_profiles: Store<NamespacedCloudProfile>,
    registrations: Store<ControllerRegistration>,
    installations: Store<ControllerInstallation>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").finish_non_exhaustive()
    }
}

impl Context {
    fn common(&self, controller: &str) -> &Common {
        [
            &self.secret_binding,
            &self.credentials_binding,
            &self.quota,
            &self.secret,
            &self.seed,
            &self.registration,
            &self.deployment,
            &self.workload_identity,
            &self.namespaced_cloud_profile,
            &self.exposure_class,
        ]
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

    /// What every SecretBinding and CredentialsBinding refers to.
    fn binding_refs(&self) -> Vec<decide::BindingRefs> {
        let secret_bindings = self.bindings.state();
        let credentials_bindings = self.credentials_bindings.state();
        secret_bindings
            .iter()
            .map(|b| decide::BindingRefs::of_secret_binding(b))
            .chain(credentials_bindings.iter().map(|b| decide::BindingRefs::of_credentials_binding(b)))
            .collect()
    }

    fn namespaced_cloud_profiles(&self) -> Vec<Arc<NamespacedCloudProfile>> {
        self.namespaced_cloud_profiles.state()
    }

    fn registrations(&self) -> Vec<Arc<ControllerRegistration>> {
        self.registrations.state()
    }

    fn installations(&self) -> Vec<Arc<ControllerInstallation>> {
        self.installations.state()
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
    let client = commons[0].client.clone();
    let resources = watched_resources();
    if !runtime::served(&client, "protection", &resources, stop.clone()).await {
        return;
    }
    let mut sync_flags = ::runtime::cache::SyncFlags::new();
    let (shoots, shoot_events) = watch_all::<DeserializeGuard<Shoot>>(&client, &mut sync_flags, "shoots");
    let (bindings, binding_events) = watch_all::<SecretBinding>(&client, &mut sync_flags, "secret bindings");
    let (credentials_bindings, credentials_binding_events) =
        watch_all::<CredentialsBinding>(&client, &mut sync_flags, "credentials bindings");
    // NamespacedCloudProfiles: their parents use them (CloudProfile protection reads this
    // cache); a change re-queues the parent.
    let (namespaced_cloud_profiles, ncp_events) =
        watch_all::<NamespacedCloudProfile>(&client, &mut sync_flags, "namespaced cloud profiles");
    let (registrations, registration_events) =
        watch_all::<ControllerRegistration>(&client, &mut sync_flags, "controller registrations");
    let (installations, installation_events) =
        watch_all::<ControllerInstallation>(&client, &mut sync_flags, "controller installations");
    let (seed_tx, seed_rx) = mpsc::unbounded();
    let (registration_tx, registration_rx) = mpsc::unbounded();
    let (deployment_tx, deployment_rx) = mpsc::unbounded();
    let deployment_tx2 = deployment_tx.clone();
    let (profile_tx, profile_rx) = mpsc::unbounded();
    let (sb_tx, sb_rx) = mpsc::unbounded();
    let (cb_tx, cb_rx) = mpsc::unbounded();
    let (secret_tx, secret_rx) = mpsc::unbounded();
    let (quota_tx, quota_rx) = mpsc::unbounded();
    // The feeds are endless watches: they end with the controllers.
    let (ncp_tx, ncp_rx) = mpsc::unbounded();
    let (exposure_tx, exposure_rx) = mpsc::unbounded();
    let profile_tx2 = profile_tx.clone();
    let feed_ncps = ncp_events.take_until(stop.clone()).for_each(move |event| {
        for child in touched(event) {
            let _ = profile_tx2.unbounded_send(ObjectRef::new(&child.spec.parent.name));
        }
        future::ready(())
    });
    let shoot_users =
        ShootUsers { profile: profile_tx, ncp: ncp_tx, exposure: exposure_tx, sb: sb_tx, cb: cb_tx, seed: seed_tx };
    let feed_shoots = shoot_events.take_until(stop.clone()).for_each(move |event| {
        for guard in touched(event) {
            if let Ok(shoot) = &guard.0 {
                shoot_users.requeue(shoot);
            }
        }
        future::ready(())
    });
    // A binding event re-queues its credentials (Secret or WorkloadIdentity) and Quotas.
    let (wi_tx, wi_rx) = mpsc::unbounded();
    let binding_users = Arc::new(BindingUsers { secret: secret_tx, wi: wi_tx, quota: quota_tx });
    let requeue = {
        let users = binding_users.clone();
        move |refs: decide::BindingRefs| users.requeue(refs)
    };
    let requeue2 = move |refs: decide::BindingRefs| binding_users.requeue(refs);
    let feed_bindings = binding_events.take_until(stop.clone()).for_each(move |event| {
        touched(event).iter().map(decide::BindingRefs::of_secret_binding).for_each(&requeue);
        future::ready(())
    });
    let feed_credentials_bindings = credentials_binding_events.take_until(stop.clone()).for_each(move |event| {
        touched(event).iter().map(decide::BindingRefs::of_credentials_binding).for_each(&requeue2);
        future::ready(())
    });
    let feed_installations = installation_events.take_until(stop.clone()).for_each(move |event| {
        for i in touched(event) {
            let _ = registration_tx.unbounded_send(ObjectRef::new(&i.spec.registration_ref.name));
            if let Some(d) = &i.spec.deployment_ref {
                let _ = deployment_tx.unbounded_send(ObjectRef::new(&d.name));
            }
        }
        future::ready(())
    });
    let feed_registrations = registration_events.take_until(stop.clone()).for_each(move |event| {
        for r in touched(event) {
            for d in decide::deployments_of(&r) {
                let _ = deployment_tx2.unbounded_send(ObjectRef::new(&d));
            }
        }
        future::ready(())
    });
    let ctx = Arc::new(Context::new(
        commons,
        SharedStores {
            shoots,
            bindings,
            credentials_bindings,
            namespaced_cloud_profiles,
            registrations,
            installations,
        },
    ));
    let synced = ControllerFlags::new(&mut sync_flags);
    let sync = runtime::report_when_synced(sync_flags.all(), ready, stop.clone());
    let triggers = Triggers {
        seed: seed_rx,
        registration: registration_rx,
        deployment: deployment_rx,
        profile: profile_rx,
        sb: sb_rx,
        cb: cb_rx,
        quota: quota_rx,
        secret: secret_rx,
        wi: wi_rx,
        ncp: ncp_rx,
        exposure: exposure_rx,
    };
    futures::join!(
        feed_shoots,
        feed_bindings,
        feed_credentials_bindings,
        feed_ncps,
        feed_installations,
        feed_registrations,
        controllers(&client, &ctx, synced, triggers, concurrency, stop),
        sync,
    );
}

/// Every kind the controllers watch: they start only once all are served.
fn watched_resources() -> [kube::api::ApiResource; 12] {
    [
        kube::api::ApiResource::erase::<CloudProfile>(&()),
        kube::api::ApiResource::erase::<SecretBinding>(&()),
        kube::api::ApiResource::erase::<CredentialsBinding>(&()),
        kube::api::ApiResource::erase::<Quota>(&()),
        kube::api::ApiResource::erase::<Shoot>(&()),
        kube::api::ApiResource::erase::<Seed>(&()),
        kube::api::ApiResource::erase::<ControllerRegistration>(&()),
        kube::api::ApiResource::erase::<ControllerDeployment>(&()),
        kube::api::ApiResource::erase::<ControllerInstallation>(&()),
        kube::api::ApiResource::erase::<WorkloadIdentity>(&()),
        kube::api::ApiResource::erase::<NamespacedCloudProfile>(&()),
        kube::api::ApiResource::erase::<ExposureClass>(&()),
    ]
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

impl Context {
    /// The context from the controllers' shared parts, in the order of [`CONTROLLERS`].
    fn new(commons: [Common; 11], stores: SharedStores) -> Self {
        let [
            cloud_profile,
            secret_binding,
            credentials_binding,
            quota,
            secret,
            seed,
            registration,
            deployment,
            workload_identity,
            namespaced_cloud_profile,
            exposure_class,
        ] = commons;
        let SharedStores {
            shoots,
            bindings,
            credentials_bindings,
            namespaced_cloud_profiles,
            registrations,
            installations,
        } = stores;
        Self {
            cloud_profile,
            secret_binding,
            credentials_binding,
            quota,
            secret,
            seed,
            registration,
            deployment,
            workload_identity,
            namespaced_cloud_profile,
            exposure_class,
            shoots,
            bindings,
            credentials_bindings,
            namespaced_cloud_profiles,
            registrations,
            installations,
        }
    }
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

/// The readiness flag of each controller's own cache, named for the readiness report.
struct ControllerFlags {
    seed: Arc<AtomicBool>,
    registration: Arc<AtomicBool>,
    deployment: Arc<AtomicBool>,
    profile: Arc<AtomicBool>,
    sb: Arc<AtomicBool>,
    cb: Arc<AtomicBool>,
    quota: Arc<AtomicBool>,
    secret: Arc<AtomicBool>,
    wi: Arc<AtomicBool>,
    ncp: Arc<AtomicBool>,
    exposure: Arc<AtomicBool>,
}

impl ControllerFlags {
    fn new(flags: &mut ::runtime::cache::SyncFlags) -> Self {
        Self {
            seed: flags.flag("seed controller"),
            registration: flags.flag("controller registration controller"),
            deployment: flags.flag("controller deployment controller"),
            profile: flags.flag("cloud profile controller"),
            sb: flags.flag("secret binding controller"),
            cb: flags.flag("credentials binding controller"),
            quota: flags.flag("quota controller"),
            secret: flags.flag("secret controller"),
            wi: flags.flag("workload identity controller"),
            ncp: flags.flag("namespaced cloud profile controller"),
            exposure: flags.flag("exposure class controller"),
        }
    }
}

/// The re-queue channels' receiving ends, one per controller.
struct Triggers {
    seed: mpsc::UnboundedReceiver<ObjectRef<Seed>>,
    registration: mpsc::UnboundedReceiver<ObjectRef<ControllerRegistration>>,
    deployment: mpsc::UnboundedReceiver<ObjectRef<ControllerDeployment>>,
    profile: mpsc::UnboundedReceiver<ObjectRef<CloudProfile>>,
    sb: mpsc::UnboundedReceiver<ObjectRef<SecretBinding>>,
    cb: mpsc::UnboundedReceiver<ObjectRef<CredentialsBinding>>,
    quota: mpsc::UnboundedReceiver<ObjectRef<Quota>>,
    secret: mpsc::UnboundedReceiver<ObjectRef<PartialObjectMeta<Secret>>>,
    wi: mpsc::UnboundedReceiver<ObjectRef<WorkloadIdentity>>,
    ncp: mpsc::UnboundedReceiver<ObjectRef<NamespacedCloudProfile>>,
    exposure: mpsc::UnboundedReceiver<ObjectRef<ExposureClass>>,
}

/// Runs the eleven controllers until `stop`.
async fn controllers(
    client: &kube::Client,
    ctx: &Arc<Context>,
    synced: ControllerFlags,
    triggers: Triggers,
    concurrency: u16,
    stop: Stop,
) {
    let (c, s) = (concurrency, stop);
    futures::join!(
        controller::<Seed>(client, ctx, synced.seed, triggers.seed, c, s.clone()),
        controller::<ControllerRegistration>(client, ctx, synced.registration, triggers.registration, c, s.clone()),
        controller::<ControllerDeployment>(client, ctx, synced.deployment, triggers.deployment, c, s.clone()),
        controller::<CloudProfile>(client, ctx, synced.profile, triggers.profile, c, s.clone()),
        controller::<SecretBinding>(client, ctx, synced.sb, triggers.sb, c, s.clone()),
        controller::<CredentialsBinding>(client, ctx, synced.cb, triggers.cb, c, s.clone()),
        controller::<Quota>(client, ctx, synced.quota, triggers.quota, c, s.clone()),
        controller::<PartialObjectMeta<Secret>>(client, ctx, synced.secret, triggers.secret, c, s.clone()),
        controller::<WorkloadIdentity>(client, ctx, synced.wi, triggers.wi, c, s.clone()),
        controller::<NamespacedCloudProfile>(client, ctx, synced.ncp, triggers.ncp, c, s.clone()),
        controller::<ExposureClass>(client, ctx, synced.exposure, triggers.exposure, c, s),
    );
}

/// A cache of every `K`, ready (its flag named `name`) once listed, and its events.
fn watch_all<K>(
    client: &kube::Client,
    flags: &mut ::runtime::cache::SyncFlags,
    name: &'static str,
) -> (Store<K>, impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static)
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    runtime::reflect(Api::<K>::all(client.clone()), watcher::Config::default(), flags.flag(name))
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
