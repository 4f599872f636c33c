//! The ShootState sync against a real kube-apiserver: states are copied as they change and
//! only then, and an oversized state is refused with the offender named. The sync acts as
//! gardenlet's chart's ServiceAccount.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::ShootState;
use api::extensions::Infrastructure;
use gardenlet::shootstate_sync::{SyncError, run, sync_object};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use std::time::{Duration, Instant};

const CONFIG: &str = "seed:\n  name: local\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n";

/// The control plane, the admin client, and gardenlet's (its chart's ServiceAccount).
async fn setup() -> (testenv::TestEnv, kube::Client, kube::Client) {
    let env =
        testenv::TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..Default::default() }).await.unwrap();
    let client = env.client().await.unwrap();
    for ns in ["garden-dev", "shoot--dev--demo"] {
        let n: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).unwrap();
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &n).await.unwrap();
    }
    // The shoot the states belong to (no seed owns it yet, so this seed's sync speaks for it).
    let shoot: api::core::Shoot = serde_json::from_value(serde_json::json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
        "metadata": {"name": "demo", "namespace": "garden-dev"},
        "spec": {"region": "local", "provider": {"type": "local"}, "kubernetes": {"version": "1.20.2"}}
    }))
    .unwrap();
    Api::<api::core::Shoot>::namespaced(client.clone(), "garden-dev")
        .create(&PostParams::default(), &shoot)
        .await
        .unwrap();
    let mut state = ShootState::new("demo", Default::default());
    state.metadata.namespace = Some("garden-dev".into());
    Api::<ShootState>::namespaced(client.clone(), "garden-dev").create(&PostParams::default(), &state).await.unwrap();
    let infra: Infrastructure = serde_json::from_value(serde_json::json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Infrastructure",
        "metadata": {"name": "demo", "namespace": "shoot--dev--demo"},
        "spec": {"type": "local", "region": "local", "secretRef": {"name": "cloudprovider"}}
    }))
    .unwrap();
    Api::<Infrastructure>::namespaced(client.clone(), "shoot--dev--demo")
        .create(&PostParams::default(), &infra)
        .await
        .unwrap();
    let gardenlet = support::chart::gardenlet_client(&env, CONFIG).await;
    (env, client, gardenlet)
}

async fn set_status(client: &kube::Client, status: serde_json::Value) -> Infrastructure {
    Api::<Infrastructure>::namespaced(client.clone(), "shoot--dev--demo")
        .patch_status("demo", &PatchParams::default(), &Patch::Merge(&serde_json::json!({ "status": status })))
        .await
        .unwrap()
}

async fn wait_state(states: &Api<ShootState>, check: impl Fn(&ShootState) -> bool) -> ShootState {
    let started = Instant::now();
    loop {
        let s = states.get("demo").await.unwrap();
        if check(&s) {
            return s;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "ShootState never matched: {:?}", s.spec.extensions);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn extension_states_are_copied_on_change_only() {
    let (_env, client, gardenlet) = setup().await;
    let task =
        tokio::spawn(run::<Infrastructure>(gardenlet.clone(), gardenlet.clone(), 1024 * 1024, "local".to_string()));
    let states: Api<ShootState> = Api::namespaced(client.clone(), "garden-dev");

    set_status(&client, serde_json::json!({"state": {"network": "n-1"}})).await;
    let s = wait_state(&states, |s| s.spec.extensions.iter().any(|e| e.kind == "Infrastructure")).await;
    assert_eq!(s.spec.extensions[0].state.as_ref().unwrap().0["network"], "n-1");
    assert_eq!(s.spec.extensions[0].name.as_deref(), Some("demo"));

    set_status(&client, serde_json::json!({"state": {"network": "n-2"}})).await;
    let s = wait_state(&states, |s| s.spec.extensions[0].state.as_ref().unwrap().0["network"] == "n-2").await;

    // A status change that leaves the state alone does not write the ShootState.
    set_status(
        &client,
        serde_json::json!({"lastOperation": {"description": "x", "lastUpdateTime": "2024-01-02T03:04:05Z",
            "progress": 100, "state": "Succeeded", "type": "Reconcile"}}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(states.get("demo").await.unwrap().resource_version(), s.resource_version(), "no write without a change");
    task.abort();
}

#[tokio::test]
async fn an_oversized_state_is_refused_and_names_the_offender() {
    let (_env, client, gardenlet) = setup().await;
    let infra = set_status(&client, serde_json::json!({"state": {"blob": "x".repeat(20_000)}})).await;
    let before = Api::<ShootState>::namespaced(client.clone(), "garden-dev").get("demo").await.unwrap();
    let err = sync_object(&gardenlet, &infra, 10_000, "local").await.unwrap_err();
    assert!(matches!(err, SyncError::TooLarge { .. }));
    let message = err.to_string();
    assert!(
        message.starts_with("Infrastructure shoot--dev--demo/demo: its state would make ShootState demo"),
        "{message}"
    );
    let after = Api::<ShootState>::namespaced(client.clone(), "garden-dev").get("demo").await.unwrap();
    assert_eq!(after.resource_version(), before.resource_version(), "nothing written");
    assert!(sync_object(&gardenlet, &infra, 1024 * 1024, "local").await.unwrap(), "fits under a larger limit");
}

#[tokio::test]
async fn a_state_reported_before_the_shoot_state_exists_creates_it_and_another_seeds_shoot_is_left_alone() {
    let (_env, client, gardenlet) = setup().await;
    let states: Api<ShootState> = Api::namespaced(client.clone(), "garden-dev");
    states.delete("demo", &Default::default()).await.unwrap();
    let infra = set_status(&client, serde_json::json!({"state": {"network": "early"}})).await;
    assert!(sync_object(&gardenlet, &infra, 1024 * 1024, "local").await.unwrap());
    let created = states.get("demo").await.unwrap();
    assert_eq!(created.spec.extensions[0].state.as_ref().unwrap().0["network"], "early");
    let owner = created.metadata.owner_references.unwrap_or_default();
    assert_eq!(owner.iter().map(|o| o.kind.as_str()).collect::<Vec<_>>(), ["Shoot"], "collected with the shoot");

    // Once another seed owns the shoot, this seed's leftovers no longer speak for it.
    let shoots: Api<api::core::Shoot> = Api::namespaced(client.clone(), "garden-dev");
    let owned = serde_json::json!({"status": {"seedName": "other"}});
    shoots.patch_status("demo", &PatchParams::default(), &Patch::Merge(&owned)).await.unwrap();
    let infra = set_status(&client, serde_json::json!({"state": {"network": "stale"}})).await;
    assert!(!sync_object(&gardenlet, &infra, 1024 * 1024, "local").await.unwrap());
    let kept = states.get("demo").await.unwrap();
    assert_eq!(kept.spec.extensions[0].state.as_ref().unwrap().0["network"], "early");
}
