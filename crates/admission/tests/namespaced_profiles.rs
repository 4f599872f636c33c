//! Shoots on a NamespacedCloudProfile through a real kube-apiserver: the profile's own rules
//! against its parent; a shoot naming it is refused until its status is computed, then judged
//! against the merged profile (a machine type only the namespaced profile adds); the reference
//! may move between the CloudProfile and its namespaced child and back, but not to another
//! CloudProfile.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use admission::fixtures;
use api::core::{CloudProfile, NamespacedCloudProfile, Shoot};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use support::*;

/// A NamespacedCloudProfile as Gardener documents one: a parent, an extended expiration date,
/// and an additional machine type.
fn team_profile(machine_type: &str, kubernetes_version: &str) -> NamespacedCloudProfile {
    serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "NamespacedCloudProfile",
        "metadata": {"name": "team", "namespace": NS},
        "spec": {
            "parent": {"kind": "CloudProfile", "name": "local"},
            "kubernetes": {"versions": [{"version": kubernetes_version, "expirationDate": "2099-01-01T00:00:00Z"}]},
            "machineTypes": [{"name": machine_type, "cpu": "4", "gpu": "0", "memory": "8Gi", "usable": true}],
        },
    }))
    .unwrap()
}

fn on_team_profile(name: &str) -> Shoot {
    let mut s = fixtures::shoot();
    s.metadata.name = Some(name.into());
    s.spec.cloud_profile_name = None;
    s.spec.cloud_profile = Some(api::core::shoot::CloudProfileReference {
        kind: Some("NamespacedCloudProfile".into()),
        name: "team".into(),
    });
    s.spec.provider.workers[0].machine.type_ = "xlarge".into();
    s
}

#[tokio::test]
async fn shoots_on_a_namespaced_cloud_profile() {
    let (env, client) = garden().await;
    let _webhook = start_webhook(&env, &client, |_| {}).await;
    let profiles = Api::<NamespacedCloudProfile>::namespaced(client.clone(), NS);
    let shoots = Api::<Shoot>::namespaced(client.clone(), NS);

    // The profile's own rules, against the parent in the webhook's cache.
    let refused = eventually("a machine type of the parent refused", || async {
        match profiles.create(&PostParams::default(), &team_profile("large", "1.20.2")).await {
            Err(kube::Error::Api(s)) if s.message.contains("spec.machineTypes") => Ok(s.message),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(
        refused.contains("spec.machineTypes[0].name: Invalid value: \"large\": the parent CloudProfile already offers a machine type of this name"),
        "{refused}"
    );
    let refused = refusal(
        profiles.create(&PostParams::default(), &team_profile("xlarge", "1.22.0")).await,
        "an override of a version the parent lacks",
    );
    assert!(
        refused.contains(
            "spec.kubernetes.versions[0].version: Invalid value: \"1.22.0\": does not exist in the parent CloudProfile"
        ),
        "{refused}"
    );
    let mut orphan = team_profile("xlarge", "1.20.2");
    orphan.spec.parent.name = "nope".into();
    let refused = refusal(profiles.create(&PostParams::default(), &orphan).await, "a profile without parent");
    assert!(refused.contains("spec.parent.name: Not found: \"nope\""), "{refused}");
    let team = profiles.create(&PostParams::default(), &team_profile("xlarge", "1.20.2")).await.unwrap();
    let mut reparented = team.clone();
    reparented.spec.parent.name = "other".into();
    let refused = refusal(profiles.replace("team", &PostParams::default(), &reparented).await, "a new parent");
    assert!(refused.contains("spec.parent: Invalid value"), "{refused}");

    // Until its controller has computed the status, a shoot cannot use it.
    let message = eventually("a shoot on the uncomputed profile refused", || async {
        match shoots.create(&PostParams::default(), &on_team_profile("early")).await {
            Err(kube::Error::Api(s)) if s.message.contains("status.cloudProfileSpec") => Ok(s.message),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(message.contains("spec.cloudProfile: Invalid value: \"team\": NamespacedCloudProfile garden-dev/team has no status.cloudProfileSpec yet"), "{message}");
    let missing = refusal(
        shoots
            .create(&PostParams::default(), &{
                let mut s = on_team_profile("lost");
                s.spec.cloud_profile.as_mut().unwrap().name = "nope".into();
                s
            })
            .await,
        "a shoot on a NamespacedCloudProfile that does not exist",
    );
    assert!(missing.contains("spec.cloudProfile: Not found: \"nope\""), "{missing}");

    // The controller's part, done by hand: the parent merged with the additions.
    let merged = api::helpers::cloudprofile_merge::merge(&fixtures::cloud_profile_spec(), &team.spec);
    profiles
        .patch_status("team", &PatchParams::default(), &Patch::Merge(json!({"status": {"cloudProfileSpec": merged}})))
        .await
        .unwrap();
    // Judged against the merged profile: `xlarge` is offered there, and only there.
    let created = eventually("a shoot on the computed profile admitted", || async {
        shoots.create(&PostParams::default(), &on_team_profile("team-shoot")).await.map_err(|e| e.to_string())
    })
    .await;
    let reference = created.spec.cloud_profile.clone().unwrap();
    assert_eq!((reference.kind.as_deref(), reference.name.as_str()), (Some("NamespacedCloudProfile"), "team"));
    assert_eq!(created.spec.cloud_profile_name, None, "Gardener's sync removes the old field for a namespaced profile");
    let mut on_parent = fixtures::shoot();
    on_parent.metadata.name = Some("parent-shoot".into());
    on_parent.spec.provider.workers[0].machine.type_ = "xlarge".into();
    let refused = refusal(shoots.create(&PostParams::default(), &on_parent).await, "xlarge on the parent");
    assert!(refused.contains("spec.provider.workers[0].machine.type: Unsupported value: \"xlarge\""), "{refused}");

    // A shoot on the parent moves to the child and back (a merge patch of `cloudProfile`
    // alone: the mutating webhook synchronises `cloudProfileName`), not to another profile.
    let demo = shoots.create(&PostParams::default(), &fixtures::shoot()).await.unwrap();
    assert_eq!(demo.spec.cloud_profile.as_ref().map(|r| r.kind.as_deref()), Some(Some("CloudProfile")));
    let to = |kind: &str, name: &str| json!({"spec": {"cloudProfile": {"kind": kind, "name": name}}});
    let moved = shoots
        .patch("demo", &PatchParams::default(), &Patch::Merge(to("NamespacedCloudProfile", "team")))
        .await
        .unwrap();
    assert_eq!(moved.spec.cloud_profile_name, None);
    let back = shoots
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"cloudProfile": {"kind": "CloudProfile", "name": "local"}}})),
        )
        .await
        .unwrap();
    assert_eq!(back.spec.cloud_profile_name.as_deref(), Some("local"));
    let mut other = fixtures::cloud_profile();
    other.metadata.name = Some("other".into());
    Api::<CloudProfile>::all(client.clone()).create(&PostParams::default(), &other).await.unwrap();
    let message = eventually("a move to another CloudProfile refused", || async {
        let patch =
            json!({"spec": {"cloudProfileName": "other", "cloudProfile": {"kind": "CloudProfile", "name": "other"}}});
        match shoots.patch("demo", &PatchParams::default(), &Patch::Merge(patch)).await {
            Err(kube::Error::Api(s)) if s.message.contains("may only change") => Ok(s.message),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(
        message.contains("spec.cloudProfileName: Forbidden: the profile may only change between a CloudProfile and the NamespacedCloudProfiles whose parent it is; cannot change from CloudProfile \"local\" to CloudProfile \"other\""),
        "{message}"
    );
    let conflicting = refusal(
        shoots
            .patch("demo", &PatchParams::default(), &Patch::Merge(json!({"spec": {"cloudProfileName": "other"}})))
            .await,
        "cloudProfileName disagreeing with cloudProfile",
    );
    assert!(conflicting.contains("spec.cloudProfileName: Invalid value: \"other\": must name the same CloudProfile as spec.cloudProfile.name (\"local\")"), "{conflicting}");
}
