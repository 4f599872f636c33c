//! Quotas against a real kube-apiserver: a Quota of the project (listed by the shoots'
//! SecretBinding) limits the CPU its shoots may use at their maximum size; a shoot within it is
//! admitted, one that would exceed it is refused naming the quota and the numbers, and an update
//! raising a shoot's size beyond it too.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use admission::fixtures;
use api::core::{Quota, SecretBinding, Shoot};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use support::*;

#[tokio::test]
async fn shoots_stay_within_their_project_quota() {
    let (env, client) = garden().await;
    let webhook = start_webhook(&env, &client, |_| {}).await;
    let quota: Quota = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Quota", "metadata": {"name": "team", "namespace": NS},
        "spec": {"scope": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Project"}, "metrics": {"cpu": "3"}}
    }))
    .unwrap();
    Api::<Quota>::namespaced(client.clone(), NS).create(&PostParams::default(), &quota).await.unwrap();
    let binding: SecretBinding = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "SecretBinding", "metadata": {"name": "local", "namespace": NS},
        "provider": {"type": "local"}, "secretRef": {"name": "creds"}, "quotas": [{"name": "team"}]
    }))
    .unwrap();
    Api::<SecretBinding>::namespaced(client.clone(), NS).create(&PostParams::default(), &binding).await.unwrap();
    let shoots = Api::<Shoot>::namespaced(client.clone(), NS);

    // The fixture's pool: at most 2 machines of 1 CPU.
    let mut first = fixtures::shoot();
    first.metadata.name = Some("first".into());
    let first = eventually("the first shoot within the quota", || async {
        shoots.create(&PostParams::default(), &first).await.map_err(|e| e.to_string())
    })
    .await;
    let mut second = fixtures::shoot();
    second.metadata.name = Some("second".into());
    // A dry run (the webhooks judge it like a create, nothing is stored) until the webhook's
    // caches hold the binding and the quota.
    let dry_run = PostParams { dry_run: true, ..Default::default() };
    let message = eventually("the second shoot refused by the quota", || async {
        match shoots.create(&dry_run, &second).await {
            Err(kube::Error::Api(s)) if s.message.contains("quota") => Ok(s.message),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(
        message.contains(
            "spec.provider.workers: Forbidden: quota garden-dev/team allows cpu 3; the shoots in its scope would use 4 (this shoot 2)"
        ),
        "{message}"
    );
    // Growing the first shoot beyond the quota is refused as well; shrinking is fine.
    let grow = json!({"spec": {"provider": {"workers": [{"name": "pool", "minimum": 1, "maximum": 4,
        "machine": {"type": "local"}, "zones": ["0"]}]}}});
    let refused = shoots.patch("first", &PatchParams::default(), &Patch::Merge(&grow)).await;
    assert!(matches!(&refused, Err(kube::Error::Api(s)) if s.message.contains("allows cpu 3")), "{refused:?}");
    assert_eq!(
        shoots.get("first").await.unwrap().spec.provider.workers[0].maximum,
        first.spec.provider.workers[0].maximum
    );
    drop(webhook);
}
