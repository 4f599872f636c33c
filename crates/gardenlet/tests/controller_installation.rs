//! The ControllerInstallation controller against a real kube-apiserver and
//! kube-controller-manager, acting as the gardenlet chart's ServiceAccount: a `manifest`
//! ControllerDeployment is installed into the seed, kept in step when it changes (stale objects
//! pruned, the rollout reported), `Required` follows the extension objects, invalid or
//! forbidden deployments are reported without losing what runs, the namespace gets the pod
//! security level the registration asks for, and deleting the installation removes everything.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::ConditionStatus;
use api::core::{ControllerDeployment, ControllerInstallation};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const CONFIG: &str = "seed:\n  name: local\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\n";
const NS: &str = "extension-provider-x-local";

fn manifests(replicas: i32, with_config_map: bool, extra: Option<Value>) -> Value {
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "provider-x"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "extension:provider-x"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "extension:provider-x"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "extension:provider-x"},
               "subjects": [{"kind": "ServiceAccount", "name": "provider-x"}]}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "provider-x"},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "provider-x"}},
                        "template": {"metadata": {"labels": {"app": "provider-x"}},
                                     "spec": {"serviceAccountName": "provider-x",
                                              "containers": [{"name": "x", "image": "registry.k8s.io/pause:3.2"}]}}}}),
    ];
    if with_config_map {
        objects.push(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "b"}}),
        );
    }
    objects.extend(extra);
    Value::Array(objects)
}

async fn apply(client: &Client, object: Value) {
    let kind = object["kind"].as_str().unwrap().to_string();
    let name = object["metadata"]["name"].as_str().unwrap().to_string();
    let resource = match kind.as_str() {
        "ControllerRegistration" => kube::api::ApiResource::erase::<api::core::ControllerRegistration>(&()),
        "ControllerDeployment" => kube::api::ApiResource::erase::<ControllerDeployment>(&()),
        _ => kube::api::ApiResource::erase::<ControllerInstallation>(&()),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    api.patch(&name, &PatchParams::apply("test").force(), &Patch::Apply(&object)).await.unwrap();
}

fn deployment(type_: &str, manifests: Value) -> Value {
    json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerDeployment", "metadata": {"name": "provider-x"},
           "type": type_, "providerConfig": {"manifests": manifests}})
}

fn installation(name: &str, seed: &str) -> Value {
    json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerInstallation",
           "metadata": {"name": name, "labels": {"seed.gardener.cloud/name": seed}},
           "spec": {"registrationRef": {"name": "provider-x"}, "seedRef": {"name": seed}, "deploymentRef": {"name": "provider-x"}}})
}

/// Waits (bounded) until the installation's condition has the status and its message contains
/// `message`; returns the installation.
async fn wait_condition(
    api: &Api<ControllerInstallation>,
    type_: &str,
    status: ConditionStatus,
    message: &str,
) -> ControllerInstallation {
    let mut last = None;
    for _ in 0..300 {
        let i = api.get("provider-x-local").await.unwrap();
        if let Some(c) = i.status.as_ref().and_then(|s| s.condition(type_)) {
            if c.status == status && c.message.contains(message) {
                return i;
            }
            last = Some(c.clone());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("condition {type_} never became {status:?} with {message:?}; last: {last:?}");
}

async fn wait_gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    for _ in 0..300 {
        if api.get_opt(name).await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} is still there");
}

#[tokio::test]
async fn installs_keeps_in_step_reports_and_uninstalls() {
    let env = testenv::TestEnv::start_with(testenv::Options {
        controller_manager: true,
        crds: api::crds::all(),
        ..Default::default()
    })
    .await
    .unwrap();
    let admin = env.client().await.unwrap();
    let gardenlet = support::chart::gardenlet_client(&env, CONFIG).await;

    // It asks for a privileged namespace, as provider-local does (pod security, docs/admission.md).
    apply(&admin, json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerRegistration",
        "metadata": {"name": "provider-x", "annotations": {"security.gardener.cloud/pod-security-enforce": "privileged"}},
        "spec": {"resources": [{"kind": "Infrastructure", "type": "x"}], "deployment": {"deploymentRefs": [{"name": "provider-x"}]}}}))
    .await;
    apply(&admin, deployment("manifest", manifests(0, true, None))).await;
    apply(&admin, installation("provider-x-local", "local")).await;
    apply(&admin, installation("provider-x-other", "other")).await;

    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let ready = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(gardenlet::installation::run(
        gardenlet.clone(),
        gardenlet,
        "local".into(),
        2,
        async move {
            let _ = stop_rx.await;
        },
        ready,
    ));

    // Installed, and healthy: a Deployment of 0 replicas is rolled out as soon as the real
    // kube-controller-manager has observed it.
    let installations: Api<ControllerInstallation> = Api::all(admin.clone());
    wait_condition(&installations, "Installed", ConditionStatus::True, "").await;
    let i = wait_condition(&installations, "Healthy", ConditionStatus::True, "1 workload(s)").await;
    for (type_, status) in [
        ("Valid", ConditionStatus::True),
        ("Progressing", ConditionStatus::False),
        ("Required", ConditionStatus::False),
    ] {
        assert_eq!(i.status.as_ref().unwrap().condition(type_).unwrap().status, status, "{type_}");
    }
    assert!(
        i.metadata.finalizers.as_ref().unwrap().contains(&"core.gardener.cloud/controllerinstallation".to_string())
    );
    let inventory = &i.status.as_ref().unwrap().provider_status.as_ref().unwrap().as_value()["inventory"];
    assert_eq!(inventory.as_array().unwrap().len(), 6, "namespace and five objects: {inventory}");
    let label = |labels: &Option<std::collections::BTreeMap<String, String>>| {
        labels.as_ref().and_then(|l| l.get("controllerinstallation.core.gardener.cloud/name").cloned())
    };
    let ns = Api::<Namespace>::all(admin.clone()).get(NS).await.unwrap();
    assert_eq!(label(&ns.metadata.labels).as_deref(), Some("provider-x-local"));
    let level = ns.metadata.labels.as_ref().and_then(|l| l.get("pod-security.kubernetes.io/enforce"));
    assert_eq!(level.map(String::as_str), Some("privileged"), "the level the registration asks for");
    let sa = Api::<ServiceAccount>::namespaced(admin.clone(), NS).get("provider-x").await.unwrap();
    assert_eq!(label(&sa.metadata.labels).as_deref(), Some("provider-x-local"));
    let binding = Api::<ClusterRoleBinding>::all(admin.clone()).get("extension:provider-x").await.unwrap();
    assert_eq!(binding.subjects.unwrap()[0].namespace.as_deref(), Some(NS));
    let config_maps = Api::<ConfigMap>::namespaced(admin.clone(), NS);
    assert!(config_maps.get_opt("settings").await.unwrap().is_some());
    // The other seed's installation is not this gardenlet's business.
    let other = installations.get("provider-x-other").await.unwrap();
    assert!(other.status.is_none() && other.metadata.finalizers.is_none(), "{other:?}");

    // A new version of the deployment: the ConfigMap is pruned, one replica rolls out (and
    // never becomes available: no node here), which is reported.
    apply(&admin, deployment("manifest", manifests(1, false, None))).await;
    wait_gone(&config_maps, "settings").await;
    let i = wait_condition(&installations, "Healthy", ConditionStatus::False, "0 available").await;
    let progressing = i.status.as_ref().unwrap().condition("Progressing").unwrap();
    assert_eq!(progressing.status, ConditionStatus::True);
    assert!(progressing.message.contains(&format!("Deployment {NS}/provider-x")), "{}", progressing.message);

    // Required follows the extension objects of the kinds and types the registration serves.
    let shoot_ns: Api<Namespace> = Api::all(admin.clone());
    shoot_ns
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "shoot--p--s"}})).unwrap())
        .await
        .unwrap();
    let infra: Api<api::extensions::Infrastructure> = Api::namespaced(admin.clone(), "shoot--p--s");
    let object = json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Infrastructure", "metadata": {"name": "s"},
        "spec": {"type": "x", "region": "r", "secretRef": {"name": "cloudprovider", "namespace": "shoot--p--s"}}});
    infra.create(&PostParams::default(), &serde_json::from_value(object).unwrap()).await.unwrap();
    wait_condition(&installations, "Required", ConditionStatus::True, "Infrastructure shoot--p--s/s").await;
    infra.delete("s", &DeleteParams::default()).await.unwrap();
    wait_condition(&installations, "Required", ConditionStatus::False, "").await;

    // A kind the chart does not let gardenlet deploy: refused, named, and nothing lost.
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "registry.k8s.io/pause:3.2"}]}}}});
    apply(&admin, deployment("manifest", manifests(1, false, Some(job)))).await;
    let i = wait_condition(
        &installations,
        "Installed",
        ConditionStatus::False,
        "applying Job extension-provider-x-local/migrate",
    )
    .await;
    assert!(i.status.as_ref().unwrap().condition("Installed").unwrap().message.contains("forbidden"));
    assert!(Api::<Deployment>::namespaced(admin.clone(), NS).get_opt("provider-x").await.unwrap().is_some());

    // A type gardenlet does not install: not valid, with the field named; what runs stays.
    apply(&admin, deployment("helm", json!([]))).await;
    let i = wait_condition(&installations, "Valid", ConditionStatus::False, "type \"helm\"").await;
    assert_eq!(i.status.as_ref().unwrap().condition("Valid").unwrap().reason, "DeploymentInvalid");
    apply(&admin, deployment("manifest", json!([{"apiVersion": "v1", "metadata": {"name": "x"}}]))).await;
    wait_condition(&installations, "Valid", ConditionStatus::False, "providerConfig.manifests[0].kind: required").await;
    assert!(Api::<ServiceAccount>::namespaced(admin.clone(), NS).get_opt("provider-x").await.unwrap().is_some());

    // Deleting the installation removes everything it deployed, cluster-scoped objects and the
    // namespace included, and only then the installation.
    apply(&admin, deployment("manifest", manifests(0, false, None))).await;
    wait_condition(&installations, "Installed", ConditionStatus::True, "").await;
    installations.delete("provider-x-local", &DeleteParams::default()).await.unwrap();
    wait_gone(&installations, "provider-x-local").await;
    assert!(Api::<ClusterRole>::all(admin.clone()).get_opt("extension:provider-x").await.unwrap().is_none());
    assert!(Api::<ClusterRoleBinding>::all(admin.clone()).get_opt("extension:provider-x").await.unwrap().is_none());
    assert!(Api::<Namespace>::all(admin.clone()).get_opt(NS).await.unwrap().is_none());

    let _ = stop_tx.send(());
    tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
}
