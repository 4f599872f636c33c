#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use super::*;
use serde_json::json;

fn beta(value: Value) -> Value {
    let mut object = json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerDeployment"});
    object.as_object_mut().unwrap().extend(value.as_object().unwrap().clone());
    object
}

fn v1(value: Value) -> Value {
    let mut object = json!({"apiVersion": "core.gardener.cloud/v1", "kind": "ControllerDeployment"});
    object.as_object_mut().unwrap().extend(value.as_object().unwrap().clone());
    object
}

fn to(object: &Value, version: &str) -> Value {
    convert(object.clone(), &format!("core.gardener.cloud/{version}")).unwrap()
}

#[test]
fn helm_deployment_converts_field_by_field() {
    let b = beta(json!({
        "metadata": {"name": "provider-local", "labels": {"a": "b"}, "resourceVersion": "7", "uid": "u-1"},
        "type": "helm",
        "providerConfig": {
            "chart": "H4sIAAAAAAAA",
            "values": {"image": {"tag": "v1"}, "replicas": 2},
            "ociRepository": {"repository": "registry/charts/x", "tag": "1.0.0", "digest": "sha256:ab",
                              "ref": "registry/charts/x:1.0.0", "pullSecretRef": {"name": "pull"}}
        },
        "injectGardenKubeconfig": true
    }));
    let expected_v1 = v1(json!({
        "metadata": {"name": "provider-local", "labels": {"a": "b"}, "resourceVersion": "7", "uid": "u-1"},
        "helm": {
            "rawChart": "H4sIAAAAAAAA",
            "values": {"image": {"tag": "v1"}, "replicas": 2},
            "ociRepository": {"repository": "registry/charts/x", "tag": "1.0.0", "digest": "sha256:ab",
                              "ref": "registry/charts/x:1.0.0", "pullSecretRef": {"name": "pull"}}
        },
        "injectGardenKubeconfig": true
    }));
    assert_eq!(to(&b, "v1"), expected_v1);
    assert_eq!(to(&expected_v1, "v1beta1"), b);
}

#[test]
fn custom_type_travels_in_annotations() {
    let b = beta(json!({
        "metadata": {"name": "local", "annotations": {"keep": "me"}},
        "type": "manifest",
        "providerConfig": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}
    }));
    let converted = to(&b, "v1");
    assert_eq!(converted["metadata"]["annotations"]["keep"], "me");
    assert_eq!(converted["metadata"]["annotations"][ANNOTATION_TYPE], "manifest");
    let config: Value =
        serde_json::from_str(converted["metadata"]["annotations"][ANNOTATION_PROVIDER_CONFIG].as_str().unwrap())
            .unwrap();
    assert_eq!(config, b["providerConfig"]);
    assert!(converted.get("helm").is_none());
    assert_eq!(to(&converted, "v1beta1"), b, "the annotations are gone again in v1beta1");
}

#[test]
fn round_trips_keep_every_field_in_both_directions() {
    let betas = [
        beta(json!({"metadata": {"name": "a"}, "type": "helm", "providerConfig": {"chart": "Y2hhcnQ="}})),
        beta(json!({"metadata": {"name": "b"}, "type": "helm",
                    "providerConfig": {"values": {"x": [1, 2, {"y": null}]}}})),
        beta(json!({"metadata": {"name": "c"}, "type": "custom"})),
        beta(json!({"metadata": {"name": "d"}, "type": "custom", "providerConfig": {"nested": {"k": "v"}},
                    "injectGardenKubeconfig": false})),
        beta(json!({"metadata": {"name": "e"}, "type": "helm", "providerConfig": {}})),
    ];
    for b in &betas {
        assert_eq!(&to(&to(b, "v1"), "v1beta1"), b, "v1beta1 → v1 → v1beta1 of {b}");
    }
    let v1s = [
        v1(json!({"metadata": {"name": "a"}, "helm": {"rawChart": "Y2hhcnQ="}})),
        v1(
            json!({"metadata": {"name": "b"}, "helm": {"ociRepository": {"ref": "r/c:1"}}, "injectGardenKubeconfig": true}),
        ),
        v1(json!({"metadata": {"name": "c", "annotations": {ANNOTATION_TYPE: "custom",
                  ANNOTATION_PROVIDER_CONFIG: "{\"k\":\"v\"}"}}})),
        v1(json!({"metadata": {"name": "d", "annotations": {"other": "x", ANNOTATION_TYPE: "custom"}}})),
        v1(json!({"metadata": {"name": "e"}, "helm": {}})),
    ];
    for v in &v1s {
        assert_eq!(&to(&to(v, "v1beta1"), "v1"), v, "v1 → v1beta1 → v1 of {v}");
    }
}

#[test]
fn same_version_is_returned_untouched() {
    let b = beta(json!({"metadata": {"name": "a"}, "type": "helm", "unknown": 1}));
    assert_eq!(to(&b, "v1beta1"), b);
}

#[test]
fn helm_wins_over_stale_custom_annotations() {
    let v = v1(json!({"metadata": {"name": "a", "annotations": {ANNOTATION_TYPE: "custom"}},
                      "helm": {"rawChart": "eA=="}}));
    let b = to(&v, "v1beta1");
    assert_eq!(b["type"], "helm");
    assert_eq!(b["providerConfig"], json!({"chart": "eA=="}));
    assert!(b["metadata"].get("annotations").is_none());
}

#[test]
fn errors_name_the_object_and_what_is_wrong() {
    let bad_chart = beta(json!({"metadata": {"name": "bad"}, "type": "helm", "providerConfig": {"chart": 42}}));
    let e = convert(bad_chart, "core.gardener.cloud/v1").unwrap_err();
    assert!(matches!(&e, ConversionError::HelmProviderConfig { name, .. } if name == "bad"), "{e}");

    let bad_annotation = v1(json!({"metadata": {"name": "bad2", "annotations": {ANNOTATION_PROVIDER_CONFIG: "{"}}}));
    let e = convert(bad_annotation, "core.gardener.cloud/v1beta1").unwrap_err();
    assert!(e.to_string().contains("bad2") && e.to_string().contains(ANNOTATION_PROVIDER_CONFIG), "{e}");

    let e = convert(json!({"apiVersion": "v1", "kind": "Secret"}), "core.gardener.cloud/v1").unwrap_err();
    assert_eq!(e, ConversionError::UnsupportedKind { kind: "Secret".into() });
    let e = convert(json!({"kind": "ControllerDeployment"}), "core.gardener.cloud/v1").unwrap_err();
    assert_eq!(e, ConversionError::NoType);
    let e = convert(beta(json!({"metadata": {"name": "a"}, "type": "helm"})), "core.gardener.cloud/v2").unwrap_err();
    assert!(matches!(e, ConversionError::UnsupportedVersion { .. }));
}

#[test]
fn crd_serves_both_versions_stores_v1beta1_and_converts_by_webhook() {
    let crd = super::super::controller_deployment_crd();
    let versions: Vec<_> = crd.spec.versions.iter().map(|v| (v.name.as_str(), v.served, v.storage)).collect();
    assert_eq!(versions, [("v1beta1", true, true), ("v1", true, false)]);
    let conversion = crd.spec.conversion.unwrap();
    assert_eq!(conversion.strategy, "Webhook");
    let webhook = conversion.webhook.unwrap();
    assert_eq!(webhook.conversion_review_versions, ["v1"]);
    let service = webhook.client_config.unwrap().service.unwrap();
    assert_eq!(service.path.as_deref(), Some(super::super::CONVERSION_PATH));
}
