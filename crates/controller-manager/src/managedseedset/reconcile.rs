//! One ManagedSeedSet: read the set afresh and its replicas (the Shoots and ManagedSeeds its
//! selector matches that it controls, the Seeds named like them, and on scale-in the shoots
//! scheduled onto those seeds), decide with [`super::decide`], write the status when it changed,
//! then take the one step: server-side apply (field manager
//! `gardener-controller-manager/managedseedset`) of a replica's Shoot or ManagedSeed, a deletion,
//! or the finalizer's removal. Everything the set waits for arrives as a watch event.
//!
//! Reading afresh rather than from caches matters here: a step taken from a stale cache could
//! create a replica twice or skip one; these reads are a handful per reconcile.

use super::Context;
use super::build;
use super::decide::{self, Decision, Facts, ManagedSeedFacts, Replica, ShootFacts, Step};
use crate::runtime::{self, KubeError, field_manager, kube_err};
use api::common::ConditionStatus;
use api::core::{Seed, Shoot};
use api::helpers::conditions::is_condition_true;
use api::helpers::constants::{ANNOTATION_CONFIRM_DELETION, FINALIZER_GARDENER, conditions};
use api::seedmanagement::{ManagedSeed, ManagedSeedSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::core::{PartialObjectMeta, Selector};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

pub const NAME: &str = "managedseedset";

/// What can go wrong in one reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
    #[error("the selector of ManagedSeedSet {set} cannot be used")]
    InvalidSelector {
        set: String,
        #[source]
        source: kube::core::ParseExpressionError,
    },
}

impl runtime::Reason for Error {
    fn reason(&self) -> &'static str {
        match self {
            Error::Kube(e) => e.reason(),
            Error::InvalidSelector { .. } => "InvalidSelector",
        }
    }
}

pub async fn reconcile(set: Arc<ManagedSeedSet>, ctx: Arc<Context>) -> Result<Action, Error> {
    runtime::instrumented(&ctx.common, set.as_ref(), reconcile_set(&set, &ctx)).await
}

pub fn error_policy(set: Arc<ManagedSeedSet>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common.retry_after_failure(set.as_ref())
}

/// The Shoot health conditions that must all be True for a replica to be ready.
const SHOOT_HEALTH: [&str; 4] = [
    conditions::API_SERVER_AVAILABLE,
    conditions::CONTROL_PLANE_HEALTHY,
    conditions::EVERY_NODE_READY,
    conditions::SYSTEM_COMPONENTS_HEALTHY,
];

fn controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|o| o.controller == Some(true) && o.uid == uid)
}

fn shoot_facts(s: &Shoot) -> ShootFacts {
    let status = s.status.as_ref();
    let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
    ShootFacts {
        deleting: s.metadata.deletion_timestamp.is_some(),
        generation_observed: status.and_then(|s| s.observed_generation) == s.metadata.generation,
        last_operation: status.and_then(|s| s.last_operation.as_ref()).map(|o| (o.type_, o.state)),
        healthy: SHOOT_HEALTH.iter().all(|c| is_condition_true(conditions, c)),
        revision: s.labels().get(decide::LABEL_REVISION).cloned(),
    }
}

fn managed_seed_facts(m: &ManagedSeed) -> ManagedSeedFacts {
    let annotations = m.annotations();
    ManagedSeedFacts {
        deleting: m.metadata.deletion_timestamp.is_some(),
        revision: m.labels().get(decide::LABEL_REVISION).cloned(),
        protected: annotations.get(decide::ANNOTATION_PROTECT_FROM_DELETION).is_some_and(|v| v == "true"),
        priority: annotations
            .get(decide::ANNOTATION_PRIORITY)
            .and_then(|p| p.parse().ok())
            .unwrap_or(decide::DEFAULT_PRIORITY),
    }
}

#[tracing::instrument(skip_all, fields(set = %format!("{}/{}", set.namespace().unwrap_or_default(), set.name_any())))]
async fn reconcile_set(set: &ManagedSeedSet, ctx: &Context) -> Result<Action, Error> {
    let client = &ctx.common.client;
    let (namespace, name) = (set.namespace().unwrap_or_default(), set.name_any());
    let sets: Api<ManagedSeedSet> = Api::namespaced(client.clone(), &namespace);
    let Some(set) = sets
        .get_opt(&name)
        .await
        .map_err(kube_err("ReadSetFailed", format!("reading ManagedSeedSet {namespace}/{name}")))?
    else {
        return Ok(Action::await_change());
    };
    let deleting = set.metadata.deletion_timestamp.is_some();
    let has_finalizer = set.finalizers().iter().any(|f| f == FINALIZER_GARDENER);
    if !has_finalizer {
        if !deleting {
            let mut finalizers = set.finalizers().to_vec();
            finalizers.push(FINALIZER_GARDENER.into());
            let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": set.resource_version()}});
            sets.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(kube_err(
                "WriteFinalizerFailed",
                format!("adding the finalizer to ManagedSeedSet {namespace}/{name}"),
            ))?;
        }
        return Ok(Action::await_change());
    }

    let selector = Selector::try_from(set.spec.selector.clone())
        .map_err(|source| Error::InvalidSelector { set: format!("{namespace}/{name}"), source })?;
    let params = ListParams::default().labels_from(&selector);
    let uid = set.uid().unwrap_or_default();
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), &namespace);
    let managed_seeds: Api<ManagedSeed> = Api::namespaced(client.clone(), &namespace);
    let mut replicas: BTreeMap<i32, (Option<Shoot>, Option<ManagedSeed>)> = BTreeMap::new();
    let listed =
        shoots.list(&params).await.map_err(kube_err("ReadShootsFailed", format!("listing Shoots in {namespace}")))?;
    for s in listed.items.into_iter().filter(|s| controlled_by(&s.metadata, &uid)) {
        if let Some(i) = decide::ordinal(&name, &s.name_any()) {
            replicas.entry(i).or_default().0 = Some(s);
        }
    }
    let listed = managed_seeds
        .list(&params)
        .await
        .map_err(kube_err("ReadManagedSeedsFailed", format!("listing ManagedSeeds in {namespace}")))?;
    for m in listed.items.into_iter().filter(|m| controlled_by(&m.metadata, &uid)) {
        if let Some(i) = decide::ordinal(&name, &m.name_any()) {
            replicas.entry(i).or_default().1 = Some(m);
        }
    }
    let wanted = set.spec.replicas.unwrap_or(1);
    let scaling_in = !deleting && i32::try_from(replicas.len()).unwrap_or(i32::MAX) > wanted;
    let seeds: Api<Seed> = Api::all(client.clone());
    let all_shoots: Api<PartialObjectMeta<Shoot>> = Api::all(client.clone());
    let mut facts = Vec::with_capacity(replicas.len());
    for (ordinal, (shoot, ms)) in &replicas {
        let mut seed_ready = None;
        let mut scheduled_shoots = 0;
        if let Some(ms) = ms {
            let seed_name = ms.name_any();
            let seed = seeds
                .get_opt(&seed_name)
                .await
                .map_err(kube_err("ReadSeedFailed", format!("reading Seed {seed_name}")))?;
            seed_ready = seed.map(|s| {
                is_condition_true(
                    s.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default(),
                    conditions::GARDENLET_READY,
                )
            });
            if scaling_in {
                let on_seed = ListParams::default().labels(&api::helpers::seed_labels::selector(&seed_name));
                scheduled_shoots = all_shoots
                    .list_metadata(&on_seed)
                    .await
                    .map_err(kube_err("ReadShootsFailed", format!("listing the shoots on seed {seed_name}")))?
                    .items
                    .len();
            }
        }
        facts.push(Replica {
            ordinal: *ordinal,
            shoot: shoot.as_ref().map(shoot_facts),
            managed_seed: ms.as_ref().map(managed_seed_facts),
            seed_ready,
            scheduled_shoots,
        });
    }
    let revision = build::revision(&set);
    let facts = Facts {
        deleting,
        replicas_wanted: wanted,
        partition: set
            .spec
            .update_strategy
            .as_ref()
            .and_then(|u| u.rolling_update.as_ref())
            .and_then(|r| r.partition)
            .unwrap_or(0),
        update_revision: revision.clone(),
        next_replica_number: set.status.as_ref().map_or(0, |s| s.next_replica_number),
        replicas: facts,
    };
    let decision = decide::decide(&facts);
    tracing::debug!(?decision, "decided");

    if decision.step == Step::RemoveFinalizer {
        let finalizers: Vec<_> = set.finalizers().iter().filter(|f| *f != FINALIZER_GARDENER).cloned().collect();
        let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": set.resource_version()}});
        sets.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(kube_err(
            "WriteFinalizerFailed",
            format!("removing the finalizer of ManagedSeedSet {namespace}/{name}"),
        ))?;
        return Ok(Action::await_change());
    }
    // The status first: it records the ordinal a new replica takes before the replica exists.
    write_status(&set, &sets, &facts, &decision, ctx).await?;
    take_step(&set, &decision, &revision, ctx).await?;
    Ok(Action::await_change())
}

async fn write_status(
    set: &ManagedSeedSet,
    sets: &Api<ManagedSeedSet>,
    facts: &Facts,
    decision: &Decision,
    ctx: &Context,
) -> Result<(), Error> {
    let now = Time(ctx.common.clock.now());
    let status = decide::status(set, facts, decision, &now);
    if set.status.as_ref() == Some(&status) {
        return Ok(());
    }
    if let Some(blocked) = &decision.blocked {
        let was_blocked = set.status.as_ref().is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == decide::CONDITION_REPLICAS_READY
                    && c.status == ConditionStatus::False
                    && c.reason == "ScaleInBlocked"
            })
        });
        if !was_blocked {
            ctx.common.event(set, EventType::Warning, "ScaleInBlocked", "ScaleIn", blocked.clone()).await;
        }
    }
    let name = set.name_any();
    let body =
        json!({"apiVersion": "seedmanagement.gardener.cloud/v1alpha1", "kind": "ManagedSeedSet", "status": status});
    sets.patch_status(&name, &PatchParams::apply(&field_manager(NAME)).force(), &Patch::Apply(&body))
        .await
        .map_err(kube_err("WriteStatusFailed", format!("writing the status of ManagedSeedSet {name}")))?;
    Ok(())
}

async fn take_step(set: &ManagedSeedSet, decision: &Decision, revision: &str, ctx: &Context) -> Result<(), Error> {
    let client = &ctx.common.client;
    let (namespace, name) = (set.namespace().unwrap_or_default(), set.name_any());
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), &namespace);
    let managed_seeds: Api<ManagedSeed> = Api::namespaced(client.clone(), &namespace);
    let apply = PatchParams::apply(&field_manager(NAME)).force();
    let replica = |i| decide::replica_name(&name, i);
    let (reason, note) = match decision.step {
        Step::Wait | Step::RemoveFinalizer => return Ok(()),
        Step::CreateShoot(i) => {
            shoots
                .patch(&replica(i), &apply, &Patch::Apply(&build::shoot(set, i, revision)))
                .await
                .map_err(kube_err("CreateShootFailed", format!("creating Shoot {namespace}/{}", replica(i))))?;
            ("CreatingShoot", format!("created Shoot {} for replica {i}", replica(i)))
        }
        Step::CreateManagedSeed(i) => {
            managed_seeds
                .patch(&replica(i), &apply, &Patch::Apply(&build::managed_seed(set, i, revision)))
                .await
                .map_err(kube_err(
                    "CreateManagedSeedFailed",
                    format!("creating ManagedSeed {namespace}/{}", replica(i)),
                ))?;
            ("CreatingManagedSeed", format!("created ManagedSeed {}: its Shoot reconciled", replica(i)))
        }
        Step::Update(i) => {
            shoots
                .patch(&replica(i), &apply, &Patch::Apply(&build::shoot(set, i, revision)))
                .await
                .map_err(kube_err("UpdateShootFailed", format!("updating Shoot {namespace}/{}", replica(i))))?;
            managed_seeds
                .patch(&replica(i), &apply, &Patch::Apply(&build::managed_seed(set, i, revision)))
                .await
                .map_err(kube_err(
                    "UpdateManagedSeedFailed",
                    format!("updating ManagedSeed {namespace}/{}", replica(i)),
                ))?;
            ("UpdatingReplica", format!("updated Shoot and ManagedSeed {} to revision {revision}", replica(i)))
        }
        Step::DeleteManagedSeed(i) => {
            ignore_gone(managed_seeds.delete(&replica(i), &DeleteParams::default()).await).map_err(kube_err(
                "DeleteManagedSeedFailed",
                format!("deleting ManagedSeed {namespace}/{}", replica(i)),
            ))?;
            ("DeletingManagedSeed", format!("deleting ManagedSeed {}", replica(i)))
        }
        Step::DeleteShoot(i) => {
            // Shoots are deleted only with the confirmation annotation (admission).
            let confirm = json!({"metadata": {"annotations": {ANNOTATION_CONFIRM_DELETION: "true"}}});
            ignore_gone(shoots.patch(&replica(i), &PatchParams::default(), &Patch::Merge(&confirm)).await.map(drop))
                .map_err(kube_err(
                    "DeleteShootFailed",
                    format!("confirming the deletion of Shoot {namespace}/{}", replica(i)),
                ))?;
            ignore_gone(shoots.delete(&replica(i), &DeleteParams::default()).await.map(drop))
                .map_err(kube_err("DeleteShootFailed", format!("deleting Shoot {namespace}/{}", replica(i))))?;
            ("DeletingShoot", format!("deleting Shoot {}: its ManagedSeed is gone", replica(i)))
        }
    };
    tracing::info!(reason, %note, "step");
    ctx.common.event(set, EventType::Normal, reason, "Reconcile", note).await;
    Ok(())
}

fn ignore_gone<T>(result: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
