//! The ControllerDeployment that `registration` prints and the Helm chart install the same
//! provider-local: the chart is installed by Helm into a real API server with its defaults, and
//! its ClusterRole and Role rules, and its Deployment's container (command, arguments,
//! environment, ports, probes, resources, security) are what the registration carries.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use extension_sdk::k8s_openapi::api::apps::v1::Deployment;
use extension_sdk::k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use extension_sdk::kube::Api;
use extension_sdk::testing::{TestCluster, testenv};
use provider_local::registration::{self, Options};
use serde_json::{Value, json};

#[tokio::test]
async fn registration_and_chart_install_the_same_controller() {
    let tc = TestCluster::start().await.unwrap();
    let chart = testenv::helm::chart("gardener/provider-local");
    testenv::helm::install(
        &tc.env,
        "gardener-extension-provider-local",
        &chart,
        "garden",
        &json!({"machineImage": "gardener-rs.local/machine:v1.20.2"}),
        false,
    )
    .await
    .unwrap();
    let client = tc.env.client().await.unwrap();
    let options = Options {
        image: "gardener-rs.local/gardener-extension-provider-local:v0.1.0".into(),
        replicas: 2,
        policy: "OnDemand".into(),
        machine_image: Some("gardener-rs.local/machine:v1.20.2".into()),
    };
    let objects = registration::objects(&options);
    let ours = |kind: &str| objects.iter().find(|o| o["kind"] == kind).unwrap().clone();
    let name = "gardener.cloud:extension:provider-local";

    let chart_rules =
        serde_json::to_value(Api::<ClusterRole>::all(client.clone()).get(name).await.unwrap().rules).unwrap();
    assert_eq!(chart_rules, ours("ClusterRole")["rules"], "ClusterRole rules");
    let chart_rules =
        serde_json::to_value(Api::<Role>::namespaced(client.clone(), "garden").get(name).await.unwrap().rules).unwrap();
    assert_eq!(chart_rules, ours("Role")["rules"], "Role rules");

    let chart =
        Api::<Deployment>::namespaced(client.clone(), "garden").get("gardener-extension-provider-local").await.unwrap();
    let chart = serde_json::to_value(chart).unwrap();
    let ours = ours("Deployment");
    assert_eq!(chart["spec"]["replicas"], ours["spec"]["replicas"]);
    let pod = |d: &Value| d["spec"]["template"]["spec"].clone();
    for field in ["serviceAccountName", "securityContext", "terminationGracePeriodSeconds", "volumes"] {
        assert_eq!(pod(&chart)[field], pod(&ours)[field], "pod {field}");
    }
    let (theirs, mine) = (&pod(&chart)["containers"][0], &pod(&ours)["containers"][0]);
    for field in
        ["name", "command", "args", "env", "ports", "resources", "securityContext", "volumeMounts", "imagePullPolicy"]
    {
        assert_eq!(theirs[field], mine[field], "container {field}");
    }
    // The API server defaults probe fields the chart leaves out; compare what both set.
    for probe in ["livenessProbe", "readinessProbe"] {
        for (key, value) in mine[probe].as_object().unwrap() {
            assert_eq!(&theirs[probe][key], value, "{probe}.{key}");
        }
    }
    assert_eq!(
        theirs["image"].as_str().unwrap().rsplit_once(':').unwrap().0,
        mine["image"].as_str().unwrap().rsplit_once(':').unwrap().0
    );
}
