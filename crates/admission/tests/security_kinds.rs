//! CredentialsBindings, WorkloadIdentities, ExposureClasses and InternalSecrets through a real
//! kube-apiserver, as Gardener documents them: invalid ones refused with field paths, immutable
//! fields kept; a shoot on a CredentialsBinding counts against the binding's Quota; a shoot's
//! ExposureClass must exist; an InternalSecret's `stringData` is stored as `data` and an
//! immutable one keeps its data.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use admission::fixtures;
use api::core::{ExposureClass, InternalSecret, Quota, Shoot};
use api::security::{CredentialsBinding, WorkloadIdentity};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::json;
use support::*;

fn from<T: DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).unwrap()
}

fn credentials_binding(name: &str, kind: &str, quota: &str) -> CredentialsBinding {
    let api_version = if kind == "WorkloadIdentity" { "security.gardener.cloud/v1alpha1" } else { "v1" };
    from(json!({
        "apiVersion": "security.gardener.cloud/v1alpha1", "kind": "CredentialsBinding",
        "metadata": {"name": name, "namespace": NS},
        "provider": {"type": "local"},
        "credentialsRef": {"apiVersion": api_version, "kind": kind, "name": "creds", "namespace": NS},
        "quotas": [{"name": quota, "namespace": NS}],
    }))
}

#[tokio::test]
async fn credentials_bindings_and_their_quotas() {
    let (env, client) = garden().await;
    let _webhook = start_webhook(&env, &client, |_| {}).await;
    let bindings = Api::<CredentialsBinding>::namespaced(client.clone(), NS);

    let refused = eventually("a binding to a missing Quota refused", || async {
        match bindings.create(&PostParams::default(), &credentials_binding("local", "Secret", "team")).await {
            Err(kube::Error::Api(s)) if s.message.contains("quotas[0]") => Ok(s.message),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(refused.contains("quotas[0]: Not found: \"team\": no Quota garden-dev/team"), "{refused}");
    let refused = refusal(
        bindings.create(&PostParams::default(), &credentials_binding("cm", "ConfigMap", "team")).await,
        "a binding to a ConfigMap",
    );
    assert!(
        refused.contains(
            "credentialsRef.kind: Unsupported value: \"ConfigMap\": supported values: \"Secret\", \"WorkloadIdentity\""
        ),
        "{refused}"
    );

    let quota: Quota = from(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Quota", "metadata": {"name": "team", "namespace": NS},
        "spec": {"scope": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Project"}, "metrics": {"cpu": "3"}}
    }));
    Api::<Quota>::namespaced(client.clone(), NS).create(&PostParams::default(), &quota).await.unwrap();
    eventually("the binding admitted once the Quota is cached", || async {
        bindings
            .create(&PostParams::default(), &credentials_binding("local", "Secret", "team"))
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let moved = json!({"credentialsRef": {"apiVersion": "v1", "kind": "Secret", "name": "elsewhere", "namespace": NS}});
    let refused =
        refusal(bindings.patch("local", &PatchParams::default(), &Patch::Merge(moved)).await, "credentialsRef changed");
    assert!(refused.contains("credentialsRef: Invalid value") && refused.contains("field is immutable"), "{refused}");

    // The binding's Quota limits its shoots (fixture pool: at most 2 machines of 1 CPU).
    let shoots = Api::<Shoot>::namespaced(client.clone(), NS);
    let on_binding = |name: &str| {
        let mut s = fixtures::shoot();
        s.metadata.name = Some(name.into());
        s.spec.secret_binding_name = None;
        s.spec.credentials_binding_name = Some("local".into());
        s
    };
    shoots.create(&PostParams::default(), &on_binding("first")).await.unwrap();
    let dry_run = PostParams { dry_run: true, ..Default::default() };
    let message = eventually("the second shoot refused by the binding's quota", || async {
        match shoots.create(&dry_run, &on_binding("second")).await {
            Err(kube::Error::Api(s)) if s.message.contains("quota") => Ok(s.message),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(
        message.contains("spec.provider.workers: Forbidden: quota garden-dev/team allows cpu 3; the shoots in its scope would use 4 (this shoot 2)"),
        "{message}"
    );
}

#[tokio::test]
async fn workload_identities_exposure_classes_internal_secrets() {
    let (env, client) = garden().await;
    let _webhook = start_webhook(&env, &client, |_| {}).await;

    // WorkloadIdentity.
    let identities = Api::<WorkloadIdentity>::namespaced(client.clone(), NS);
    let identity = |audiences: serde_json::Value| -> WorkloadIdentity {
        from(json!({
            "apiVersion": "security.gardener.cloud/v1alpha1", "kind": "WorkloadIdentity",
            "metadata": {"name": "banana", "namespace": NS},
            "spec": {"audiences": audiences, "targetSystem": {"type": "local"}},
        }))
    };
    let refused = eventually("an identity without audiences refused", || async {
        match identities.create(&PostParams::default(), &identity(json!([]))).await {
            Err(kube::Error::Api(s)) if s.message.contains("spec.audiences") => Ok(s.message),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(refused.contains("spec.audiences: Required value: must provide at least one audience"), "{refused}");
    identities.create(&PostParams::default(), &identity(json!(["local-cloud"]))).await.unwrap();
    let refused = refusal(
        identities
            .patch("banana", &PatchParams::default(), &Patch::Merge(json!({"spec": {"targetSystem": {"type": "aws"}}})))
            .await,
        "the target system changed",
    );
    assert!(refused.contains("spec.targetSystem.type: Invalid value: \"aws\": field is immutable"), "{refused}");

    // ExposureClass, and a shoot naming one.
    let classes = Api::<ExposureClass>::all(client.clone());
    let class = |handler: &str| -> ExposureClass {
        from(json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "ExposureClass",
            "metadata": {"name": "internet"},
            "handler": handler,
            "scheduling": {"seedSelector": {"matchLabels": {"network": "internet"}}, "tolerations": [{"key": "network"}]},
        }))
    };
    // (An absent handler is refused by the CRD's schema already; its form is the webhook's.)
    let refused = eventually("a class with an invalid handler refused", || async {
        match classes.create(&PostParams::default(), &class("Internet_Config")).await {
            Err(kube::Error::Api(s)) if s.message.contains("handler") => Ok(s.message),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(refused.contains("handler: Invalid value: \"Internet_Config\": a DNS label"), "{refused}");
    let shoots = Api::<Shoot>::namespaced(client.clone(), NS);
    let mut exposed = fixtures::shoot();
    exposed.spec.exposure_class_name = Some("internet".into());
    let refused = refusal(shoots.create(&PostParams::default(), &exposed).await, "a shoot naming a missing class");
    assert!(refused.contains("spec.exposureClassName: Not found: \"internet\""), "{refused}");
    classes.create(&PostParams::default(), &class("internet-config")).await.unwrap();
    let refused = refusal(
        classes.patch("internet", &PatchParams::default(), &Patch::Merge(json!({"handler": "other"}))).await,
        "the handler changed",
    );
    assert!(refused.contains("handler: Invalid value: \"other\": field is immutable"), "{refused}");
    eventually("the shoot admitted once the class is cached", || async {
        shoots.create(&PostParams::default(), &exposed).await.map_err(|e| e.to_string())
    })
    .await;

    // InternalSecret: stringData stored as data; immutable data stays.
    let secrets = Api::<InternalSecret>::namespaced(client.clone(), NS);
    let secret: InternalSecret = from(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "InternalSecret",
        "metadata": {"name": "demo.ca-client", "namespace": NS},
        "type": "Opaque", "immutable": true, "stringData": {"ca.crt": "pem"},
    }));
    let stored = secrets.create(&PostParams::default(), &secret).await.unwrap();
    assert!(stored.spec.string_data.is_empty());
    assert_eq!(stored.spec.data.get("ca.crt").map(String::as_str), Some("cGVt"));
    let refused = refusal(
        secrets
            .patch("demo.ca-client", &PatchParams::default(), &Patch::Merge(json!({"data": {"ca.crt": "b3RoZXI="}})))
            .await,
        "immutable data changed",
    );
    assert!(refused.contains("data: Forbidden: field is immutable when `immutable` is set"), "{refused}");
    secrets
        .patch("demo.ca-client", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})))
        .await
        .unwrap();
}
