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
    ] = CONTROLLERS.map(&common);
    let client = cloud_profile.client.clone();
    let resources = [
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
    ];
    if !runtime::served(&client, "protection", &resources, stop.clone()).await {
        return;
    }
    let mut sync_flags = ::runtime::cache::SyncFlags::new();
    let (shoots, shoot_events) = runtime::reflect(
        Api::<DeserializeGuard<Shoot>>::all(client.clone()),
        watcher::Config::default(),
        sync_flags.flag("shoots"),
    );
    let (bindings, binding_events) = runtime::reflect(
        Api::<SecretBinding>::all(client.clone()),
        watcher::Config::default(),
        sync_flags.flag("secret bindings"),
    );
    let (credentials_bindings, credentials_binding_events) = runtime::reflect(
        Api::<CredentialsBinding>::all(client.clone()),
        watcher::Config::default(),
        sync_flags.flag("credentials bindings"),
    );
    // NamespacedCloudProfiles: their parents use them (CloudProfile protection reads this
    // cache); a change re-queues the parent.
    let (namespaced_cloud_profiles, ncp_events) = runtime::reflect(
        Api::<NamespacedCloudProfile>::all(client.clone()),
        watcher::Config::default(),
        sync_flags.flag("namespaced cloud profiles"),
    );
    let (registrations, registration_events) = runtime::reflect(
        Api::<ControllerRegistration>::all(client.clone()),
        watcher::Config::default(),
        sync_flags.flag("controller registrations"),
    );
    let (installations, installation_events) = runtime::reflect(
        Api::<ControllerInstallation>::all(client.clone()),
        watcher::Config::default(),
        sync_flags.flag("controller installations"),
    );
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
    let feed_shoots = shoot_events.take_until(stop.clone()).for_each(move |event| {
        for guard in touched(event) {
            if let Ok(shoot) = &guard.0 {
                match decide::profile_of(shoot) {
                    Some(ProfileRef::Cluster(name)) => {
                        let _ = profile_tx.unbounded_send(ObjectRef::new(name));
                    }
                    Some(ProfileRef::Namespaced { namespace, name }) => {
                        let _ = ncp_tx.unbounded_send(ObjectRef::new(name).within(namespace));
                    }
                    None => {}
                }
                if let Some(class) = &shoot.spec.exposure_class_name {
                    let _ = exposure_tx.unbounded_send(ObjectRef::new(class));
                }
                if let (Some(binding), Some(ns)) = (&shoot.spec.secret_binding_name, shoot.namespace()) {
                    let _ = sb_tx.unbounded_send(ObjectRef::new(binding).within(&ns));
                }
                if let (Some(binding), Some(ns)) = (&shoot.spec.credentials_binding_name, shoot.namespace()) {
                    let _ = cb_tx.unbounded_send(ObjectRef::new(binding).within(&ns));
                }
                let on = shoot.spec.seed_name.iter().chain(shoot.status.as_ref().and_then(|s| s.seed_name.as_ref()));
                for seed in on {
                    let _ = seed_tx.unbounded_send(ObjectRef::new(seed));
                }
            }
        }
        future::ready(())
    });
    // A binding event re-queues its credentials (Secret or WorkloadIdentity) and Quotas.
    let (wi_tx, wi_rx) = mpsc::unbounded();
    let requeue = move |refs: decide::BindingRefs| {
        let (kind, ns, name) = refs.credentials;
        match kind {
            decide::CredentialsKind::Secret => {
                let _ = secret_tx.unbounded_send(ObjectRef::new(&name).within(&ns));
            }
            decide::CredentialsKind::WorkloadIdentity => {
                let _ = wi_tx.unbounded_send(ObjectRef::new(&name).within(&ns));
            }
            decide::CredentialsKind::Other => {}
        }
        for (ns, name) in refs.quotas {
            let _ = quota_tx.unbounded_send(ObjectRef::new(&name).within(&ns));
        }
    };
    let requeue2 = requeue.clone();
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
    let ctx = Arc::new(Context {
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
    });
    let seed_controller_synced = sync_flags.flag("seed controller");
    let controller_registration_controller_synced = sync_flags.flag("controller registration controller");
    let controller_deployment_controller_synced = sync_flags.flag("controller deployment controller");
    let cloud_profile_controller_synced = sync_flags.flag("cloud profile controller");
    let secret_binding_controller_synced = sync_flags.flag("secret binding controller");
    let credentials_binding_controller_synced = sync_flags.flag("credentials binding controller");
    let quota_controller_synced = sync_flags.flag("quota controller");
    let secret_controller_synced = sync_flags.flag("secret controller");
    let workload_identity_controller_synced = sync_flags.flag("workload identity controller");
    let namespaced_cloud_profile_controller_synced = sync_flags.flag("namespaced cloud profile controller");
    let exposure_class_controller_synced = sync_flags.flag("exposure class controller");
    let sync = runtime::report_when_synced(sync_flags.all(), ready, stop.clone());
    futures::join!(
        feed_shoots,
        feed_bindings,
        feed_credentials_bindings,
        feed_ncps,
        feed_installations,
        feed_registrations,
        controller::<Seed>(&client, &ctx, seed_controller_synced, seed_rx, concurrency, stop.clone()),
        controller::<ControllerRegistration>(
            &client,
            &ctx,
            controller_registration_controller_synced,
            registration_rx,
            concurrency,
            stop.clone()
        ),
        controller::<ControllerDeployment>(
            &client,
            &ctx,
            controller_deployment_controller_synced,
            deployment_rx,
            concurrency,
            stop.clone()
        ),
        controller::<CloudProfile>(
            &client,
            &ctx,
            cloud_profile_controller_synced,
            profile_rx,
            concurrency,
            stop.clone()
        ),
        controller::<SecretBinding>(&client, &ctx, secret_binding_controller_synced, sb_rx, concurrency, stop.clone()),
        controller::<CredentialsBinding>(
            &client,
            &ctx,
            credentials_binding_controller_synced,
            cb_rx,
            concurrency,
            stop.clone()
        ),
        controller::<Quota>(&client, &ctx, quota_controller_synced, quota_rx, concurrency, stop.clone()),
        controller::<PartialObjectMeta<Secret>>(
            &client,
            &ctx,
            secret_controller_synced,
            secret_rx,
            concurrency,
            stop.clone()
        ),
        controller::<WorkloadIdentity>(
            &client,
            &ctx,
            workload_identity_controller_synced,
            wi_rx,
            concurrency,
            stop.clone()
        ),
        controller::<NamespacedCloudProfile>(
            &client,
            &ctx,
            namespaced_cloud_profile_controller_synced,
            ncp_rx,
            concurrency,
            stop.clone()
        ),
        controller::<ExposureClass>(
            &client,
            &ctx,
            exposure_class_controller_synced,
            exposure_rx,
            concurrency,
            stop.clone()
        ),
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
