//! The NamespacedCloudProfile controller against a real kube-apiserver, as the chart's
//! ServiceAccount: the merged profile appears in the status, follows changes of the parent and
//! of the namespaced additions, and a missing parent is reported, not guessed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::{CloudProfile, NamespacedCloudProfile};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use support::*;

const NS: &str = "garden-dev";

fn namespaced(name: &str, parent: &str) -> NamespacedCloudProfile {
    serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "NamespacedCloudProfile",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "parent": {"kind": "CloudProfile", "name": parent},
            "kubernetes": {"versions": [{"version": "1.20.2", "expirationDate": "2030-01-01T00:00:00Z"}]},
            "machineTypes": [{"name": "local-large", "cpu": "4", "gpu": "0", "memory": "8Gi", "usable": true}]
        }
    }))
    .unwrap()
}

/// `(machine types, 1.20.2's expiration date, observed generation)` of the merged profile.
async fn merged(api: &Api<NamespacedCloudProfile>, name: &str) -> Result<(Vec<String>, String, i64), String> {
    let p = api.get(name).await.map_err(|e| e.to_string())?;
    let status = p.status.ok_or("no status")?;
    let spec = status.cloud_profile_spec.ok_or("no merged spec")?;
    let expiration = spec
        .kubernetes
        .versions
        .iter()
        .find(|v| v.version == "1.20.2")
        .and_then(|v| v.expiration_date.as_ref())
        .map(|t| t.0.to_string())
        .unwrap_or_default();
    Ok((
        spec.machine_types.iter().map(|t| t.name.clone()).collect(),
        expiration,
        status.observed_generation.unwrap_or(0),
    ))
}

#[tokio::test]
async fn the_merged_profile_follows_parent_and_additions() {
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let parents: Api<CloudProfile> = Api::all(client.clone());
    parents.create(&PostParams::default(), &admission::fixtures::cloud_profile()).await.unwrap();
    let _running = start(&env, controller_manager::Config::default()).await;
    let profiles: Api<NamespacedCloudProfile> = Api::namespaced(client.clone(), NS);

    profiles.create(&PostParams::default(), &namespaced("dev", "local")).await.unwrap();
    eventually("the merged profile", || async {
        match merged(&profiles, "dev").await? {
            (types, exp, 1) if types == ["local", "large", "local-large"] && exp == "2030-01-01T00:00:00Z" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // The parent offers another machine type: the merged profile has it too.
    let mut types = serde_json::to_value(&admission::fixtures::cloud_profile_spec().machine_types).unwrap();
    types.as_array_mut().unwrap().push(json!({"name": "huge", "cpu": "64", "gpu": "0", "memory": "256Gi"}));
    parents
        .patch("local", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"machineTypes": types}})))
        .await
        .unwrap();
    eventually("the parent's change merged", || async {
        match merged(&profiles, "dev").await? {
            (types, _, 1) if types == ["local", "large", "huge", "local-large"] => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // The namespaced additions change: a new generation is observed.
    let later = json!({"spec": {"kubernetes": {"versions": [{"version": "1.20.2", "expirationDate": "2031-06-01T00:00:00Z"}]}}});
    profiles.patch("dev", &PatchParams::default(), &Patch::Merge(&later)).await.unwrap();
    eventually("the addition's change merged", || async {
        match merged(&profiles, "dev").await? {
            (_, exp, 2) if exp == "2031-06-01T00:00:00Z" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // A profile whose parent does not exist gets no merged spec, and says why.
    profiles.create(&PostParams::default(), &namespaced("orphan", "nope")).await.unwrap();
    let notes = eventually("a ParentMissing event", || async {
        let notes = event_notes(&client, NS, "orphan", "ParentMissing").await;
        if notes.is_empty() { Err("no event yet".to_string()) } else { Ok(notes) }
    })
    .await;
    assert!(notes[0].contains("spec.parent") && notes[0].contains("\"nope\""), "{notes:?}");
    assert!(profiles.get("orphan").await.unwrap().status.is_none());
}
