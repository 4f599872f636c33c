//! The Project controller's wiring, and nothing else: Projects (primary), the project
//! namespaces (labelled `gardener.cloud/role=project`; a change re-queues the project named by
//! their `project.gardener.cloud/name` label), the RoleBindings it owns, and Shoot metadata (a
//! shoot appearing or going away re-queues the project of its namespace, so a deletion waiting
//! for shoots goes on at once). See [`reconcile`] and [`decide`].

pub mod decide;
pub mod reconcile;

use crate::config::ProjectConfig;
use crate::runtime::{self, Common};
use ::runtime::runner::Stop;
use api::core::{Project, Shoot};
use api::helpers::constants::{LABEL_PROJECT_NAME, LABEL_ROLE, ROLE_PROJECT};
use futures::{StreamExt, TryStreamExt, future};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// What a reconcile needs.
#[derive(Debug)]
pub struct Context {
    pub common: Common,
}

/// Runs the controller until `stop`; sets `ready` once its caches have synced.
pub async fn run(common: Common, config: ProjectConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let client = common.client.clone();
    let resources = [kube::api::ApiResource::erase::<Project>(&()), kube::api::ApiResource::erase::<Shoot>(&())];
    if !runtime::served(&client, reconcile::NAME, &resources, stop.clone()).await {
        return;
    }
    let flags: Vec<Arc<AtomicBool>> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let (projects, project_events) =
        runtime::reflect(Api::<Project>::all(client.clone()), watcher::Config::default(), flags[0].clone());
    let (namespaces, namespace_events) = runtime::reflect(
        Api::<Namespace>::all(client.clone()),
        watcher::Config::default().labels(&format!("{LABEL_ROLE}={ROLE_PROJECT}")),
        flags[1].clone(),
    );
    let shoot_flag = flags[2].clone();
    let shoot_events =
        watcher::watcher(Api::<PartialObjectMeta<Shoot>>::all(client.clone()), watcher::Config::default())
            .default_backoff()
            .inspect_ok(move |e| {
                if matches!(e, watcher::Event::InitDone) {
                    shoot_flag.store(true, std::sync::atomic::Ordering::Release);
                }
            });
    let role_bindings = watcher::watcher(
        Api::<RoleBinding>::all(client.clone()),
        watcher::Config::default().labels(LABEL_PROJECT_NAME),
    )
    .default_backoff()
    .touched_objects();

    let ctx = Arc::new(Context { common });
    let ns_store = namespaces.clone();
    let sync = runtime::report_when_synced(flags, ready, stop.clone());
    let controller = Controller::for_stream(project_events.applied_objects(), projects)
        .with_config(kube::runtime::Config::default().concurrency(config.concurrent_syncs))
        .owns_stream(role_bindings)
        .watches_stream(namespace_events.touched_objects(), |ns: Namespace| project_of_namespace(&ns))
        .watches_stream(shoot_events.touched_objects(), move |shoot: PartialObjectMeta<Shoot>| {
            project_of_shoot(&ns_store, &shoot)
        })
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|r| {
            runtime::log_result(reconcile::NAME, r);
            future::ready(())
        });
    futures::join!(controller, sync);
}

fn project_of_namespace(ns: &Namespace) -> Option<ObjectRef<Project>> {
    ns.labels().get(LABEL_PROJECT_NAME).map(|p| ObjectRef::new(p))
}

fn project_of_shoot(namespaces: &Store<Namespace>, shoot: &PartialObjectMeta<Shoot>) -> Option<ObjectRef<Project>> {
    let ns = shoot.meta().namespace.as_deref()?;
    namespaces.get(&ObjectRef::new(ns)).and_then(|ns| project_of_namespace(&ns))
}
