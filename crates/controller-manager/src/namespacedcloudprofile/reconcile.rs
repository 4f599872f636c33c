//! One NamespacedCloudProfile: merge its parent (from the cache) with its additions and record
//! the result in `status.cloudProfileSpec` and `status.observedGeneration` by server-side apply
//! (field manager `gardener-controller-manager/namespacedcloudprofile`) when either changed. A
//! missing or unreadable parent leaves the status as it was and is reported by a Warning event;
//! the parent's creation re-queues the profile.

use super::Context;
use crate::runtime::{self, field_manager, kube_err};
use api::core::{CloudProfile, NamespacedCloudProfile};
use api::helpers::cloudprofile_merge::merge;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::sync::Arc;

pub const NAME: &str = "namespacedcloudprofile";

pub use crate::runtime::KubeError as Error;

pub async fn reconcile(profile: Arc<NamespacedCloudProfile>, ctx: Arc<Context>) -> Result<Action, Error> {
    runtime::instrumented(&ctx.common, profile.as_ref(), reconcile_profile(&profile, &ctx)).await
}

pub fn error_policy(profile: Arc<NamespacedCloudProfile>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common.retry_after_failure(profile.as_ref())
}

#[tracing::instrument(skip_all, fields(profile = %format!("{}/{}", profile.namespace().unwrap_or_default(), profile.name_any())))]
async fn reconcile_profile(profile: &NamespacedCloudProfile, ctx: &Context) -> Result<Action, Error> {
    if profile.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let (namespace, name) = (profile.namespace().unwrap_or_default(), profile.name_any());
    let parent_ref = &profile.spec.parent;
    let kind = parent_ref.kind.as_deref().unwrap_or("CloudProfile");
    let parent =
        (kind == "CloudProfile").then(|| ctx.parents.get(&ObjectRef::<CloudProfile>::new(&parent_ref.name))).flatten();
    let Some(parent) = parent else {
        let note = format!(
            "spec.parent: {kind} {:?} does not exist (only a CloudProfile can be a parent); the merged profile is not updated",
            parent_ref.name
        );
        ctx.common.event(profile, EventType::Warning, "ParentMissing", "Merge", note).await;
        return Ok(Action::await_change());
    };
    let merged = merge(&parent.spec, &profile.spec);
    let status = profile.status.as_ref();
    let current = status.and_then(|s| s.cloud_profile_spec.as_ref());
    let generation = profile.metadata.generation;
    if current == Some(&merged) && status.and_then(|s| s.observed_generation) == generation {
        return Ok(Action::await_change());
    }
    let body = json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "NamespacedCloudProfile",
        "status": {"cloudProfileSpec": merged, "observedGeneration": generation},
    });
    Api::<NamespacedCloudProfile>::namespaced(ctx.common.client.clone(), &namespace)
        .patch_status(&name, &PatchParams::apply(&field_manager(NAME)).force(), &Patch::Apply(&body))
        .await
        .map_err(kube_err(
            "WriteStatusFailed",
            format!("writing the merged profile of NamespacedCloudProfile {namespace}/{name}"),
        ))?;
    tracing::debug!("merged profile recorded");
    Ok(Action::await_change())
}
