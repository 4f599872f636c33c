//! One Shoot's maintenance: read its profile from the caches (a NamespacedCloudProfile's merged
//! spec, resolved by [`api::helpers::cloudprofile_ref`]), decide with
//! [`super::decide`], then write the new Kubernetes version and machine image versions (one
//! merge patch guarded by the resourceVersion that was read; the same patch removes a `maintain`
//! request) and record what was done in `status.lastMaintenance` (server-side apply, field manager
//! `gardener-controller-manager/shoot-maintenance`).

use super::Context;
use super::decide::{self, Facts, Window};
use crate::runtime::{self, field_manager};
use api::common::LastOperationState;
use api::core::cloudprofile::CloudProfileSpec;
use api::core::shoot::LastMaintenance;
use api::core::{CloudProfile, NamespacedCloudProfile, Shoot};
use api::helpers::cloudprofile_ref::{self, ProfileRef};
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
    let maintain_requested =
        shoot.annotations().get(ANNOTATION_OPERATION).map(String::as_str) == Some(OPERATION_MAINTAIN);
    let now = ctx.common.clock.now();
    let (cloud_profile, namespaced) = lookup_profile(shoot, ctx);
    let profile = match cloudprofile_ref::resolve(shoot, cloud_profile.as_deref(), namespaced.as_deref()) {
        Ok(spec) => spec,
        Err(missing) => {
            // Without its profile (not cached yet, missing, not merged yet) nothing can be judged.
            tracing::debug!(%missing, "the shoot's profile cannot be used; maintenance waits");
            return Ok(Action::requeue(Duration::from_secs(300)));
        }
    };
    let decision = decide_for(shoot, profile, maintain_requested, now);
    let api: Api<Shoot> = Api::namespaced(ctx.common.client.clone(), &namespace);
    let (last, requeue) = match decision {
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

/// The pure decision for `shoot` against the profile spec it uses.
fn decide_for(
    shoot: &Shoot,
    profile: &CloudProfileSpec,
    maintain_requested: bool,
    now: k8s_openapi::jiff::Timestamp,
) -> Result<decide::Decision, decide::Problem> {
    let maintenance = shoot.spec.maintenance.as_ref();
    let window = maintenance.and_then(|m| m.time_window.as_ref()).map(Window::parse).transpose()?;
    let auto_update = maintenance.and_then(|m| m.auto_update.as_ref());
    decide::decide(&Facts {
        version: &shoot.spec.kubernetes.version,
        offered: &profile.kubernetes.versions,
        auto_update: auto_update.is_some_and(|a| a.kubernetes_version),
        pools: pool_images(shoot, profile),
        auto_update_images: auto_update.is_some_and(|a| a.machine_image_version.unwrap_or(true)),
        window,
        maintain_requested,
        last_triggered: shoot.status.as_ref().and_then(|s| s.last_maintenance.as_ref()).map(|l| l.triggered_time.0),
        now,
    })
}

/// The cache entry the shoot's profile reference names (only the one of its kind is looked up).
fn lookup_profile(shoot: &Shoot, ctx: &Context) -> (Option<Arc<CloudProfile>>, Option<Arc<NamespacedCloudProfile>>) {
    match cloudprofile_ref::profile_ref(shoot) {
        Ok(ProfileRef::Cluster(name)) => (ctx.profiles.get(&ObjectRef::new(name)), None),
        Ok(ProfileRef::Namespaced { namespace, name }) => {
            (None, ctx.namespaced_profiles.get(&ObjectRef::new(name).within(namespace)))
        }
        Err(_) => (None, None), // resolve reports it
    }
}

/// The machine image of every worker pool that names one, with what the profile offers.
fn pool_images<'a>(shoot: &'a Shoot, profile: &'a CloudProfileSpec) -> Vec<decide::PoolImage<'a>> {
    let images = profile.machine_images.as_slice();
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

#[cfg(test)]
mod tests {
    use super::*;
    use api::helpers::cloudprofile_ref::ProfileRefError;

    /// The parent offers Kubernetes 1.31.1 and 1.31.3 and image `gl` 1.0.0; the project's
    /// NamespacedCloudProfile adds `gl` 1.1.0, and its merged spec has it.
    fn profiles(computed: bool) -> (CloudProfile, NamespacedCloudProfile) {
        let parent: CloudProfileSpec = serde_json::from_value(json!({
            "type": "local",
            "kubernetes": {"versions": [{"version": "1.31.1"}, {"version": "1.31.3"}]},
            "machineImages": [{"name": "gl", "versions": [{"version": "1.0.0"}]}],
        }))
        .unwrap();
        let mut merged = parent.clone();
        merged.machine_images[0].versions.push(serde_json::from_value(json!({"version": "1.1.0"})).unwrap());
        let ncp: NamespacedCloudProfile = serde_json::from_value(json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "NamespacedCloudProfile",
            "metadata": {"name": "team", "namespace": "garden-p"},
            "spec": {"parent": {"kind": "CloudProfile", "name": "local"},
                     "machineImages": [{"name": "gl", "versions": [{"version": "1.1.0"}]}]},
            "status": if computed { json!({"cloudProfileSpec": merged}) } else { json!({}) },
        }))
        .unwrap();
        (CloudProfile::new("local", parent), ncp)
    }

    fn shoot(reference: serde_json::Value) -> Shoot {
        serde_json::from_value(json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
            "metadata": {"name": "s", "namespace": "garden-p"},
            "spec": {
                "cloudProfile": reference,
                "region": "local",
                "kubernetes": {"version": "1.31.1"},
                "maintenance": {"autoUpdate": {"kubernetesVersion": true, "machineImageVersion": true}},
                "provider": {"type": "local", "workers": [
                    {"name": "pool", "minimum": 1, "maximum": 1,
                     "machine": {"type": "m", "image": {"name": "gl", "version": "1.0.0"}}},
                ]},
            },
        }))
        .unwrap()
    }

    fn image_targets(shoot: &Shoot, cp: &CloudProfile, ncp: &NamespacedCloudProfile) -> Result<Vec<String>, String> {
        let spec = cloudprofile_ref::resolve(shoot, Some(cp), Some(ncp)).map_err(|e| e.to_string())?;
        let now = "2026-05-01T00:00:00Z".parse().unwrap();
        let d = decide_for(shoot, spec, true, now).map_err(|e| e.to_string())?;
        assert_eq!(d.update.map(|(to, _)| to).as_deref(), Some("1.31.3"), "the parent's versions are in both");
        Ok(d.images.into_iter().map(|i| i.to).collect())
    }

    #[test]
    fn a_shoot_is_maintained_against_the_profile_it_names() {
        let (cp, ncp) = profiles(true);
        let on_parent = shoot(json!({"kind": "CloudProfile", "name": "local"}));
        let on_team = shoot(json!({"kind": "NamespacedCloudProfile", "name": "team"}));
        assert_eq!(image_targets(&on_parent, &cp, &ncp), Ok(vec![]), "the parent offers nothing newer");
        assert_eq!(image_targets(&on_team, &cp, &ncp), Ok(vec!["1.1.0".to_string()]), "the project's addition");

        let (cp, pending) = profiles(false);
        let err = cloudprofile_ref::resolve(&on_team, Some(&cp), Some(&pending)).unwrap_err();
        assert_eq!(err, ProfileRefError::NotComputed { namespace: "garden-p".into(), name: "team".into() });
        let err = cloudprofile_ref::resolve(&on_team, Some(&cp), None).unwrap_err();
        assert!(err.is_transient(), "{err}");
    }
}
