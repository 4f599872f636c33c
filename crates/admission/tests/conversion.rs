//! The ControllerDeployment conversion webhook on a real API server: the webhook server (as its
//! ServiceAccount, with only its documented permissions) points the CRD's conversion at itself,
//! and objects written in one version read back in the other with every field, both ways.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::v1::{ANNOTATION_PROVIDER_CONFIG, ANNOTATION_TYPE};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use support::*;

fn api_of(client: &Client, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("core.gardener.cloud", version, "ControllerDeployment");
    Api::all_with(client.clone(), &ApiResource::from_gvk_with_plural(&gvk, "controllerdeployments"))
}

async fn create(client: &Client, version: &str, object: Value) {
    let object: DynamicObject = serde_json::from_value(object).unwrap();
    api_of(client, version).create(&PostParams::default(), &object).await.unwrap();
}

async fn read(client: &Client, version: &str, name: &str) -> Value {
    serde_json::to_value(api_of(client, version).get(name).await.unwrap()).unwrap()
}

#[tokio::test]
async fn controller_deployments_read_back_in_either_version_with_every_field() {
    let (env, admin) = garden().await;
    let _webhook = start_webhook(&env, &admin, |_| {}).await;

    let crd = Api::<CustomResourceDefinition>::all(admin.clone())
        .get("controllerdeployments.core.gardener.cloud")
        .await
        .unwrap();
    let webhook = crd.spec.conversion.unwrap().webhook.unwrap();
    let client_config = webhook.client_config.unwrap();
    assert!(client_config.url.unwrap().ends_with("/convert"));
    assert!(client_config.service.is_none(), "the chart's Service reference is replaced by the server's address");
    assert!(client_config.ca_bundle.is_some());

    // v1beta1 Helm deployment → v1.
    let values = json!({"image": {"repository": "r/x", "tag": "v1"}, "list": [1, "two", {"three": null}]});
    create(
        &admin,
        "v1beta1",
        json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerDeployment",
            "metadata": {"name": "helm-beta", "labels": {"team": "a"}},
            "type": "helm",
            "providerConfig": {"chart": "H4sIAAAA", "values": values,
                               "ociRepository": {"repository": "r/charts/x", "tag": "1.2.3"}},
            "injectGardenKubeconfig": true
        }),
    )
    .await;
    let v1 = eventually("v1 read of a v1beta1 object", || async {
        match api_of(&admin, "v1").get("helm-beta").await {
            Ok(o) => Ok(serde_json::to_value(o).unwrap()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    assert_eq!(v1["apiVersion"], "core.gardener.cloud/v1");
    assert_eq!(v1["metadata"]["labels"]["team"], "a");
    assert_eq!(
        v1["helm"],
        json!({"rawChart": "H4sIAAAA", "values": values,
               "ociRepository": {"repository": "r/charts/x", "tag": "1.2.3"}})
    );
    assert_eq!(v1["injectGardenKubeconfig"], true);

    // v1 Helm deployment → v1beta1 and back.
    create(
        &admin,
        "v1",
        json!({
            "apiVersion": "core.gardener.cloud/v1", "kind": "ControllerDeployment",
            "metadata": {"name": "helm-v1"},
            "helm": {"ociRepository": {"ref": "r/charts/y:2.0.0", "pullSecretRef": {"name": "pull"}},
                     "values": {"replicas": 2}}
        }),
    )
    .await;
    let beta = read(&admin, "v1beta1", "helm-v1").await;
    assert_eq!(beta["type"], "helm");
    assert_eq!(
        beta["providerConfig"],
        json!({"ociRepository": {"ref": "r/charts/y:2.0.0", "pullSecretRef": {"name": "pull"}},
               "values": {"replicas": 2}})
    );
    let again = read(&admin, "v1", "helm-v1").await;
    assert_eq!(again["helm"]["ociRepository"]["ref"], "r/charts/y:2.0.0");
    assert_eq!(again["helm"]["values"], json!({"replicas": 2}));

    // A custom type (gardenlet's `manifest`) written in v1beta1: annotations in v1, none stored.
    let config = json!({"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]});
    create(
        &admin,
        "v1beta1",
        json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerDeployment",
               "metadata": {"name": "manifest"}, "type": "manifest", "providerConfig": config}),
    )
    .await;
    let v1 = read(&admin, "v1", "manifest").await;
    assert_eq!(v1["metadata"]["annotations"][ANNOTATION_TYPE], "manifest");
    let carried: Value =
        serde_json::from_str(v1["metadata"]["annotations"][ANNOTATION_PROVIDER_CONFIG].as_str().unwrap()).unwrap();
    assert_eq!(carried, config);
    assert!(v1.get("helm").is_none());
    let beta = read(&admin, "v1beta1", "manifest").await;
    assert!(beta["metadata"].get("annotations").is_none(), "{beta}");
    assert_eq!(beta["providerConfig"], config);

    // The same custom type written in v1 (as Gardener's docs show) is stored as v1beta1 fields.
    create(
        &admin,
        "v1",
        json!({"apiVersion": "core.gardener.cloud/v1", "kind": "ControllerDeployment",
               "metadata": {"name": "custom-v1", "annotations": {
                   ANNOTATION_TYPE: "custom", ANNOTATION_PROVIDER_CONFIG: "{\"k\":\"v\"}"}}}),
    )
    .await;
    let beta = read(&admin, "v1beta1", "custom-v1").await;
    assert_eq!((beta["type"].clone(), beta["providerConfig"].clone()), (json!("custom"), json!({"k": "v"})));

    // Lists in the other version convert every item.
    let names: Vec<_> = api_of(&admin, "v1")
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| o.metadata.name.unwrap())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
}

#[tokio::test]
async fn an_object_that_cannot_be_converted_is_refused_with_its_name() {
    let (env, admin) = garden().await;
    let _webhook = start_webhook(&env, &admin, |_| {}).await;
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1", "kind": "ControllerDeployment",
        "metadata": {"name": "bad", "annotations": {ANNOTATION_PROVIDER_CONFIG: "{not json"}}
    }))
    .unwrap();
    // The API server takes up the CRD's new conversion a moment after the server registered it
    // (under load, after a create was already answered without it): asked again until it
    // refuses, an object created unconverted meanwhile is removed first.
    let api = api_of(&admin, "v1");
    let message = eventually("the conversion webhook refuses the bad annotation", || async {
        match api.create(&PostParams::default(), &object).await {
            Err(kube::Error::Api(s)) if s.message.contains("bad") && s.message.contains(ANNOTATION_PROVIDER_CONFIG) => {
                Ok(s.message)
            }
            Ok(_) => {
                let _ = api.delete("bad", &Default::default()).await;
                Err("created without conversion: the API server does not call the webhook yet".to_string())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(message.contains("bad") && message.contains(ANNOTATION_PROVIDER_CONFIG), "{message}");
}
