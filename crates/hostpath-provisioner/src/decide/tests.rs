use super::*;
use k8s_openapi::api::core::v1::PersistentVolumeStatus;

fn claim(yaml: &str) -> PersistentVolumeClaim {
    serde_yaml::from_str(yaml).expect("claim")
}

/// The local cluster's provisioner (as `local-cluster addons` runs it).
fn single() -> Config {
    Config {
        provisioner: "local-cluster.gardener.cloud/host-path".into(),
        storage_class: "local-path".into(),
        volumes_dir: PathBuf::from("/v"),
        node_name: "local-node".into(),
        topology: Topology::SingleNode,
    }
}

/// One pod of a per-node DaemonSet, on `node`.
fn per_node(node: &str) -> Config {
    Config { node_name: node.into(), topology: Topology::PerNode, ..single() }
}

const OURS: &str = "metadata:\n  name: data\n  namespace: ns\n  uid: 1234\n  annotations:\n    volume.beta.kubernetes.io/storage-provisioner: local-cluster.gardener.cloud/host-path\nspec:\n  storageClassName: local-path\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n";

fn on_node(node: &str) -> PersistentVolumeClaim {
    let mut c = claim(OURS);
    c.annotations_mut().insert(SELECTED_NODE_ANNOTATION.into(), node.into());
    c
}

#[test]
fn provisions_a_host_path_volume_for_our_claims_only() {
    let pv = desired_volume(&claim(OURS), &single()).expect("a volume");
    assert_eq!(pv.name_any(), "pvc-1234");
    let spec = pv.spec.as_ref().expect("spec");
    assert_eq!(spec.host_path.as_ref().map(|h| h.path.as_str()), Some("/v/pvc-1234"));
    assert_eq!(spec.claim_ref.as_ref().and_then(|c| c.uid.as_deref()), Some("1234"));
    assert_eq!(volume_dir(&pv, Path::new("/v")), Ok(PathBuf::from("/v/pvc-1234")));
    assert_eq!(
        volume_dir(&pv, Path::new("/elsewhere")),
        Err(PathRefusal::NotInside("/v/pvc-1234".into(), "/elsewhere".into()))
    );

    let other = OURS.replace("local-path", "fast");
    assert!(desired_volume(&claim(&other), &single()).is_none());
    let bound = format!("{OURS}  volumeName: pvc-1234\n");
    assert!(desired_volume(&claim(&bound), &single()).is_none());
    let another_provisioner = OURS.replace("local-cluster.gardener.cloud", "example.com");
    assert!(desired_volume(&claim(&another_provisioner), &single()).is_none());
    let no_size = OURS.replace("resources: {requests: {storage: 1Gi}}", "resources: {}");
    assert!(desired_volume(&claim(&no_size), &single()).is_none());
}

#[test]
fn the_volume_has_the_shape_the_kubelet_and_the_pv_controller_need() {
    let pv = desired_volume(&on_node("a"), &per_node("a")).expect("a volume");
    let json = serde_json::to_value(&pv).expect("serialises");
    assert_eq!(
        json,
        serde_json::json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "pvc-1234",
                         "annotations": {"pv.kubernetes.io/provisioned-by": "local-cluster.gardener.cloud/host-path"}},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": "local-path",
                "volumeMode": "Filesystem",
                "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "ns", "name": "data", "uid": "1234"},
                "hostPath": {"path": "/v/pvc-1234", "type": "DirectoryOrCreate"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}]}]}}
            }
        })
    );
    assert_eq!(volume_node(&pv), Some("a"));
}

#[test]
fn a_claim_without_access_modes_gets_read_write_once() {
    let c = claim(&OURS.replace("  accessModes: [ReadWriteOnce]\n", ""));
    let pv = desired_volume(&c, &single()).expect("a volume");
    assert_eq!(pv.spec.and_then(|s| s.access_modes), Some(vec!["ReadWriteOnce".to_string()]));
}

#[test]
fn per_node_processes_provision_only_claims_placed_on_their_node() {
    // (selected node of the claim, node of the process, provisioned?)
    for (selected, node, want) in
        [(Some("a"), "a", true), (Some("b"), "a", false), (None, "a", false), (Some(""), "a", false)]
    {
        let c = match selected {
            Some(n) => on_node(n),
            None => claim(OURS),
        };
        assert_eq!(is_ours_to_provision(&c, &per_node(node)), want, "selected {selected:?} on {node}");
        assert_eq!(desired_volume(&c, &per_node(node)).is_some(), want, "selected {selected:?} on {node}");
    }
}

#[test]
fn the_single_node_provisions_every_claim_of_its_class() {
    // With or without a selected node (a class with Immediate binding sets none).
    assert!(is_ours_to_provision(&claim(OURS), &single()));
    assert!(is_ours_to_provision(&on_node("local-node"), &single()));
    let pv = desired_volume(&claim(OURS), &single()).expect("a volume");
    assert_eq!(volume_node(&pv), Some("local-node"));
}

fn released(mut pv: PersistentVolume) -> PersistentVolume {
    pv.status = Some(PersistentVolumeStatus { phase: Some("Released".into()), ..Default::default() });
    pv
}

#[test]
fn only_released_volumes_of_ours_with_delete_policy_go() {
    let provisioner = "local-cluster.gardener.cloud/host-path";
    let mut pv = desired_volume(&claim(OURS), &single()).expect("a volume");
    assert!(!is_released(&pv, provisioner));
    pv = released(pv);
    assert!(is_released(&pv, provisioner));
    assert!(!is_released(&pv, "example.com/other"));
    let mut retained = pv.clone();
    if let Some(s) = retained.spec.as_mut() {
        s.persistent_volume_reclaim_policy = Some("Retain".into());
    }
    assert!(!is_released(&retained, provisioner));
    pv.metadata.annotations = None;
    assert!(!is_released(&pv, provisioner));
}

#[test]
fn per_node_processes_delete_only_volumes_of_their_node() {
    let pv = released(desired_volume(&on_node("a"), &per_node("a")).expect("a volume"));
    assert!(is_ours_to_delete(&pv, &per_node("a")));
    assert!(!is_ours_to_delete(&pv, &per_node("b")), "its directory is on node a");
    assert!(is_ours_to_delete(&pv, &single()), "the single node deletes every released volume of ours");

    let mut unpinned = pv.clone();
    if let Some(s) = unpinned.spec.as_mut() {
        s.node_affinity = None;
    }
    assert_eq!(volume_node(&unpinned), None);
    assert!(!is_ours_to_delete(&unpinned, &per_node("a")));
    let bound = desired_volume(&on_node("a"), &per_node("a")).expect("a volume");
    assert!(!is_ours_to_delete(&bound, &per_node("a")), "not released");
}

#[test]
fn a_volume_dir_is_one_plain_component_inside_the_volumes_dir() {
    let dir = Path::new("/v");
    let check = |p: &str| check_volume_path(Path::new(p), dir);
    assert_eq!(check("/v/pvc-1"), Ok(()));
    assert_eq!(check("/v/pvc-1/"), Ok(()), "a trailing slash names the same directory");
    // `<dir>/..` has `/v` as its parent (Path::parent), which the old guard accepted: it
    // would have removed the volumes directory's parent.
    assert_eq!(check("/v/.."), Err(PathRefusal::ParentComponent("/v/..".into())));
    assert_eq!(check("/v/a/../.."), Err(PathRefusal::ParentComponent("/v/a/../..".into())));
    assert_eq!(check("/v/../v/pvc-1"), Err(PathRefusal::ParentComponent("/v/../v/pvc-1".into())));
    assert_eq!(check("/v"), Err(PathRefusal::VolumesDir("/v".into())));
    assert_eq!(check("/v/"), Err(PathRefusal::VolumesDir("/v/".into())));
    assert_eq!(check("/v/."), Err(PathRefusal::VolumesDir("/v/.".into())));
    assert_eq!(check("/v/a/b"), Err(PathRefusal::NotInside("/v/a/b".into(), "/v".into())));
    assert_eq!(check("/vv/pvc-1"), Err(PathRefusal::NotInside("/vv/pvc-1".into(), "/v".into())));
    assert_eq!(check("/"), Err(PathRefusal::NotInside("/".into(), "/v".into())));
    assert_eq!(check("pvc-1"), Err(PathRefusal::NotInside("pvc-1".into(), "/v".into())));
    assert_eq!(check(""), Err(PathRefusal::NotInside("".into(), "/v".into())));
    // A volume whose hostPath names `<dir>/..` gets no directory to delete.
    let mut pv = released(desired_volume(&claim(OURS), &single()).expect("a volume"));
    if let Some(h) = pv.spec.as_mut().and_then(|s| s.host_path.as_mut()) {
        h.path = "/v/..".into();
    }
    assert!(is_ours_to_delete(&pv, &single()));
    assert_eq!(volume_dir(&pv, dir), Err(PathRefusal::ParentComponent("/v/..".into())));
    if let Some(s) = pv.spec.as_mut() {
        s.host_path = None;
    }
    assert_eq!(volume_dir(&pv, dir), Err(PathRefusal::NoHostPath));
}
