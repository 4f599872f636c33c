use super::*;
use extension_sdk::kube::ResourceExt;
use serde_json::json;

const IMAGE: &str = "gardener-rs.local/gardener-extension-provider-local:v0.1.0";

#[test]
fn the_storage_class_is_the_default_and_binds_at_the_first_consumer() {
    let class = serde_json::to_value(storage_class()).expect("serialises");
    assert_eq!(class["metadata"]["name"], "default");
    assert_eq!(class["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"], "true");
    assert_eq!(class["provisioner"], "local.provider.extensions.gardener.cloud/host-path");
    assert_eq!(class["volumeBindingMode"], "WaitForFirstConsumer");
    assert_eq!(class["reclaimPolicy"], "Delete");
}

#[test]
fn rbac_allows_volumes_and_claims_only() {
    let role = serde_json::to_value(cluster_role()).expect("serialises");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ["create", "delete", "get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get", "list", "watch"]},
        ])
    );
    let text = role.to_string();
    for absent in ["secrets", "events", "nodes", "*", "update", "patch"] {
        assert!(!text.contains(&format!("\"{absent}\"")), "{absent} in {text}");
    }
    let binding = cluster_role_binding();
    assert_eq!(binding.role_ref.name, NAME);
    let subjects = binding.subjects.expect("a subject");
    assert_eq!(subjects.len(), 1);
    assert_eq!((subjects[0].kind.as_str(), subjects[0].name.as_str()), ("ServiceAccount", NAME));
    assert_eq!(subjects[0].namespace.as_deref(), Some(NAMESPACE));
    assert_eq!(service_account().namespace().as_deref(), Some(NAMESPACE));
}

#[test]
fn the_daemon_set_runs_our_image_as_the_provisioner_of_each_node() {
    let ds = serde_json::to_value(daemon_set(IMAGE)).expect("serialises");
    assert_eq!(ds["metadata"]["namespace"], "kube-system");
    let selector = &ds["spec"]["selector"]["matchLabels"];
    for (k, v) in selector.as_object().expect("labels") {
        assert_eq!(&ds["spec"]["template"]["metadata"]["labels"][k], v, "the template matches the selector");
    }
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], NAME);
    assert_eq!(pod["tolerations"], json!([{"operator": "Exists"}]), "every taint is tolerated");
    let c = &pod["containers"][0];
    assert_eq!(c["image"], IMAGE);
    assert_eq!(
        c["command"],
        json!([
            "/usr/local/bin/gardener-extension-provider-local",
            "volume-provisioner",
            "--node-name=$(NODE_NAME)",
            "--volumes-dir=/var/lib/provider-local/volumes"
        ])
    );
    assert_eq!(c["env"][0]["name"], "NODE_NAME");
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
    assert_eq!(c["volumeMounts"], json!([{"name": "volumes", "mountPath": VOLUMES_DIR}]));
    assert_eq!(
        pod["volumes"],
        json!([{"name": "volumes", "hostPath": {"path": VOLUMES_DIR, "type": "DirectoryOrCreate"}}])
    );
    assert_eq!(c["resources"]["requests"], json!({"cpu": "10m", "memory": "24Mi"}));
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["securityContext"]["capabilities"]["drop"], json!(["ALL"]));
}

#[test]
fn every_object_is_listed_for_the_provider_status() {
    let refs = Objects::new(IMAGE).references();
    assert_eq!(
        refs,
        vec![
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "name": "default"}),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "namespace": "kube-system", "name": NAME}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": NAME}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "name": NAME}),
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "namespace": "kube-system", "name": NAME}),
        ]
    );
}
