//! ControlPlane against two real kube-apiservers: the seed (provider-local acts as its chart's
//! ServiceAccount) and a second one standing in for the shoot, reached through the admin
//! kubeconfig Secret gardenlet keeps in the shoot's seed namespace. A reconcile puts the default
//! StorageClass (replacing one of another provisioner), the provisioner's RBAC and its DaemonSet
//! into the shoot; a second reconcile writes nothing; drift is repaired. The provisioner's
//! ServiceAccount can do what the provisioner does (the provisioner itself runs as it and
//! provisions a claim placed on its node, but not one placed elsewhere) and is refused anything
//! else. A shoot whose API server does not answer is a retryable error.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::api::common::ErrorCode;
use extension_sdk::api::extensions::{ControlPlane, ControlPlaneSpec};
use extension_sdk::k8s_openapi::api::apps::v1::DaemonSet;
use extension_sdk::k8s_openapi::api::core::v1::{
    Namespace, PersistentVolume, PersistentVolumeClaim, Secret, ServiceAccount,
};
use extension_sdk::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use extension_sdk::k8s_openapi::api::storage::v1::StorageClass;
use extension_sdk::kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use extension_sdk::kube::{Api, Client, ResourceExt};
use extension_sdk::testing::{TestCluster, testenv};
use extension_sdk::{Actuator, ClusterContext};
use hostpath_provisioner::{SELECTED_NODE_ANNOTATION, STORAGE_PROVISIONER_ANNOTATION, volume_node};
use provider_local::LocalControlPlane;
use provider_local::controlplane::manifests::{NAME, NAMESPACE};
use provider_local::volume_provisioner::{PROVISIONER, STORAGE_CLASS};
use serde_json::json;
use std::time::Duration;
use support::*;

const IMAGE: &str = "gardener-rs.local/gardener-extension-provider-local:v0.1.0";

fn control_plane() -> ControlPlane {
    let mut cp = ControlPlane::new(
        "cp",
        ControlPlaneSpec {
            default: default_spec("local"),
            purpose: None,
            infrastructure_provider_status: None,
            region: "local".into(),
            secret_ref: cloudprovider(),
        },
    );
    cp.metadata.namespace = Some(NS.into());
    cp
}

/// The Cluster of `NS` with one worker pool.
fn with_workers() -> ClusterContext {
    let mut cluster = cluster(false).raw().unwrap().clone();
    cluster.spec.shoot.0["spec"]["provider"]["workers"] = json!([{"name": "a", "minimum": 1, "maximum": 1}]);
    ClusterContext::new(cluster)
}

/// The shoot's seed namespace with the admin kubeconfig Secret, as gardenlet keeps it.
async fn kubeconfig_secret(seed: &Client, kubeconfig: &extension_sdk::kube::config::Kubeconfig) {
    let namespaces: Api<Namespace> = Api::all(seed.clone());
    if namespaces.get_opt(NS).await.unwrap().is_none() {
        namespaces
            .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap())
            .await
            .unwrap();
    }
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "kubeconfig-admin", "namespace": NS},
        "stringData": {"kubeconfig": serde_yaml::to_string(kubeconfig).unwrap()}
    }))
    .unwrap();
    Api::<Secret>::namespaced(seed.clone(), NS).create(&PostParams::default(), &secret).await.unwrap();
}

/// resourceVersions of the five objects in the shoot.
async fn versions(shoot: &Client) -> Vec<String> {
    let rv = |m: &extension_sdk::kube::api::ObjectMeta| m.resource_version.clone().unwrap();
    vec![
        rv(&Api::<StorageClass>::all(shoot.clone()).get(STORAGE_CLASS).await.unwrap().metadata),
        rv(&Api::<ServiceAccount>::namespaced(shoot.clone(), NAMESPACE).get(NAME).await.unwrap().metadata),
        rv(&Api::<ClusterRole>::all(shoot.clone()).get(NAME).await.unwrap().metadata),
        rv(&Api::<ClusterRoleBinding>::all(shoot.clone()).get(NAME).await.unwrap().metadata),
        rv(&Api::<DaemonSet>::namespaced(shoot.clone(), NAMESPACE).get(NAME).await.unwrap().metadata),
    ]
}

/// Polls `probe` every 100 ms until it returns `Some`, for at most 30 s.
async fn eventually<T, Fut: std::future::Future<Output = Option<T>>>(what: &str, probe: impl FnMut() -> Fut) -> T {
    testenv::poll::until_some(what, Duration::from_secs(30), Duration::from_millis(100), probe).await
}

fn is_forbidden<T: std::fmt::Debug>(r: Result<T, extension_sdk::kube::Error>) -> bool {
    matches!(r, Err(extension_sdk::kube::Error::Api(ref s)) if s.code == 403)
}

#[tokio::test]
async fn deploys_the_storage_class_and_volume_provisioner_into_the_shoot_and_writes_only_differences() {
    bounded(async {
        let tc = TestCluster::start().await.unwrap();
        let shoot_env = testenv::TestEnv::start().await.unwrap();
        let shoot = shoot_env.client().await.unwrap();
        kubeconfig_secret(&tc.client, shoot_env.kubeconfig()).await;
        // A default class of another provisioner (immutable fields) is replaced.
        let stale: StorageClass = serde_json::from_value(json!({
            "metadata": {"name": STORAGE_CLASS}, "provisioner": "example.com/other"
        }))
        .unwrap();
        Api::<StorageClass>::all(shoot.clone()).create(&PostParams::default(), &stale).await.unwrap();

        let actuator = LocalControlPlane::new(as_provider_local(&tc).await.unwrap(), Some(IMAGE.into()));
        let cp = control_plane();
        let outcome = actuator.reconcile(&cp, &with_workers()).await.unwrap();
        let status = outcome.provider_status.unwrap();
        assert_eq!(status["managedResources"].as_array().map(Vec::len), Some(5), "{status}");
        assert_eq!(status["volumeProvisioner"]["image"], IMAGE);

        let class = Api::<StorageClass>::all(shoot.clone()).get(STORAGE_CLASS).await.unwrap();
        assert_eq!(class.provisioner, PROVISIONER);
        assert_eq!(class.volume_binding_mode.as_deref(), Some("WaitForFirstConsumer"));
        assert_eq!(class.reclaim_policy.as_deref(), Some("Delete"));
        assert_eq!(
            class.annotations().get("storageclass.kubernetes.io/is-default-class").map(String::as_str),
            Some("true")
        );
        let ds = Api::<DaemonSet>::namespaced(shoot.clone(), NAMESPACE).get(NAME).await.unwrap();
        let pod = ds.spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.containers[0].image.as_deref(), Some(IMAGE));
        assert_eq!(pod.service_account_name.as_deref(), Some(NAME));

        // Nothing changed: nothing is written.
        let before = versions(&shoot).await;
        let again = actuator.reconcile(&cp, &with_workers()).await.unwrap();
        assert_eq!(versions(&shoot).await, before, "a reconcile without changes wrote to the shoot");
        assert!(again.description.unwrap().contains("0 of 5 objects written"));

        // Drift is repaired: a deleted ClusterRole comes back, a changed image is set back.
        Api::<ClusterRole>::all(shoot.clone()).delete(NAME, &DeleteParams::default()).await.unwrap();
        let drift =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "provisioner", "image": "elsewhere:1"}]}}}});
        Api::<DaemonSet>::namespaced(shoot.clone(), NAMESPACE)
            .patch(NAME, &PatchParams::default(), &Patch::Strategic(drift))
            .await
            .unwrap();
        let repaired = actuator.reconcile(&cp, &with_workers()).await.unwrap();
        assert!(repaired.description.unwrap().contains("2 of 5 objects written"));
        Api::<ClusterRole>::all(shoot.clone()).get(NAME).await.unwrap();
        let ds = Api::<DaemonSet>::namespaced(shoot.clone(), NAMESPACE).get(NAME).await.unwrap();
        assert_eq!(ds.spec.unwrap().template.spec.unwrap().containers[0].image.as_deref(), Some(IMAGE));

        // The provisioner's ServiceAccount: what it needs, nothing else.
        let sa = shoot_env.client_as_service_account(NAMESPACE, NAME).await.unwrap();
        let volumes: Api<PersistentVolume> = Api::all(sa.clone());
        volumes.list(&ListParams::default()).await.unwrap();
        Api::<PersistentVolumeClaim>::all(sa.clone()).list(&ListParams::default()).await.unwrap();
        assert!(is_forbidden(Api::<Secret>::namespaced(sa.clone(), NAMESPACE).list(&ListParams::default()).await));
        assert!(is_forbidden(Api::<Secret>::namespaced(sa.clone(), "default").get("any").await));
        let claim = |name: &str, node: &str| -> PersistentVolumeClaim {
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "annotations": {
                    STORAGE_PROVISIONER_ANNOTATION: PROVISIONER, SELECTED_NODE_ANNOTATION: node}},
                "spec": {"storageClassName": STORAGE_CLASS, "accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "64Mi"}}}
            }))
            .unwrap()
        };
        let claims_as_sa: Api<PersistentVolumeClaim> = Api::namespaced(sa.clone(), "default");
        assert!(is_forbidden(claims_as_sa.create(&PostParams::default(), &claim("mine", "node-a")).await));
        assert!(is_forbidden(Api::<DaemonSet>::namespaced(sa.clone(), NAMESPACE).get(NAME).await));

        // The provisioner of node-a, as the ServiceAccount: provisions the claim placed on its
        // node only, and deletes the volume once released.
        let dir = tempfile::tempdir().unwrap();
        let provisioner =
            tokio::spawn(provider_local::volume_provisioner::run(sa, "node-a".into(), dir.path().to_path_buf()));
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(shoot.clone(), "default");
        let ours = claims.create(&PostParams::default(), &claim("ours", "node-a")).await.unwrap();
        claims.create(&PostParams::default(), &claim("theirs", "node-b")).await.unwrap();
        let admin_volumes: Api<PersistentVolume> = Api::all(shoot.clone());
        let name = format!("pvc-{}", ours.uid().unwrap());
        let pv = eventually("the volume of the claim on node-a", || async {
            admin_volumes.get_opt(&name).await.ok().flatten()
        })
        .await;
        assert_eq!(volume_node(&pv), Some("node-a"));
        assert!(dir.path().join(&name).is_dir());
        tokio::time::sleep(Duration::from_secs(1)).await;
        let all: Vec<String> =
            admin_volumes.list(&ListParams::default()).await.unwrap().items.iter().map(|v| v.name_any()).collect();
        assert_eq!(all, vec![name.clone()], "the claim on node-b is node-b's to provision");
        admin_volumes
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Released"}})))
            .await
            .unwrap();
        // Deleted: gone, or held by the pv-protection finalizer (no kube-controller-manager here).
        eventually("the released volume is deleted", || async {
            let live = admin_volumes.get_opt(&name).await.ok()?;
            live.is_none_or(|v| v.metadata.deletion_timestamp.is_some()).then_some(())
        })
        .await;
        assert!(!dir.path().join(&name).exists());
        provisioner.abort();
    })
    .await;
}

#[tokio::test]
async fn a_shoot_that_is_not_reachable_is_a_retryable_error_and_nothing_is_done_without_the_image() {
    bounded(async {
        let tc = TestCluster::start().await.unwrap();
        let seed = as_provider_local(&tc).await.unwrap();
        let cp = control_plane();

        // No kubeconfig yet.
        let actuator = LocalControlPlane::new(seed.clone(), Some(IMAGE.into()));
        let e = actuator.reconcile(&cp, &with_workers()).await.unwrap_err();
        assert_eq!(e.codes(), &[ErrorCode::RetryableInfraDependencies], "{}", e.chain());
        assert!(e.chain().contains("kubeconfig-admin"), "{}", e.chain());

        // A kubeconfig whose API server does not answer.
        let mut kubeconfig = tc.env.kubeconfig().clone();
        for c in &mut kubeconfig.clusters {
            if let Some(cluster) = c.cluster.as_mut() {
                cluster.server = Some(format!("https://127.0.0.1:{}", unused_port()));
            }
        }
        kubeconfig_secret(&tc.client, &kubeconfig).await;
        let e = actuator.reconcile(&cp, &with_workers()).await.unwrap_err();
        assert_eq!(e.codes(), &[ErrorCode::RetryableInfraDependencies], "{}", e.chain());
        assert!(e.chain().contains("not reachable"), "{}", e.chain());

        // Without the image, or for a workerless shoot, the shoot is not touched at all.
        let off = LocalControlPlane::new(seed.clone(), None);
        let outcome = off.reconcile(&cp, &with_workers()).await.unwrap();
        assert_eq!(outcome.provider_status.unwrap()["managedResources"], json!([]));
        let outcome = actuator.reconcile(&cp, &cluster(false)).await.unwrap();
        let status = outcome.provider_status.unwrap();
        assert!(status["note"].as_str().unwrap().contains("no workers"), "{status}");
        // Deletion needs nothing from the shoot.
        actuator.delete(&cp, &with_workers()).await.unwrap();
    })
    .await;
}

/// A local port nothing listens on (bound, then released).
fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
