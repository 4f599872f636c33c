//! One Seed's ControllerInstallations: work out what the seed needs from the caches
//! ([`super::decide`]), apply an installation (server-side apply, field manager
//! `gardener-controller-manager/controllerinstallation`) for each required registration, and
//! delete the seed's installations that are no longer required, unless gardenlet reports them
//! still in use (`Required=True`: extension objects of theirs still exist in the seed).

use super::Context;
use super::decide::{self, Need};
use crate::runtime::{self, field_manager, kube_err};
use api::core::{ControllerInstallation, Seed};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub const NAME: &str = "controllerinstallation";
/// The label naming the seed of an installation (for selecting them).
pub const SEED_LABEL: &str = "seed.gardener.cloud/name";
/// The condition gardenlet sets while extension objects of an installation exist in the seed.
pub const CONDITION_REQUIRED: &str = "Required";

/// A failed API call, with what was being done.
pub use crate::runtime::KubeError as Error;

pub async fn reconcile(seed: Arc<Seed>, ctx: Arc<Context>) -> Result<Action, Error> {
    runtime::instrumented(&ctx.common, seed.as_ref(), reconcile_seed(&seed, &ctx)).await
}

pub fn error_policy(seed: Arc<Seed>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common.retry_after_failure(seed.as_ref())
}

#[tracing::instrument(skip_all, fields(seed = %seed.name_any()))]
async fn reconcile_seed(seed: &Seed, ctx: &Context) -> Result<Action, Error> {
    let name = seed.name_any();
    let shoots: Vec<_> = ctx
        .shoots
        .state()
        .iter()
        .filter_map(|g| g.0.as_ref().ok().cloned())
        .filter(|s| decide::on_seed(s, &name))
        .collect();
    let mut needs: BTreeSet<Need> = decide::seed_needs(seed);
    for shoot in &shoots {
        needs.extend(decide::shoot_needs(shoot, seed));
    }
    let registrations = ctx.registrations.state();
    // A seed being deleted keeps what its remaining shoots need (their deletion needs the
    // extensions); once they are gone it needs nothing, whatever the policies say.
    let required = if seed.metadata.deletion_timestamp.is_some() && shoots.is_empty() {
        BTreeSet::new()
    } else {
        decide::required(registrations.iter().map(|r| r.as_ref()), seed.labels(), &needs, !shoots.is_empty())
    };
    let existing: BTreeMap<String, (String, bool)> = ctx
        .installations
        .state()
        .iter()
        .filter(|i| i.spec.seed_ref.as_ref().is_some_and(|s| s.name == name))
        .map(|i| {
            let in_use = i
                .status
                .as_ref()
                .and_then(|s| s.condition(CONDITION_REQUIRED))
                .is_some_and(|c| c.status == api::common::ConditionStatus::True);
            (i.name_any(), (i.spec.registration_ref.name.clone(), in_use))
        })
        .collect();
    let plan = decide::plan(&required, &existing);
    let api: Api<ControllerInstallation> = Api::all(ctx.common.client.clone());
    for registration in &plan.install {
        let Some(reg) = registrations.iter().find(|r| r.name_any() == *registration) else { continue };
        let installation = decide::installation_name(registration, &name);
        let deployment = reg.spec.deployment.as_ref().and_then(|d| d.deployment_refs.first());
        let mut spec = json!({
            "registrationRef": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerRegistration", "name": registration},
            "seedRef": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed", "name": name},
        });
        if let Some(d) = deployment {
            spec["deploymentRef"] =
                json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerDeployment", "name": d.name});
        }
        let body = json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerInstallation",
            "metadata": {"name": installation, "labels": {SEED_LABEL: name, "registration.core.gardener.cloud/name": registration}},
            "spec": spec,
        });
        // Applying what is already there changes nothing (no new resourceVersion); skip the
        // request when the cached object already says it.
        let cached = ctx.installations.get(&ObjectRef::new(&installation));
        if cached.is_some_and(|i| {
            i.spec.deployment_ref.as_ref().map(|r| r.name.as_str()) == deployment.map(|d| d.name.as_str())
        }) {
            continue;
        }
        api.patch(&installation, &PatchParams::apply(&field_manager(NAME)).force(), &Patch::Apply(&body))
            .await
            .map_err(kube_err("ApplyInstallationFailed", format!("applying ControllerInstallation {installation}")))?;
        tracing::info!(%installation, %registration, "controller installation applied");
    }
    for installation in &plan.delete {
        match api.delete(installation, &DeleteParams::default()).await {
            Ok(_) => {
                let message =
                    format!("ControllerInstallation {installation} is no longer required on seed {name}; deleted");
                ctx.common.event(seed, EventType::Normal, "InstallationDeleted", "Reconcile", message).await;
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(kube_err(
                    "DeleteInstallationFailed",
                    format!("deleting ControllerInstallation {installation}"),
                )(e));
            }
        }
    }
    if !plan.keep_in_use.is_empty() {
        tracing::debug!(kept = ?plan.keep_in_use, "not required any more, but gardenlet reports them in use");
    }
    Ok(Action::await_change())
}
