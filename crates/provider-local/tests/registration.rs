//! The ControllerDeployment that `registration` prints and the Helm chart install the same
//! provider-local: the chart is installed by Helm into a real API server with its defaults (and
//! a machine image, registry mirror and backup host directory), and its ClusterRole and Role rules, the registry CA's
//! ConfigMap, and its Deployment's container (command, arguments, environment, ports, probes,
//! resources, security) are what the registration carries: the arguments include
//! `--volume-provisioner-image` with the deployment's own image on both sides.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use extension_sdk::k8s_openapi::api::apps::v1::Deployment;
use extension_sdk::k8s_openapi::api::core::v1::ConfigMap;
use extension_sdk::k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use extension_sdk::kube::Api;
use extension_sdk::testing::{TestCluster, testenv};
use provider_local::registration::{self, Options};
use provider_local::registry::RegistryMirror;
use serde_json::{Value, json};

const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

#[tokio::test]
async fn registration_and_chart_install_the_same_controller() {
    let tc = TestCluster::start().await.unwrap();
    let chart = testenv::helm::chart("gardener/provider-local");
    testenv::helm::install(
        &tc.env,
        "gardener-extension-provider-local",
        &chart,
        "garden",
        &json!({"machineImage": "gardener-rs.local/machine:v1.20.2",
                "registryMirror": {"url": "https://10.250.0.1:5000", "ca": CA},
                "backup": {"hostPath": "/srv/backup"}}),
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
        registry_mirror: Some(RegistryMirror::new("https://10.250.0.1:5000", CA).unwrap()),
        backup_host_path: Some("/srv/backup".into()),
        volume_provisioner: true,
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

    // The registry mirror's CA, mounted for --registry-ca-file.
    let ca =
        Api::<ConfigMap>::namespaced(client.clone(), "garden").get(registration::REGISTRY_CA_CONFIGMAP).await.unwrap();
    assert_eq!(serde_json::to_value(ca.data).unwrap(), ours("ConfigMap")["data"], "registry CA ConfigMap");

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
