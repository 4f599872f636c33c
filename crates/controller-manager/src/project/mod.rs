//! The Project controller's wiring, and nothing else: Projects (primary), the project
//! namespaces (labelled `gardener.cloud/role=project`; a change re-queues the project named by
//! their `project.gardener.cloud/name` label), the RoleBindings it owns, and Shoot metadata (a
//! shoot appearing or going away re-queues the project of its namespace, so a deletion waiting
//! for shoots goes on at once). See [`reconcile`] and [`decide`].

pub mod decide;
pub mod reconcile;

use crate::config::ProjectConfig;
use crate::runtime::Common;
use ::runtime::runner::Stop;
use ::runtime::wiring::watch_events;
use api::core::{Project, Shoot};
use api::helpers::constants::{LABEL_PROJECT_NAME, LABEL_ROLE, ROLE_PROJECT};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// What a reconcile needs.
#[derive(Debug)]
pub struct Context {
    pub common: Common,
}

/// Runs the controller until `stop`; sets `ready` once its caches have synced (the owned
/// RoleBindings' watch is not waited for).
pub async fn run(common: Common, config: ProjectConfig, stop: Stop, ready: Arc<AtomicBool>) {
    let wiring = common.wiring(stop, ready).concurrency(config.concurrent_syncs);
    let Some(mut wiring) = wiring.when_served::<(Project, Shoot)>().await else { return };
    let projects = wiring.controller("projects", wiring.all::<Project>(), watcher::Config::default());
    let project_namespaces = watcher::Config::default().labels(&format!("{LABEL_ROLE}={ROLE_PROJECT}"));
    let (namespaces, namespace_events) = wiring.cache("namespaces", wiring.all::<Namespace>(), project_namespaces);
    let shoots = wiring.watch("shoots", wiring.all::<PartialObjectMeta<Shoot>>(), watcher::Config::default());
    let role_bindings =
        watch_events(wiring.all::<RoleBinding>(), watcher::Config::default().labels(LABEL_PROJECT_NAME))
            .touched_objects();
    let controller = projects
        .owns_stream(role_bindings)
        .watches_stream(namespace_events.touched_objects(), |ns: Namespace| project_of_namespace(&ns))
        .watches_stream(shoots, move |shoot: PartialObjectMeta<Shoot>| project_of_shoot(&namespaces, &shoot));
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, Arc::new(Context { common })).await;
}

fn project_of_namespace(ns: &Namespace) -> Option<ObjectRef<Project>> {
    ns.labels().get(LABEL_PROJECT_NAME).map(|p| ObjectRef::new(p))
}

fn project_of_shoot(namespaces: &Store<Namespace>, shoot: &PartialObjectMeta<Shoot>) -> Option<ObjectRef<Project>> {
    let ns = shoot.meta().namespace.as_deref()?;
    namespaces.get(&ObjectRef::new(ns)).and_then(|ns| project_of_namespace(&ns))
}
