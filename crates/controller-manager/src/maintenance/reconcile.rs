//! One Shoot's maintenance: read its CloudProfile from the cache, decide with
//! [`super::decide`], then write the new Kubernetes version and machine image versions (one
//! merge patch guarded by the resourceVersion that was read; the same patch removes a `maintain`
//! request) and record what was done in `status.lastMaintenance` (server-side apply, field manager
//! `gardener-controller-manager/shoot-maintenance`).

use super::Context;
use super::decide::{self, Facts, Window};
use crate::runtime::{self, field_manager};
use api::common::LastOperationState;
use api::core::shoot::LastMaintenance;
use api::core::{CloudProfile, Shoot};
use api::helpers::constants::ANNOTATION_OPERATION;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "shoot-maintenance";
/// The operation annotation value that asks for maintenance now.
pub const OPERATION_MAINTAIN: &str = "maintain";

/// A failed API call, with what was being done.
pub use crate::runtime::KubeError as Error;
use crate::runtime::kube_err;

pub async fn reconcile(guard: Arc<DeserializeGuard<Shoot>>, ctx: Arc<Context>) -> Result<Action, Error> {
    let Ok(shoot) = &guard.0 else { return Ok(Action::await_change()) };
    runtime::instrumented(&ctx.common, shoot, maintain(shoot, &ctx, true)).await
}

pub fn error_policy(guard: Arc<DeserializeGuard<Shoot>>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common.retry_after_failure(guard.as_ref())
}

#[tracing::instrument(skip_all, fields(shoot = %format!("{}/{}", shoot.namespace().unwrap_or_default(), shoot.name_any())))]
async fn maintain(shoot: &Shoot, ctx: &Context, cached: bool) -> Result<Action, Error> {
    if shoot.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let (namespace, name) = (shoot.namespace().unwrap_or_default(), shoot.name_any());
    let maintenance = shoot.spec.maintenance.as_ref();
    let maintain_requested =
        shoot.annotations().get(ANNOTATION_OPERATION).map(String::as_str) == Some(OPERATION_MAINTAIN);
    let now = ctx.common.clock.now();
    let profile = shoot.spec.cloud_profile_name().and_then(|p| ctx.profiles.get(&ObjectRef::<CloudProfile>::new(p)));
    let decision = maintenance.and_then(|m| m.time_window.as_ref()).map(Window::parse).transpose().and_then(|window| {
        let offered = profile.as_ref().map(|p| p.spec.kubernetes.versions.as_slice()).unwrap_or_default();
        let auto_update = maintenance.and_then(|m| m.auto_update.as_ref());
        decide::decide(&Facts {
            version: &shoot.spec.kubernetes.version,
            offered,
            auto_update: auto_update.is_some_and(|a| a.kubernetes_version),
            pools: pool_images(shoot, profile.as_deref()),
            auto_update_images: auto_update.is_some_and(|a| a.machine_image_version.unwrap_or(true)),
            window,
            maintain_requested,
            last_triggered: shoot.status.as_ref().and_then(|s| s.last_maintenance.as_ref()).map(|l| l.triggered_time.0),
            now,
        })
    });
    let api: Api<Shoot> = Api::namespaced(ctx.common.client.clone(), &namespace);
    let (last, requeue) = match decision {
        Err(problem) if profile.is_none() => {
            // Without its CloudProfile (not cached yet, or missing) nothing can be judged.
            tracing::debug!(%problem, "CloudProfile not found; maintenance waits");
            return Ok(Action::requeue(Duration::from_secs(300)));
        }
        Err(problem) => {
            let message = format!("shoot {namespace}/{name}: {problem}");
            if !maintain_requested
                && shoot
                    .status
                    .as_ref()
                    .and_then(|s| s.last_maintenance.as_ref())
                    .is_some_and(|l| l.failure_reason.as_deref() == Some(message.as_str()))
            {
                return Ok(Action::await_change());
            }
            ctx.common.event(shoot, EventType::Warning, "MaintenanceFailed", "Maintain", message.clone()).await;
            let last = LastMaintenance {
                description: "Maintenance could not run".into(),
                triggered_time: Time(now),
                state: LastOperationState::Failed,
                failure_reason: Some(message),
            };
            (last, Action::await_change())
        }
        Ok(d) if !d.run => return Ok(d.requeue_after.map_or_else(Action::await_change, Action::requeue)),
        // Maintenance writes the spec, then the status; the cache may show the first write
        // without the second (and run the window's maintenance twice). Decide again on what
        // the API server has now.
        Ok(_) if cached => {
            let fresh = api
                .get(&name)
                .await
                .map_err(kube_err("ReadShootFailed", format!("reading shoot {namespace}/{name}")))?;
            return Box::pin(maintain(&fresh, ctx, false)).await;
        }
        Ok(d) => {
            let mut metadata = json!({"resourceVersion": shoot.resource_version()});
            if maintain_requested {
                metadata["annotations"] = json!({ANNOTATION_OPERATION: null});
            }
            let description = match spec_patch(shoot, &d) {
                Some((spec, whys)) => {
                    let why = whys.join("; ");
                    let patch = json!({"metadata": metadata, "spec": spec});
                    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(kube_err(
                        "WriteVersionFailed",
                        format!("updating the versions of shoot {namespace}/{name}: {why}"),
                    ))?;
                    ctx.common.event(shoot, EventType::Normal, "MaintenanceDone", "Maintain", why.clone()).await;
                    why
                }
                None => {
                    if maintain_requested {
                        let patch = json!({"metadata": metadata});
                        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(kube_err(
                            "WriteAnnotationFailed",
                            format!("removing the maintain request of shoot {namespace}/{name}"),
                        ))?;
                    }
                    "No update needed".to_string()
                }
            };
            tracing::info!(%description, "maintenance ran");
            let last = LastMaintenance {
                description,
                triggered_time: Time(now),
                state: LastOperationState::Succeeded,
                failure_reason: None,
            };
            (last, d.requeue_after.map_or_else(Action::await_change, Action::requeue))
        }
    };
    let body = json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "Shoot",
        "status": {"lastMaintenance": last},
    });
    api.patch_status(&name, &PatchParams::apply(&field_manager(NAME)).force(), &Patch::Apply(&body))
        .await
        .map_err(kube_err("WriteStatusFailed", format!("recording the maintenance of shoot {namespace}/{name}")))?;
    Ok(requeue)
}

/// The machine image of every worker pool that names one, with what the CloudProfile offers.
fn pool_images<'a>(shoot: &'a Shoot, profile: Option<&'a CloudProfile>) -> Vec<decide::PoolImage<'a>> {
    let images = profile.map(|p| p.spec.machine_images.as_slice()).unwrap_or_default();
    shoot
        .spec
        .provider
        .workers
        .iter()
        .enumerate()
        .filter_map(|(index, w)| {
            let image = w.machine.image.as_ref()?;
            let version = image.version.as_deref()?;
            let offered = images.iter().find(|i| i.name == image.name)?;
            Some(decide::PoolImage {
                index,
                pool: &w.name,
                image: &image.name,
                version,
                offered: offered.versions.iter().map(|v| &v.expirable).collect(),
            })
        })
        .collect()
}

/// The `spec` of the merge patch carrying `d`'s updates, and the reasons; `None` without any.
/// Worker pools are a list, which a merge patch replaces whole: the patch carries all of them,
/// changed where needed, and the resourceVersion guards against a concurrent change.
fn spec_patch(shoot: &Shoot, d: &decide::Decision) -> Option<(serde_json::Value, Vec<String>)> {
    let mut spec = json!({});
    let mut whys = Vec::new();
    if let Some((to, why)) = &d.update {
        spec["kubernetes"] = json!({"version": to});
        whys.push(why.clone());
    }
    if !d.images.is_empty() {
        let mut workers = shoot.spec.provider.workers.clone();
        for update in &d.images {
            if let Some(image) = workers.get_mut(update.index).and_then(|w| w.machine.image.as_mut()) {
                image.version = Some(update.to.clone());
                whys.push(update.why.clone());
            }
        }
        spec["provider"] = json!({"workers": workers});
    }
    (!whys.is_empty()).then_some((spec, whys))
}
