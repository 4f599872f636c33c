//! The provisioner against a real kube-apiserver, as one pod of a per-node DaemonSet on node
//! `node-a` with a temporary volumes directory: a claim the scheduler placed on `node-a` gets a
//! volume pinned there and its directory; a claim placed on `node-b` is left alone. Once the
//! volume is released (the PV controller's job, simulated here), the volume and its directory
//! go. There is no kube-controller-manager and no scheduler: the test sets the annotations the
//! PV controller and the scheduler would.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use hostpath_provisioner::{Config, SELECTED_NODE_ANNOTATION, STORAGE_PROVISIONER_ANNOTATION, Topology, volume_node};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use std::time::Duration;

const PROVISIONER: &str = "test.gardener.cloud/host-path";

/// Polls `probe` every 100 ms until it returns `Some`, for at most 30 s.
async fn eventually<T, Fut: std::future::Future<Output = Option<T>>>(what: &str, probe: impl FnMut() -> Fut) -> T {
    testenv::poll::until_some(what, Duration::from_secs(30), Duration::from_millis(100), probe).await
}

async fn claim(client: &Client, name: &str, node: &str) -> PersistentVolumeClaim {
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "annotations": {
            STORAGE_PROVISIONER_ANNOTATION: PROVISIONER, SELECTED_NODE_ANNOTATION: node}},
        "spec": {"storageClassName": "default", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "64Mi"}}}
    }))
    .unwrap();
    Api::namespaced(client.clone(), "default").create(&PostParams::default(), &claim).await.unwrap()
}

#[tokio::test]
async fn provisions_claims_of_its_node_and_removes_released_volumes_with_their_directory() {
    let env = testenv::TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    // The default namespace exists once the API server's bootstrap controller made it.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    eventually("the default namespace", || async { namespaces.get_opt("default").await.ok().flatten() }).await;
    let dir = tempfile::tempdir().unwrap();
    let volumes_dir = dir.path().join("volumes");
    let config = Config {
        provisioner: PROVISIONER.into(),
        storage_class: "default".into(),
        volumes_dir: volumes_dir.clone(),
        node_name: "node-a".into(),
        topology: Topology::PerNode,
    };
    let provisioner = tokio::spawn(hostpath_provisioner::run(client.clone(), config));

    let ours = claim(&client, "ours", "node-a").await;
    let theirs = claim(&client, "theirs", "node-b").await;
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let name = format!("pvc-{}", ours.uid().unwrap());
    let pv =
        eventually("the volume of the claim on node-a", || async { volumes.get_opt(&name).await.ok().flatten() }).await;
    assert_eq!(volume_node(&pv), Some("node-a"));
    let spec = pv.spec.as_ref().unwrap();
    assert_eq!(spec.storage_class_name.as_deref(), Some("default"));
    assert_eq!(spec.claim_ref.as_ref().and_then(|c| c.uid.clone()), ours.uid());
    let path = volumes_dir.join(&name);
    assert_eq!(spec.host_path.as_ref().map(|h| h.path.clone()), Some(path.display().to_string()));
    assert!(path.is_dir(), "the volume's directory was created");

    // The claim on node-b stays without a volume (its node's pod would make it).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let all = volumes.list(&ListParams::default()).await.unwrap();
    assert_eq!(all.items.iter().map(|v| v.name_any()).collect::<Vec<_>>(), vec![name.clone()]);
    assert!(!volumes_dir.join(format!("pvc-{}", theirs.uid().unwrap())).exists());

    // Released (the PV controller's doing once the claim is deleted): volume and directory go.
    std::fs::write(path.join("data"), "kept while the claim lives").unwrap();
    volumes
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Released"}})))
        .await
        .unwrap();
    // Deleted: gone, or held only by the `kubernetes.io/pv-protection` finalizer, which
    // kube-controller-manager (not running here) removes.
    eventually("the released volume is deleted", || async {
        let live = volumes.get_opt(&name).await.ok()?;
        live.is_none_or(|v| v.metadata.deletion_timestamp.is_some()).then_some(())
    })
    .await;
    assert!(!path.exists(), "the volume's directory is gone");
    assert!(volumes_dir.is_dir(), "the volumes directory stays");
    provisioner.abort();
}
