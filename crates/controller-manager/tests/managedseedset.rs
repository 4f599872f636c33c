//! The ManagedSeedSet controller against a real kube-apiserver, as the chart's ServiceAccount
//! (which proves the chart's Role for it). There is no gardenlet here, so the test plays its
//! part with functions named `gardenlet_stand_in_*`: it reports a Shoot as reconciled and
//! healthy, registers a ready Seed for a ManagedSeed, and holds a ManagedSeed's deletion with a
//! finalizer as gardenlet does while it tears the seed down.
//!
//! The story: a set scaled 0 -> 2 creates replica 0's Shoot, its ManagedSeed once the Shoot
//! reconciled, and replica 1 only once replica 0 is ready; a template change rolls replica 1,
//! then replica 0; 2 -> 1 removes replica 1, ManagedSeed before Shoot; 1 -> 2 adds replica 2
//! (ordinals are never reused); deleting the set removes replica 2, then replica 0, each
//! ManagedSeed before its Shoot, and then the set.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::{Seed, Shoot};
use api::seedmanagement::{
    Gardenlet, ManagedSeed, ManagedSeedSet, ManagedSeedSetSpec, ManagedSeedSpec, ManagedSeedTemplate,
    PendingReplicaReason, ShootTemplate, TemplateMetadata,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use support::*;

const NS: &str = "garden";
const SET: &str = "set";
const REVISION: &str = "controller-revision-hash";

fn labels() -> std::collections::BTreeMap<String, String> {
    [("app".to_string(), "seeds".to_string())].into_iter().collect()
}

fn managed_seed_set(replicas: i32) -> ManagedSeedSet {
    let mut spec = shoot("template", NS).spec;
    spec.seed_name = None;
    let mut s = ManagedSeedSet::new(
        SET,
        ManagedSeedSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector { match_labels: Some(labels()), ..Default::default() },
            template: ManagedSeedTemplate {
                metadata: TemplateMetadata { labels: labels(), ..Default::default() },
                spec: ManagedSeedSpec { gardenlet: Some(Gardenlet::default()), ..Default::default() },
            },
            shoot_template: ShootTemplate {
                metadata: TemplateMetadata { labels: labels(), ..Default::default() },
                spec: serde_json::to_value(&spec).unwrap().into(),
            },
            ..Default::default()
        },
    );
    s.metadata.namespace = Some(NS.into());
    s
}

/// Test stand-in for gardenlet's shoot flow: the Shoot's current generation reconciled
/// successfully (`lastOperation` Succeeded) and its health conditions True.
async fn gardenlet_stand_in_reconciles_shoot(client: &Client, name: &str) {
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), NS);
    let shoot = shoots.get(name).await.unwrap();
    let now = Timestamp::now().to_string();
    let condition = |type_: &str| {
        json!({"type": type_, "status": "True", "lastTransitionTime": now, "lastUpdateTime": now,
               "reason": "TestStandIn", "message": "set by the test in gardenlet's place"})
    };
    let conditions: Vec<_> = ["APIServerAvailable", "ControlPlaneHealthy", "EveryNodeReady", "SystemComponentsHealthy"]
        .map(condition)
        .into();
    let status = json!({"status": {
        "observedGeneration": shoot.metadata.generation,
        "lastOperation": {"type": "Create", "state": "Succeeded", "progress": 100,
                          "description": "test stand-in", "lastUpdateTime": now},
        "conditions": conditions,
    }});
    shoots.patch_status(name, &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
}

/// Test stand-in for gardenlet registering the seed of a ManagedSeed: the Seed of the same
/// name, `GardenletReady=True`.
async fn gardenlet_stand_in_registers_seed(client: &Client, name: &str) {
    let seeds: Api<Seed> = Api::all(client.clone());
    let seed: Seed = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed",
        "metadata": {"name": name},
        "spec": {"provider": {"type": "local", "region": "local"},
                 "networks": {"nodes": "10.0.0.0/16", "pods": "10.1.0.0/16", "services": "10.2.0.0/16"}},
    }))
    .unwrap();
    seeds.create(&PostParams::default(), &seed).await.unwrap();
    let now = Timestamp::now().to_string();
    let status = json!({"status": {"conditions": [{"type": "GardenletReady", "status": "True",
        "lastTransitionTime": now, "lastUpdateTime": now, "reason": "TestStandIn", "message": "test stand-in"}]}});
    seeds.patch_status(name, &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
}

/// Test stand-in for gardenlet's finalizer on a ManagedSeed (held while it removes the seed),
/// so the test can see the ManagedSeed deleting while its Shoot is still there.
async fn gardenlet_stand_in_holds_managed_seed(client: &Client, name: &str, hold: bool) {
    let finalizers: Vec<&str> = if hold { vec!["seedmanagement.gardener.cloud/test-stand-in"] } else { vec![] };
    let patch = json!({"metadata": {"finalizers": finalizers}});
    let api: Api<ManagedSeed> = Api::namespaced(client.clone(), NS);
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
}

/// Both stand-ins for replica `name`, once the controller created what they act on.
async fn make_ready(client: &Client, name: &str) {
    gardenlet_stand_in_reconciles_shoot(client, name).await;
    eventually(&format!("ManagedSeed {name}"), || exists::<ManagedSeed>(client, name)).await;
    gardenlet_stand_in_registers_seed(client, name).await;
}

async fn exists<K>(client: &Client, name: &str) -> Result<K, String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), NS);
    api.get_opt(name).await.map_err(|e| e.to_string())?.ok_or_else(|| format!("{name} does not exist"))
}

async fn gone<K>(client: &Client, name: &str) -> Result<(), String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match exists::<K>(client, name).await {
        Err(_) => Ok(()),
        Ok(o) => Err(format!("{name} still exists (deleting: {})", o.meta().deletion_timestamp.is_some())),
    }
}

async fn deleting<K>(client: &Client, name: &str) -> Result<(), String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let o = exists::<K>(client, name).await?;
    if o.meta().deletion_timestamp.is_some() { Ok(()) } else { Err(format!("{name} is not being deleted")) }
}

async fn names<K>(client: &Client) -> Vec<String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), NS);
    let mut n: Vec<String> = api.list(&Default::default()).await.unwrap().items.iter().map(|o| o.name_any()).collect();
    n.sort();
    n
}

async fn status(sets: &Api<ManagedSeedSet>) -> api::seedmanagement::ManagedSeedSetStatus {
    sets.get(SET).await.unwrap().status.unwrap_or_default()
}

async fn pending(sets: &Api<ManagedSeedSet>, name: &str, reason: PendingReplicaReason) -> Result<(), String> {
    let p = status(sets).await.pending_replica;
    match &p {
        Some(p) if p.name == name && p.reason == reason => Ok(()),
        _ => Err(format!("pending replica {p:?}")),
    }
}

async fn scale(sets: &Api<ManagedSeedSet>, replicas: i32) {
    let patch = json!({"spec": {"replicas": replicas}});
    sets.patch(SET, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
}

#[tokio::test]
async fn a_set_scales_out_and_in_one_replica_at_a_time_rolls_updates_and_goes_in_order() {
    let (env, client) = garden().await;
    let running = start(&env, controller_manager::Config::default()).await;
    let sets: Api<ManagedSeedSet> = Api::namespaced(client.clone(), NS);
    let shoots = || names::<Shoot>(&client);
    let managed_seeds = || names::<ManagedSeed>(&client);

    // An empty set: its finalizer and a status, nothing else.
    sets.create(&PostParams::default(), &managed_seed_set(0)).await.unwrap();
    eventually("the finalizer and an empty status", || async {
        let s = sets.get(SET).await.map_err(|e| e.to_string())?;
        let st = s.status.clone().unwrap_or_default();
        if s.finalizers().contains(&"gardener".to_string())
            && st.observed_generation == 1
            && !st.update_revision.is_empty()
        {
            Ok(())
        } else {
            Err(format!("{:?} {st:?}", s.finalizers()))
        }
    })
    .await;

    // 0 -> 2: replica 0's Shoot first, owned and labelled; nothing else yet.
    scale(&sets, 2).await;
    let s0 = eventually("Shoot set-0", || exists::<Shoot>(&client, "set-0")).await;
    let owner = &s0.owner_references()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str(), owner.controller), ("ManagedSeedSet", SET, Some(true)));
    assert_eq!(s0.labels().get("app").map(String::as_str), Some("seeds"));
    let revision = s0.labels().get(REVISION).cloned().expect("revision label");
    eventually("set-0 pending while its Shoot reconciles", || {
        pending(&sets, "set-0", PendingReplicaReason::ShootReconciling)
    })
    .await;
    assert_eq!((shoots().await, managed_seeds().await), (vec!["set-0".to_string()], vec![]));

    // The Shoot reconciled: its ManagedSeed, for that Shoot; replica 1 waits for the Seed.
    gardenlet_stand_in_reconciles_shoot(&client, "set-0").await;
    let ms0 = eventually("ManagedSeed set-0", || exists::<ManagedSeed>(&client, "set-0")).await;
    assert_eq!(ms0.spec.shoot.as_ref().map(|s| s.name.as_str()), Some("set-0"));
    assert_eq!(ms0.labels().get(REVISION), Some(&revision));
    eventually("set-0 pending while its seed is prepared", || {
        pending(&sets, "set-0", PendingReplicaReason::ManagedSeedPreparing)
    })
    .await;
    assert_eq!(shoots().await, vec!["set-0".to_string()], "replica 1 must wait for replica 0");

    // Replica 0 ready: replica 1 starts, and becomes ready the same way.
    gardenlet_stand_in_registers_seed(&client, "set-0").await;
    eventually("Shoot set-1", || exists::<Shoot>(&client, "set-1")).await;
    make_ready(&client, "set-1").await;
    eventually("two ready replicas", || async {
        let st = status(&sets).await;
        let ready =
            st.conditions.iter().any(|c| c.type_ == "ReplicasReady" && c.status == api::common::ConditionStatus::True);
        if (st.replicas, st.ready_replicas, st.next_replica_number, st.pending_replica.is_none(), ready)
            == (2, 2, 2, true, true)
        {
            Ok(())
        } else {
            Err(format!("{st:?}"))
        }
    })
    .await;
    assert_eq!(status(&sets).await.current_revision, revision);

    // A template change rolls replica 1 first, and replica 0 only once replica 1 is ready again.
    // (A change of the Shoot spec: the Shoot's generation moves, and gardenlet must reconcile it.)
    let mut changed = managed_seed_set(2).spec.shoot_template;
    changed.metadata.annotations.insert("rolled".into(), "yes".into());
    changed.spec.0["provider"]["workers"][0]["maximum"] = json!(3);
    let patch = json!({"spec": {"shootTemplate": changed}});
    sets.patch(SET, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let s1 = eventually("Shoot set-1 updated", || async {
        let s = exists::<Shoot>(&client, "set-1").await?;
        if s.labels().get(REVISION) != Some(&revision) { Ok(s) } else { Err("old revision".to_string()) }
    })
    .await;
    let new_revision = s1.labels().get(REVISION).cloned().unwrap();
    assert_eq!(s1.annotations().get("rolled").map(String::as_str), Some("yes"));
    assert_eq!(s1.spec.provider.workers[0].maximum, 3);
    let ms1 = exists::<ManagedSeed>(&client, "set-1").await.unwrap();
    assert_eq!(ms1.labels().get(REVISION), Some(&new_revision));
    eventually("set-1 pending while its Shoot reconciles the update", || {
        pending(&sets, "set-1", PendingReplicaReason::ShootReconciling)
    })
    .await;
    // (The status is written before each step, so the counts follow one reconcile later.)
    eventually("one replica at each revision", || async {
        let st = status(&sets).await;
        let counts = (st.updated_replicas, st.current_replicas, st.update_revision.clone());
        if counts == (1, 1, new_revision.clone()) { Ok(()) } else { Err(format!("{st:?}")) }
    })
    .await;
    let s0 = exists::<Shoot>(&client, "set-0").await.unwrap();
    assert_eq!(s0.labels().get(REVISION), Some(&revision), "replica 0 waits for replica 1");
    gardenlet_stand_in_reconciles_shoot(&client, "set-1").await;
    eventually("Shoot set-0 updated", || async {
        let s = exists::<Shoot>(&client, "set-0").await?;
        if s.labels().get(REVISION) == Some(&new_revision) { Ok(()) } else { Err("old revision".to_string()) }
    })
    .await;
    gardenlet_stand_in_reconciles_shoot(&client, "set-0").await;
    eventually("the update to be complete", || async {
        let st = status(&sets).await;
        if st.current_revision == new_revision && st.updated_replicas == 2 && st.ready_replicas == 2 {
            Ok(())
        } else {
            Err(format!("{st:?}"))
        }
    })
    .await;

    // 2 -> 1: replica 1's ManagedSeed goes first; its Shoot only once the ManagedSeed is gone.
    gardenlet_stand_in_holds_managed_seed(&client, "set-1", true).await;
    scale(&sets, 1).await;
    eventually("ManagedSeed set-1 deleting", || deleting::<ManagedSeed>(&client, "set-1")).await;
    eventually("set-1 pending while its ManagedSeed goes", || {
        pending(&sets, "set-1", PendingReplicaReason::ManagedSeedDeleting)
    })
    .await;
    let s1 = exists::<Shoot>(&client, "set-1").await.unwrap();
    assert!(s1.metadata.deletion_timestamp.is_none(), "the Shoot must outlive its ManagedSeed");
    assert!(exists::<ManagedSeed>(&client, "set-0").await.unwrap().metadata.deletion_timestamp.is_none());
    gardenlet_stand_in_holds_managed_seed(&client, "set-1", false).await;
    eventually("Shoot set-1 gone", || gone::<Shoot>(&client, "set-1")).await;
    eventually("one replica", || async {
        let st = status(&sets).await;
        if (st.replicas, st.ready_replicas, st.pending_replica.is_none()) == (1, 1, true) {
            Ok(())
        } else {
            Err(format!("{st:?}"))
        }
    })
    .await;
    assert_eq!((shoots().await, managed_seeds().await), (vec!["set-0".to_string()], vec!["set-0".to_string()]));

    // 1 -> 2: the new replica is set-2; ordinal 1 is not reused.
    scale(&sets, 2).await;
    eventually("Shoot set-2", || exists::<Shoot>(&client, "set-2")).await;
    make_ready(&client, "set-2").await;
    eventually("two ready replicas again", || async {
        let st = status(&sets).await;
        if (st.replicas, st.ready_replicas, st.next_replica_number) == (2, 2, 3) {
            Ok(())
        } else {
            Err(format!("{st:?}"))
        }
    })
    .await;
    assert!(gone::<Shoot>(&client, "set-1").await.is_ok());

    // Deleting the set: replica 2 (ManagedSeed, then Shoot), then replica 0, then the set.
    gardenlet_stand_in_holds_managed_seed(&client, "set-2", true).await;
    gardenlet_stand_in_holds_managed_seed(&client, "set-0", true).await;
    sets.delete(SET, &DeleteParams::default()).await.unwrap();
    eventually("ManagedSeed set-2 deleting", || deleting::<ManagedSeed>(&client, "set-2")).await;
    assert!(exists::<Shoot>(&client, "set-2").await.unwrap().metadata.deletion_timestamp.is_none());
    assert!(exists::<ManagedSeed>(&client, "set-0").await.unwrap().metadata.deletion_timestamp.is_none());
    gardenlet_stand_in_holds_managed_seed(&client, "set-2", false).await;
    eventually("Shoot set-2 gone", || gone::<Shoot>(&client, "set-2")).await;
    eventually("ManagedSeed set-0 deleting", || deleting::<ManagedSeed>(&client, "set-0")).await;
    assert!(exists::<Shoot>(&client, "set-0").await.unwrap().metadata.deletion_timestamp.is_none());
    gardenlet_stand_in_holds_managed_seed(&client, "set-0", false).await;
    eventually("Shoot set-0 gone", || gone::<Shoot>(&client, "set-0")).await;
    eventually("the set gone", || gone::<ManagedSeedSet>(&client, SET)).await;
    assert_eq!((shoots().await, managed_seeds().await), (vec![], vec![]));
    assert_eq!(running.metrics.all_errors("managedseedset"), 0, "{}", running.metrics.render());
}

#[tokio::test]
async fn a_scale_in_waits_while_every_seed_hosts_shoots() {
    let (env, client) = garden().await;
    let _running = start(&env, controller_manager::Config::default()).await;
    let sets: Api<ManagedSeedSet> = Api::namespaced(client.clone(), NS);
    sets.create(&PostParams::default(), &managed_seed_set(1)).await.unwrap();
    eventually("Shoot set-0", || exists::<Shoot>(&client, "set-0")).await;
    make_ready(&client, "set-0").await;
    eventually("one ready replica", || async {
        let st = status(&sets).await;
        if st.ready_replicas == 1 { Ok(()) } else { Err(format!("{st:?}")) }
    })
    .await;

    // A user's shoot scheduled onto the seed set-0 (the seed label is what the set counts by).
    namespace(&client, "garden-dev").await;
    let mut app = shoot("app", "garden-dev");
    app.spec.seed_name = Some("set-0".into());
    app.metadata.labels = Some([("name.seed.gardener.cloud/set-0".to_string(), "true".to_string())].into());
    create_shoot(&client, &app).await;

    scale(&sets, 0).await;
    eventually("the scale-in to be reported blocked", || async {
        let st = status(&sets).await;
        match st.conditions.iter().find(|c| c.type_ == "ReplicasReady") {
            Some(c) if c.reason == "ScaleInBlocked" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(exists::<ManagedSeed>(&client, "set-0").await.unwrap().metadata.deletion_timestamp.is_none());
    assert!(!event_notes(&client, NS, SET, "ScaleInBlocked").await.is_empty());

    // The shoot leaves the seed: the watch on shoots resumes the scale-in.
    Api::<Shoot>::namespaced(client.clone(), "garden-dev").delete("app", &DeleteParams::default()).await.unwrap();
    eventually("Shoot set-0 gone", || gone::<Shoot>(&client, "set-0")).await;
    assert_eq!(names::<ManagedSeed>(&client).await, Vec::<String>::new());
}
