use super::*;
use api::core::ControllerDeploymentFields;
use api::opaque::Opaque;

fn deployment(type_: &str, config: Option<Value>) -> ControllerDeployment {
    let mut d = ControllerDeployment::new(
        "provider-x",
        ControllerDeploymentFields { type_: type_.into(), provider_config: config.map(Opaque), ..Default::default() },
    );
    d.metadata.name = Some("provider-x".into());
    d
}

fn manifests(objects: Value) -> ControllerDeployment {
    deployment("manifest", Some(json!({ "manifests": objects })))
}

fn scope(_: &str, kind: &str) -> Option<bool> {
    match kind {
        "Namespace" | "ClusterRole" | "ClusterRoleBinding" | "PriorityClass" => Some(false),
        "Unserved" => None,
        _ => Some(true),
    }
}

#[test]
fn other_types_and_missing_config_are_refused_with_the_deployment_named() {
    let e = parse(&deployment("helm", Some(json!({"chart": "..."})))).unwrap_err();
    assert!(e.to_string().contains("ControllerDeployment provider-x: type \"helm\""), "{e}");
    let e = parse(&deployment("manifest", None)).unwrap_err();
    assert_eq!(e.to_string(), "ControllerDeployment provider-x: providerConfig: missing");
    let e = parse(&manifests(json!([]))).unwrap_err();
    assert!(e.to_string().contains("no objects"), "{e}");
    let e = parse(&deployment("manifest", Some(json!({"manifests": "yaml text"})))).unwrap_err();
    assert!(e.to_string().starts_with("ControllerDeployment provider-x: providerConfig: "), "{e}");
}

#[test]
fn every_object_needs_api_version_kind_and_a_fixed_name() {
    let cases = [
        (
            json!([{"kind": "ServiceAccount", "metadata": {"name": "a"}}]),
            "providerConfig.manifests[0].apiVersion: required",
        ),
        (
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, {"apiVersion": "v1", "metadata": {"name": "b"}}]),
            "providerConfig.manifests[1].kind: required",
        ),
        (
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}]),
            "providerConfig.manifests[0].metadata.name: required",
        ),
        (
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "generateName": "a-"}}]),
            "providerConfig.manifests[0].metadata.generateName",
        ),
        (
            json!([{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}}, {"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "a"}}]),
            "providerConfig.manifests[1].metadata.name: Deployment a is already manifests[0]",
        ),
    ];
    for (objects, expected) in cases {
        let e = parse(&manifests(objects)).unwrap_err();
        assert!(e.to_string().contains(expected), "{e} should contain {expected}");
    }
}

#[test]
fn prepare_places_labels_binds_and_orders() {
    let parsed = parse(&manifests(json!([
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ctl"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "ctl"},
         "subjects": [{"kind": "ServiceAccount", "name": "ctl"}, {"kind": "User", "name": "someone"}]},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ctl", "labels": {"app": "ctl"}}},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "ctl", "namespace": "wrong"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "elsewhere", "namespace": "kube-system"}},
    ])))
    .unwrap();
    let out = prepare(parsed, "provider-x-seed", scope).unwrap();
    let kinds: Vec<&str> = out.iter().map(|m| m.id.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["Namespace", "ServiceAccount", "PriorityClass", "ConfigMap", "ClusterRoleBinding", "Deployment"]
    );
    for m in &out {
        assert_eq!(m.object["metadata"]["labels"][LABEL_CONTROLLER_INSTALLATION], "provider-x-seed", "{}", m.id);
    }
    let by_kind = |k: &str| out.iter().find(|m| m.id.kind == k).unwrap();
    assert_eq!(by_kind("Namespace").id.name, "extension-provider-x-seed");
    assert_eq!(by_kind("Deployment").object["metadata"]["namespace"], "extension-provider-x-seed");
    assert_eq!(by_kind("ServiceAccount").object["metadata"]["labels"]["app"], "ctl", "own labels are kept");
    assert_eq!(by_kind("ConfigMap").id.namespace.as_deref(), Some("kube-system"), "a named namespace is kept");
    assert!(by_kind("PriorityClass").object["metadata"].get("namespace").is_none());
    let subjects = &by_kind("ClusterRoleBinding").object["subjects"];
    assert_eq!(subjects[0]["namespace"], "extension-provider-x-seed");
    assert!(subjects[1].get("namespace").is_none(), "only ServiceAccounts live in namespaces");

    let e = prepare(
        parse(&manifests(json!([{"apiVersion": "x.io/v1", "kind": "Unserved", "metadata": {"name": "a"}}]))).unwrap(),
        "i",
        scope,
    )
    .unwrap_err();
    assert_eq!(e, "Unserved a: the seed does not serve kind Unserved of x.io/v1");
}

#[test]
fn cluster_scoped_only_needs_no_namespace() {
    let parsed = parse(&manifests(
        json!([{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}]),
    ))
    .unwrap();
    let out = prepare(parsed, "i", scope).unwrap();
    assert_eq!(out.len(), 1);
}

#[test]
fn stale_objects_are_deleted_in_reverse_order_and_inventories_round_trip() {
    let id = |api: &str, kind: &str, ns: Option<&str>, name: &str| ObjectId {
        api_version: api.into(),
        kind: kind.into(),
        namespace: ns.map(Into::into),
        name: name.into(),
    };
    let previous = vec![
        id("v1", "Namespace", None, "extension-i"),
        id("v1", "ConfigMap", Some("extension-i"), "old"),
        id("apps/v1", "Deployment", Some("extension-i"), "ctl"),
        id("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", None, "ctl"),
    ];
    let current =
        vec![id("v1", "Namespace", None, "extension-i"), id("apps/v1", "Deployment", Some("extension-i"), "ctl")];
    let gone = stale(&previous, &current);
    assert_eq!(gone.iter().map(|i| i.kind.as_str()).collect::<Vec<_>>(), ["ClusterRoleBinding", "ConfigMap"]);
    let all = deletion_order(&previous);
    assert_eq!(all.first().unwrap().kind, "Deployment");
    assert_eq!(all.last().unwrap().kind, "Namespace");
    assert_eq!(inventory(Some(&provider_status(&previous))), previous);
    assert!(inventory(None).is_empty());
    assert!(inventory(Some(&json!({"inventory": "garbage"}))).is_empty());
}

#[test]
fn the_installation_namespace_gets_the_pod_security_level_asked_for() {
    let parsed = parse(&manifests(json!([
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
    ])))
    .unwrap();
    let mut out = prepare(parsed, "provider-x-seed", scope).unwrap();
    let labels = |out: &[Manifest], name: &str| {
        out.iter().find(|m| m.id.kind == "Namespace" && m.id.name == name).unwrap().object["metadata"]["labels"].clone()
    };
    set_pod_security(&mut out, "provider-x-seed", None);
    assert!(labels(&out, "extension-provider-x-seed").get(LABEL_POD_SECURITY_ENFORCE).is_none());
    set_pod_security(&mut out, "provider-x-seed", Some("privileged"));
    assert_eq!(labels(&out, "extension-provider-x-seed")[LABEL_POD_SECURITY_ENFORCE], "privileged");
    // Only the installation's own namespace.
    assert!(labels(&out, "other").get(LABEL_POD_SECURITY_ENFORCE).is_none());
}
