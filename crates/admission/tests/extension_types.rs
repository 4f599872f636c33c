//! Extension types through a real kube-apiserver (Gardener's `ExtensionValidator`): a Shoot or
//! Seed naming a type no ControllerRegistration serves is refused, naming the field, the kind
//! and the type; once created, an object stays updatable when its registration goes away.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use admission::fixtures;
use api::core::{ControllerRegistration, Seed, Shoot};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use support::*;

#[tokio::test]
async fn unserved_extension_types_are_refused_and_existing_objects_stay_updatable() {
    let (env, client) = garden().await;
    let _webhook = start_webhook(&env, &client, |_| {}).await;
    let shoots = Api::<Shoot>::namespaced(client.clone(), NS);

    // Gardener's example shoot on this garden: network `cilium` has no registration.
    let mut unserved = fixtures::shoot();
    unserved.metadata.name = Some("cilium".into());
    unserved.spec.networking.as_mut().unwrap().type_ = Some("cilium".into());
    let message = eventually("the webhook to refuse an unserved network type", || async {
        match shoots.create(&PostParams::default(), &unserved).await {
            Err(kube::Error::Api(s)) if s.message.contains("admission webhook") => Ok(s.message),
            other => {
                if other.is_ok() {
                    let _ = shoots.delete("cilium", &DeleteParams::default()).await;
                }
                Err(format!("{other:?}"))
            }
        }
    })
    .await;
    assert!(
        message.contains(
            "spec.networking.type: Unsupported value: \"cilium\": no ControllerRegistration serves Network type \"cilium\"; registered: \"calico\", \"local\""
        ),
        "{message}"
    );

    // Served types are admitted.
    shoots.create(&PostParams::default(), &fixtures::shoot()).await.unwrap();

    // The network's registration goes away: the shoot can still be changed and annotated.
    let registrations = Api::<ControllerRegistration>::all(client.clone());
    registrations.delete("networking-calico", &DeleteParams::default()).await.unwrap();
    let mut other = fixtures::shoot();
    other.metadata.name = Some("other".into());
    eventually("the webhook to learn that calico is gone", || async {
        match shoots.create(&PostParams::default(), &other).await {
            Err(kube::Error::Api(s)) if s.message.contains("Network type \"calico\"") => Ok(()),
            other => {
                if other.is_ok() {
                    let _ = shoots.delete("other", &DeleteParams::default()).await;
                }
                Err(format!("{other:?}"))
            }
        }
    })
    .await;
    let patch = json!({"spec": {"provider": {"workers": [{"name": "pool", "minimum": 1, "maximum": 3,
        "machine": {"type": "local", "image": {"name": "local", "version": "1.0.0"}}, "zones": ["0"]}]}}});
    shoots.patch("demo", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    // A pool with an image no registration serves is refused, naming that pool's field.
    let patch = json!({"spec": {"provider": {"workers": [
        {"name": "pool", "minimum": 1, "maximum": 3, "machine": {"type": "local", "image": {"name": "local", "version": "1.0.0"}}, "zones": ["0"]},
        {"name": "second", "minimum": 1, "maximum": 1, "machine": {"type": "local", "image": {"name": "gardenlinux", "version": "1.0.0"}}, "zones": ["0"]}
    ]}}});
    let message = refusal(shoots.patch("demo", &PatchParams::default(), &Patch::Merge(&patch)).await, "unserved image");
    assert!(
        message.contains("spec.provider.workers[1].machine.image.name: Unsupported value: \"gardenlinux\": no ControllerRegistration serves OperatingSystemConfig type \"gardenlinux\""),
        "{message}"
    );

    // Seeds: the provider type needs a ControlPlane controller, the backup provider BackupBucket
    // and BackupEntry controllers.
    let seed: Seed = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed", "metadata": {"name": "aws"},
        "spec": {"provider": {"type": "aws", "region": "eu-west-1"}, "backup": {"provider": "s3"}, "dns": {},
                 "networks": {"pods": "10.1.0.0/16", "services": "10.2.0.0/16"}}
    }))
    .unwrap();
    let seeds = Api::<Seed>::all(client.clone());
    let message = refusal(seeds.create(&PostParams::default(), &seed).await, "unserved seed types");
    for want in [
        "spec.provider.type: Unsupported value: \"aws\": no ControllerRegistration serves ControlPlane type \"aws\"; registered: \"local\"",
        "spec.backup.provider: Unsupported value: \"s3\": no ControllerRegistration serves BackupBucket or BackupEntry type \"s3\"",
    ] {
        assert!(message.contains(want), "missing {want:?} in {message}");
    }
    let mut local = seed.clone();
    local.metadata.name = Some("local".into());
    local.spec.provider.type_ = "local".into();
    local.spec.backup.as_mut().unwrap().provider = Some("local".into());
    seeds.create(&PostParams::default(), &local).await.unwrap();
}
