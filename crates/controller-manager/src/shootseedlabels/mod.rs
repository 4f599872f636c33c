//! The shoot seed-label controller: keeps each Shoot's `name.seed.gardener.cloud/<seed>` labels
//! in step with `spec.seedName` and `status.seedName` ([`api::helpers::seed_labels`]), which is
//! what every gardenlet selects its shoots by.
//!
//! Admission's mutating webhook already sets the labels on every create and spec update; this
//! controller catches the rest: a `status.seedName` written through the status subresource at
//! the end of a migration (the source seed's label goes), and shoots stored before the labels
//! existed. Watches Shoots (cached); writes a merge patch of the labels only when they are out
//! of step, conditional on the resourceVersion it decided on (a newer Shoot brings a new event).

use crate::runtime::{self, Common, kube_err};
use ::runtime::runner::Stop;
use api::core::Shoot;
use api::helpers::seed_labels;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub const NAME: &str = "shoot-seed-labels";

pub use crate::runtime::KubeError as Error;

pub async fn run(common: Common, concurrency: u16, stop: Stop, ready: Arc<AtomicBool>) {
    let wiring = common.wiring(stop, ready).concurrency(concurrency);
    let Some(mut wiring) = wiring.when_served::<(Shoot,)>().await else { return };
    let controller = wiring.controller("shoots", wiring.all::<Shoot>(), watcher::Config::default());
    wiring.run(controller, reconcile, error_policy, Arc::new(common)).await;
}

pub async fn reconcile(shoot: Arc<Shoot>, common: Arc<Common>) -> Result<Action, Error> {
    runtime::instrumented(&common, shoot.as_ref(), label(&shoot, &common)).await
}

pub fn error_policy(shoot: Arc<Shoot>, _error: &Error, common: Arc<Common>) -> Action {
    common.retry_after_failure(shoot.as_ref())
}

#[tracing::instrument(skip_all, fields(shoot = %format!("{}/{}", shoot.namespace().unwrap_or_default(), shoot.name_any())))]
async fn label(shoot: &Shoot, common: &Common) -> Result<Action, Error> {
    let Some(mut patch) = seed_labels::merge_patch(shoot) else {
        return Ok(Action::await_change());
    };
    patch["metadata"]["resourceVersion"] = shoot.resource_version().unwrap_or_default().into();
    let (namespace, name) = (shoot.namespace().unwrap_or_default(), shoot.name_any());
    let result = Api::<Shoot>::namespaced(common.client.clone(), &namespace)
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await;
    match result {
        // Changed since this decision: the newer Shoot's event decides again.
        Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Ok(Action::await_change()),
        other => {
            other.map_err(kube_err("LabelFailed", format!("setting the seed labels of Shoot {namespace}/{name}")))?;
            tracing::debug!(labels = %patch["metadata"]["labels"], "seed labels set");
            Ok(Action::await_change())
        }
    }
}
