//! The shoot seed-label controller against a real kube-apiserver, as the chart's
//! ServiceAccount: a scheduled shoot stored without labels gets its seed's label, a migration
//! carries both seeds' labels until `status.seedName` moves, then only the target's, and a
//! shoot in step is not written.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::Shoot;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::*;

const NS: &str = "garden-dev";

/// The shoot's seed labels, sorted.
async fn seed_labels(api: &Api<Shoot>, name: &str) -> Vec<String> {
    let shoot = api.get(name).await.unwrap();
    shoot
        .labels()
        .iter()
        .filter(|(k, _)| k.starts_with("name.seed.gardener.cloud/"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

async fn wait_labels(api: &Api<Shoot>, name: &str, want: &[&str]) {
    eventually(&format!("seed labels {want:?}"), || async {
        let got = seed_labels(api, name).await;
        if got == want { Ok(()) } else { Err(format!("{got:?}")) }
    })
    .await;
}

#[tokio::test]
async fn seed_labels_follow_spec_and_status_seed_names() {
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), NS);
    // Stored before the labels existed (no admission here): scheduled to `a`, with a stray label.
    let mut scheduled = shoot("scheduled", NS);
    scheduled.spec.seed_name = Some("a".into());
    scheduled.metadata.labels = Some([("name.seed.gardener.cloud/z".to_string(), "true".to_string())].into());
    create_shoot(&client, &scheduled).await;
    create_shoot(&client, &shoot("unscheduled", NS)).await;
    let _running = start(&env, controller_manager::Config::default()).await;

    wait_labels(&shoots, "scheduled", &["name.seed.gardener.cloud/a=true"]).await;
    assert!(seed_labels(&shoots, "unscheduled").await.is_empty());

    // A migration: spec moves to `b` while the status still names `a`.
    let status = json!({"status": {"seedName": "a"}});
    shoots.patch_status("scheduled", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    let moved = json!({"spec": {"seedName": "b"}});
    shoots.patch("scheduled", &PatchParams::default(), &Patch::Merge(&moved)).await.unwrap();
    wait_labels(&shoots, "scheduled", &["name.seed.gardener.cloud/a=true", "name.seed.gardener.cloud/b=true"]).await;

    // The target's gardenlet completes the restore: only `b` remains.
    let status = json!({"status": {"seedName": "b"}});
    shoots.patch_status("scheduled", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    wait_labels(&shoots, "scheduled", &["name.seed.gardener.cloud/b=true"]).await;

    // In step: an unrelated change is not followed by a write of ours.
    let annotate = json!({"metadata": {"annotations": {"note": "x"}}});
    let version = shoots.patch("scheduled", &PatchParams::default(), &Patch::Merge(&annotate)).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(shoots.get("scheduled").await.unwrap().resource_version(), version.resource_version());
}
