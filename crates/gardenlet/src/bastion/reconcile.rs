//! One `operations.gardener.cloud` Bastion of this seed: keep the `gardener` finalizer, apply
//! the extension Bastion in the shoot's seed namespace when its spec changed, and report its
//! address and `BastionReady` (server-side apply of the status fields gardenlet owns; the
//! controller-manager owns the heartbeat and expiration). On deletion: delete the extension
//! Bastion, wait (its watch wakes us) until it is gone, then release the finalizer. The Bastion
//! and extension-Bastion watches bring every change; only a missing shoot (30 s) and a
//! deletion in progress (60 s, should an event be missed) are looked at again on a timer.

use super::Context;
use super::decide::{self, LABEL_NAME, LABEL_NAMESPACE, NotYet};
use api::core::Shoot;
use api::extensions::Bastion as ExtensionBastion;
use api::helpers::constants::FINALIZER_GARDENER;
use api::operations::{Bastion, BastionStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const FIELD_MANAGER: &str = "gardenlet";

/// A failed step, naming the Bastion and what was being done.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what} for Bastion {bastion}")]
    Kube {
        what: String,
        bastion: String,
        #[source]
        source: kube::Error,
    },
    #[error("deploying the extension Bastion for Bastion {bastion}")]
    Deploy {
        bastion: String,
        #[source]
        source: extension_sdk::deployer::DeployError,
    },
}

fn describe(b: &Bastion) -> String {
    format!("{}/{}", b.namespace().unwrap_or_default(), b.name_any())
}

fn kube_err(b: &Bastion, what: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let (what, bastion) = (what.into(), describe(b));
    move |source| Error::Kube { what, bastion, source }
}

pub async fn reconcile(bastion: Arc<Bastion>, ctx: Arc<Context>) -> Result<Action, Error> {
    reconcile_bastion(&bastion, &ctx).await
}

pub fn error_policy(bastion: Arc<Bastion>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(bastion = %describe(&bastion), error = %runtime::events::error_chain(error), "bastion reconcile failed");
    Action::requeue(Duration::from_secs(10))
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

#[tracing::instrument(skip_all, fields(bastion = %describe(bastion)))]
async fn reconcile_bastion(bastion: &Bastion, ctx: &Context) -> Result<Action, Error> {
    if bastion.spec.seed_name.as_deref() != Some(ctx.seed_name.as_str()) {
        return Ok(Action::await_change());
    }
    if bastion.metadata.deletion_timestamp.is_some() {
        return delete(bastion, ctx).await;
    }
    ensure_finalizer(bastion, ctx).await?;
    let namespace = bastion.namespace().unwrap_or_default();
    let shoot = Api::<Shoot>::namespaced(ctx.garden.clone(), &namespace)
        .get_opt(&bastion.spec.shoot_ref.name)
        .await
        .map_err(kube_err(bastion, "reading its Shoot"))?;
    let Some(shoot) = shoot else {
        // The controller-manager deletes Bastions of shoots that are gone.
        let why = NotYet::Waiting(format!("shoot {} does not exist", bastion.spec.shoot_ref.name));
        write_status(
            bastion,
            ctx,
            decide::not_yet_status(bastion.status.as_ref(), bastion.metadata.generation, &why, &now()),
        )
        .await?;
        return Ok(Action::requeue(Duration::from_secs(30)));
    };
    let desired = match decide::desired(bastion, &shoot) {
        Ok(d) => d,
        Err(why) => {
            tracing::info!(?why, "no extension Bastion yet");
            let next = decide::not_yet_status(bastion.status.as_ref(), bastion.metadata.generation, &why, &now());
            write_status(bastion, ctx, next).await?;
            return Ok(match why {
                NotYet::Waiting(_) => Action::requeue(Duration::from_secs(30)),
                NotYet::Invalid { .. } => Action::await_change(),
            });
        }
    };
    let ext_namespace = desired.namespace().unwrap_or_default();
    let name = desired.name_any();
    // A miss in the cache (not filled yet after a restart) is confirmed by a read: applying
    // again would ask the provider for a needless reconcile.
    let current = match ctx.extensions.get(&kube::runtime::reflector::ObjectRef::new(&name).within(&ext_namespace)) {
        Some(cached) => Some(cached),
        None => Api::<ExtensionBastion>::namespaced(ctx.seed.clone(), &ext_namespace)
            .get_opt(&name)
            .await
            .map_err(kube_err(bastion, format!("reading extension Bastion {ext_namespace}/{name}")))?
            .map(Arc::new),
    };
    if decide::needs_apply(current.as_deref(), &desired) {
        tracing::info!(namespace = %ext_namespace, "applying the extension Bastion");
        ctx.deployer.deploy(&desired).await.map_err(|source| Error::Deploy { bastion: describe(bastion), source })?;
        let pending = decide::Progress::Pending("the extension Bastion was applied".into());
        write_status(
            bastion,
            ctx,
            decide::status(bastion.status.as_ref(), bastion.metadata.generation, &pending, &now()),
        )
        .await?;
        return Ok(Action::await_change());
    }
    let Some(current) = current else { return Ok(Action::await_change()) };
    let progress = decide::progress(&current);
    write_status(bastion, ctx, decide::status(bastion.status.as_ref(), bastion.metadata.generation, &progress, &now()))
        .await?;
    Ok(Action::await_change())
}

/// Writes the fields gardenlet owns when `next` is `Some` (something changed).
async fn write_status(bastion: &Bastion, ctx: &Context, next: Option<BastionStatus>) -> Result<(), Error> {
    let Some(next) = next else { return Ok(()) };
    let body = json!({
        "apiVersion": "operations.gardener.cloud/v1alpha1",
        "kind": "Bastion",
        "status": {
            "ingress": next.ingress,
            "conditions": next.conditions,
            "observedGeneration": next.observed_generation,
        },
    });
    Api::<Bastion>::namespaced(ctx.garden.clone(), &bastion.namespace().unwrap_or_default())
        .patch_status(&bastion.name_any(), &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body))
        .await
        .map_err(kube_err(bastion, "writing its status"))?;
    Ok(())
}

async fn ensure_finalizer(bastion: &Bastion, ctx: &Context) -> Result<(), Error> {
    if bastion.finalizers().iter().any(|f| f == FINALIZER_GARDENER) {
        return Ok(());
    }
    let mut all = bastion.finalizers().to_vec();
    all.push(FINALIZER_GARDENER.to_string());
    let patch = json!({"metadata": {"finalizers": all, "resourceVersion": bastion.resource_version()}});
    Api::<Bastion>::namespaced(ctx.garden.clone(), &bastion.namespace().unwrap_or_default())
        .patch(&bastion.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(kube_err(bastion, "adding the finalizer"))?;
    Ok(())
}

/// Deletes the extension Bastions serving `bastion` (found by label, so this works when the
/// shoot is gone too) and releases the finalizer once none is left.
async fn delete(bastion: &Bastion, ctx: &Context) -> Result<Action, Error> {
    if !bastion.finalizers().iter().any(|f| f == FINALIZER_GARDENER) {
        return Ok(Action::await_change());
    }
    let selector =
        format!("{LABEL_NAMESPACE}={},{LABEL_NAME}={}", bastion.namespace().unwrap_or_default(), bastion.name_any());
    let all: Api<ExtensionBastion> = Api::all(ctx.seed.clone());
    let left = all
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(kube_err(bastion, "listing its extension Bastions"))?;
    if !left.items.is_empty() {
        for ext in left.items.iter().filter(|e| e.metadata.deletion_timestamp.is_none()) {
            let ns = ext.namespace().unwrap_or_default();
            tracing::info!(namespace = %ns, "deleting the extension Bastion");
            match Api::<ExtensionBastion>::namespaced(ctx.seed.clone(), &ns)
                .delete(&ext.name_any(), &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(kube_err(bastion, format!("deleting extension Bastion {ns}/{}", ext.name_any()))(e));
                }
            }
        }
        // The extension-Bastion watch re-queues this Bastion when one is gone.
        return Ok(Action::requeue(Duration::from_secs(60)));
    }
    let finalizers: Vec<&String> = bastion.finalizers().iter().filter(|f| *f != FINALIZER_GARDENER).collect();
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": bastion.resource_version()}});
    match Api::<Bastion>::namespaced(ctx.garden.clone(), &bastion.namespace().unwrap_or_default())
        .patch(&bastion.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        result => {
            result.map_err(kube_err(bastion, "removing the finalizer"))?;
        }
    }
    Ok(Action::await_change())
}
