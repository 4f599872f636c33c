//! Shoot admission through a real kube-apiserver: the webhook server runs in this process,
//! registers its webhook configurations with its own CA, and the API server calls it for every
//! Shoot create, update and delete.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use admission::fixtures;
use api::core::Shoot;
use api::core::shoot::ShootPurpose;
use api::core::shoot::kubernetes::ProxyMode;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::*;

#[tokio::test]
async fn shoots_are_defaulted_validated_and_protected() {
    let (env, client) = garden().await;
    let webhook = start_webhook(&env, &client, |_| {}).await;
    let shoots = Api::<Shoot>::namespaced(client.clone(), NS);

    // Invalid: unknown version, pool with min > max and an unknown machine type, overlapping
    // networks. The API server may take a moment to start calling a new webhook, so the first
    // refusal is awaited.
    let mut bad = fixtures::shoot();
    bad.metadata.name = Some("bad".into());
    bad.spec.kubernetes.version = "1.18.0".into();
    bad.spec.provider.workers[0].minimum = 5;
    bad.spec.provider.workers[0].machine.type_ = "huge".into();
    bad.spec.networking.as_mut().unwrap().nodes = Some("100.96.0.0/16".into());
    let message = eventually("the webhook to refuse an invalid shoot", || async {
        match shoots.create(&PostParams::default(), &bad).await {
            Err(kube::Error::Api(s)) if s.message.contains("admission webhook") => Ok(s.message),
            other => {
                if let Ok(s) = &other {
                    let _ = shoots.delete(&s.metadata.name.clone().unwrap(), &DeleteParams::default()).await;
                }
                Err(format!("{other:?}"))
            }
        }
    })
    .await;
    for want in [
        "admission webhook \"shoots.validate.admission.gardener.cloud\" denied the request",
        "spec.kubernetes.version: Unsupported value: \"1.18.0\": supported values: \"1.21.0\", \"1.20.2\"",
        "spec.provider.workers[0].maximum: Forbidden: maximum value must not be less than minimum value",
        "spec.provider.workers[0].machine.type: Unsupported value: \"huge\"",
        "spec.networking.nodes: Invalid value: \"100.96.0.0/16\": must not overlap with spec.networking.pods (100.96.0.0/11)",
    ] {
        assert!(message.contains(want), "missing {want:?} in {message}");
    }

    // Expired version on create.
    let mut expired = fixtures::shoot();
    expired.metadata.name = Some("expired".into());
    expired.spec.kubernetes.version = "1.19.7".into();
    let message = refusal(shoots.create(&PostParams::default(), &expired).await, "expired version");
    assert!(message.contains("spec.kubernetes.version: Unsupported value: \"1.19.7\""), "{message}");

    // Valid with a partial version: created and defaulted.
    let mut good = fixtures::shoot();
    good.spec.kubernetes.version = "1.20".into();
    shoots.create(&PostParams::default(), &good).await.unwrap();
    let stored = shoots.get("demo").await.unwrap();
    let spec = &stored.spec;
    assert_eq!(spec.kubernetes.version, "1.20.2");
    assert_eq!(spec.purpose, Some(ShootPurpose::Evaluation));
    let n = spec.networking.as_ref().unwrap();
    assert_eq!(
        (n.pods.as_deref(), n.services.as_deref(), n.nodes.as_deref()),
        (Some("100.96.0.0/11"), Some("100.64.0.0/13"), Some("10.250.0.0/16"))
    );
    assert_eq!(spec.kubernetes.kube_proxy.as_ref().unwrap().mode, Some(ProxyMode::IPTables));
    let window = spec.maintenance.as_ref().unwrap().time_window.as_ref().unwrap();
    assert_eq!(*window, admission::shoot::defaults::maintenance_window("garden-dev/demo"));
    let image = spec.provider.workers[0].machine.image.as_ref().unwrap();
    assert_eq!((image.name.as_str(), image.version.as_deref()), ("local", Some("1.0.0")));

    // Immutable fields.
    for (patch, want) in [
        (json!({"spec": {"region": "other"}}), "spec.region: Invalid value: \"other\": field is immutable"),
        (
            json!({"spec": {"networking": {"pods": "10.96.0.0/11"}}}),
            "spec.networking.pods: Invalid value: \"10.96.0.0/11\": field is immutable",
        ),
        (
            json!({"spec": {"provider": {"type": "aws"}}}),
            "spec.provider.type: Invalid value: \"aws\": field is immutable",
        ),
        (
            json!({"spec": {"kubernetes": {"version": "1.19.7"}}}),
            "spec.kubernetes.version: Forbidden: kubernetes version downgrade",
        ),
    ] {
        let message =
            refusal(shoots.patch("demo", &PatchParams::default(), &Patch::Merge(&patch)).await, &patch.to_string());
        assert!(message.contains(want), "{patch}: {message}");
    }
    // A mutable field changes fine.
    shoots
        .patch("demo", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"provider": {"workers": [{"name": "pool", "minimum": 2, "maximum": 3, "machine": {"type": "large"}}]}}})))
        .await
        .unwrap();

    // spec.seedName: a user may not set it; the scheduler (here: an admin) may.
    grant_all(&client, "alice").await;
    let alice = Api::<Shoot>::namespaced(impersonating(&env, "alice", &["system:authenticated"]).await, NS);
    let seed = json!({"spec": {"seedName": "seed-a"}});
    let message =
        refusal(alice.patch("demo", &PatchParams::default(), &Patch::Merge(&seed)).await, "user sets seedName");
    assert!(message.contains("spec.seedName: Forbidden: user \"alice\" may not set spec.seedName"), "{message}");
    let scheduled = shoots.patch("demo", &PatchParams::default(), &Patch::Merge(&seed)).await.unwrap();
    assert_eq!(scheduled.spec.seed_name.as_deref(), Some("seed-a"));
    // Scheduling labels the shoot for its seed's gardenlet, and only for that seed.
    let seed_labels: Vec<_> = scheduled.labels().keys().filter(|k| k.starts_with("name.seed.")).cloned().collect();
    assert_eq!(seed_labels, ["name.seed.gardener.cloud/seed-a"], "{:?}", scheduled.labels());
    assert_eq!(scheduled.labels()["name.seed.gardener.cloud/seed-a"], "true");
    // A label naming another seed is taken away by the next update.
    let stray = json!({"metadata": {"labels": {"name.seed.gardener.cloud/seed-b": "true"}}});
    let updated = shoots.patch("demo", &PatchParams::default(), &Patch::Merge(&stray)).await.unwrap();
    assert!(!updated.labels().contains_key("name.seed.gardener.cloud/seed-b"), "{:?}", updated.labels());

    // Deletion needs the confirmation annotation.
    let message = refusal(shoots.delete("demo", &DeleteParams::default()).await, "unconfirmed delete");
    assert!(message.contains("metadata.annotations[confirmation.gardener.cloud/deletion]: Forbidden"), "{message}");
    let confirm = json!({"metadata": {"annotations": {"confirmation.gardener.cloud/deletion": "true"}}});
    shoots.patch("demo", &PatchParams::default(), &Patch::Merge(&confirm)).await.unwrap();
    shoots.delete("demo", &DeleteParams::default()).await.unwrap();
    eventually("the shoot to be gone", || async {
        match shoots.get_opt("demo").await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // The server counted what it did.
    let count = |allowed: &str| webhook.metrics.requests.with_label_values(&["validate", "shoots", allowed]).get();
    assert!(count("false") >= 8 && count("true") >= 4, "refused {} allowed {}", count("false"), count("true"));
}
