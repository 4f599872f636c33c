//! Tenants stay apart on the live garden (docs/security.md): a project member, as the project
//! controller binds one, can do what a member is for, and every way past that is refused with
//! `forbidden` and leaves nothing behind. The seed side (a gardenlet reaching another seed's
//! objects) is checked where a second seed exists: `managed_seed.rs`. The Secret, InternalSecret
//! and ShootState the case writes are read raw from the garden's etcd: they must be encrypted.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::{client, kubectl};
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client};
use serde_json::json;
use std::time::{Duration, Instant};

const PROJECT: &str = "intr";
const OWN: &str = "garden-intr";
/// Another project's namespace, with its cloud credentials (example/local/secretbinding.yaml).
const OTHER: &str = "garden-local";
const OTHER_SECRET: &str = "local";
const MEMBER: &str = "e2e-intruder@example.com";
/// Written into the objects that hold keys, and looked for in the garden's etcd.
const MARKER: &str = "isolation-marker-5be1-must-not-reach-etcd";

/// The raw value the garden's kube-apiserver stored under `key`, read with etcdctl (next to etcd
/// in the assets) as kube-apiserver reads it: over TLS with its etcd client certificate.
fn etcd_value(key: &str) -> Vec<u8> {
    let pki = e2e::state_dir().join("pki");
    let endpoint = format!("--endpoints=https://127.0.0.1:{}", local_cluster::settings::ETCD_CLIENT_PORT);
    let output = std::process::Command::new(e2e::assets().join("etcdctl"))
        .env("ETCDCTL_API", "3")
        .arg(endpoint)
        .arg(format!("--cacert={}", pki.join(local_cluster::pki::ETCD_CA).join("ca.crt").display()))
        .arg(format!("--cert={}", pki.join(local_cluster::pki::APISERVER_ETCD_CLIENT).join("tls.crt").display()))
        .arg(format!("--key={}", pki.join(local_cluster::pki::APISERVER_ETCD_CLIENT).join("tls.key").display()))
        .args(["get", key, "--print-value-only"])
        .output()
        .expect("running etcdctl");
    assert!(output.status.success(), "etcdctl get {key}: {}", String::from_utf8_lossy(&output.stderr));
    assert!(!output.stdout.is_empty(), "{key} is not in the garden's etcd");
    output.stdout
}

/// `key` is stored secretbox-encrypted and without the marker (docs/security.md, "Encryption at
/// rest in the garden").
fn assert_encrypted_in_etcd(key: &str) {
    let value = etcd_value(key);
    let shown = String::from_utf8_lossy(&value[..value.len().min(60)]).into_owned();
    assert!(value.starts_with(b"k8s:enc:secretbox:v1:"), "{key} is not encrypted in the garden's etcd: {shown:?}");
    let marker = MARKER.as_bytes();
    assert!(!value.windows(marker.len()).any(|w| w == marker), "{key}: the marker is readable in etcd");
    eprintln!("encrypted in the garden's etcd as it must be: {key}");
}

/// A `core.gardener.cloud/v1beta1` kind in namespace [`OWN`], as seen by `client`.
fn gardener(client: &Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("core.gardener.cloud", "v1beta1", kind);
    Api::namespaced_with(client.clone(), OWN, &ApiResource::from_gvk_with_plural(&gvk, plural))
}

fn from<T: k8s_openapi::serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// The result must be a 403 from the API server (or from an admission webhook it called).
fn assert_forbidden<T: std::fmt::Debug>(what: &str, result: Result<T, kube::Error>) {
    match result {
        Err(kube::Error::Api(s)) if s.code == 403 => eprintln!("refused as it must be: {what}: {}", s.message),
        other => panic!("{what}: must be forbidden, got {other:?}"),
    }
}

/// The garden's admin client acting as `user` (impersonation), as the API server would see a
/// person logged in with that name.
async fn impersonating(user: &str) -> Client {
    let mut config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(e2e::kubeconfig()).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    config.auth_info.impersonate = Some(user.into());
    config.auth_info.impersonate_groups = Some(vec!["system:authenticated".into()]);
    Client::try_from(config).unwrap()
}

/// Deletes the project (with Gardener's confirmation) and waits, bounded, until its namespace is gone.
fn delete_project() {
    let _ = kubectl(&["annotate", "project", PROJECT, "confirmation.gardener.cloud/deletion=true", "--overwrite"]);
    let _ = kubectl(&["delete", "project", PROJECT, "--ignore-not-found", "--wait=false"]);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(120) {
        let left = kubectl(&["get", "namespace", OWN, "--ignore-not-found", "-o", "name"]).unwrap_or_default();
        if left.trim().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    panic!("namespace {OWN} of project {PROJECT} was not removed within 120 s");
}

struct Cleanup;
impl Drop for Cleanup {
    fn drop(&mut self) {
        delete_project();
    }
}

#[tokio::test]
async fn a_project_member_cannot_escalate_nor_reach_keys_pods_or_other_projects() {
    let admin = client().await;
    let _cleanup = Cleanup;
    let project = format!(
        "apiVersion: core.gardener.cloud/v1beta1\nkind: Project\nmetadata:\n  name: {PROJECT}\nspec:\n  namespace: {OWN}\n  owner:\n    apiGroup: rbac.authorization.k8s.io\n    kind: User\n    name: {MEMBER}\n"
    );
    e2e::apply("default", &project); // cluster-scoped: the namespace is ignored

    // The objects the member must not reach exist, so a refusal is about rights, not absence.
    let wait_namespace = Instant::now();
    loop {
        let phase = kubectl(&["get", "project", PROJECT, "-o", "jsonpath={.status.phase}"]).unwrap_or_default();
        if phase == "Ready" {
            break;
        }
        assert!(wait_namespace.elapsed() < Duration::from_secs(60), "project {PROJECT} is not Ready: {phase:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let pp = PostParams::default();
    let ca: DynamicObject = from(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "InternalSecret",
        "metadata": {"name": "demo.ca-client", "namespace": OWN, "annotations": {"marker": MARKER}},
        "data": {"ca.key": "c2VjcmV0"},
    }));
    gardener(&admin, "InternalSecret", "internalsecrets").create(&pp, &ca).await.unwrap();
    let state: DynamicObject = from(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "ShootState",
        "metadata": {"name": "demo", "namespace": OWN, "annotations": {"marker": MARKER}}, "spec": {},
    }));
    gardener(&admin, "ShootState", "shootstates").create(&pp, &state).await.unwrap();

    // What a member is for works: the namespace's Secrets, and granting others what the member
    // holds. Asked until the project controller's binding for the owner is there.
    let member = impersonating(MEMBER).await;
    let mine: Secret = from(json!({"metadata": {"name": "mine", "namespace": OWN}, "stringData": {"key": MARKER}}));
    let start = Instant::now();
    loop {
        match Api::<Secret>::namespaced(member.clone(), OWN).create(&pp, &mine).await {
            Ok(_) => break,
            Err(e) if start.elapsed() < Duration::from_secs(60) => {
                eprintln!("the member cannot write Secrets yet: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("the project owner may write Secrets in {OWN}: {e}"),
        }
    }
    let roles = Api::<Role>::namespaced(member.clone(), OWN);
    let bindings = Api::<RoleBinding>::namespaced(member.clone(), OWN);
    let reader: Role = from(json!({
        "metadata": {"name": "secret-reader", "namespace": OWN},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
    }));
    roles.create(&pp, &reader).await.expect("a Role within the member's rights");
    let binding = |name: &str, kind: &str, role: &str| -> RoleBinding {
        from(json!({
            "metadata": {"name": name, "namespace": OWN},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": MEMBER}],
        }))
    };
    bindings
        .create(&pp, &binding("reads", "Role", "secret-reader"))
        .await
        .expect("binding a Role within the member's rights");

    // Everything past that is refused.
    let everything: Role = from(json!({
        "metadata": {"name": "everything", "namespace": OWN},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    }));
    assert_forbidden("a Role with * on *", roles.create(&pp, &everything).await);
    assert_forbidden(
        "binding cluster-admin",
        bindings.create(&pp, &binding("admin", "ClusterRole", "cluster-admin")).await,
    );
    assert_forbidden(
        "the shoot's client CA (InternalSecret)",
        gardener(&member, "InternalSecret", "internalsecrets").get("demo.ca-client").await,
    );
    assert_forbidden("the shoot's ShootState", gardener(&member, "ShootState", "shootstates").get("demo").await);
    let privileged: Pod = from(json!({
        "metadata": {"name": "root", "namespace": OWN},
        "spec": {"containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": true},
                                 "volumeMounts": [{"name": "host", "mountPath": "/host"}]}],
                 "volumes": [{"name": "host", "hostPath": {"path": "/"}}]},
    }));
    assert_forbidden("a privileged Pod", Api::<Pod>::namespaced(member.clone(), OWN).create(&pp, &privileged).await);
    assert_forbidden(
        "another project's credentials",
        Api::<Secret>::namespaced(member.clone(), OTHER).get(OTHER_SECRET).await,
    );

    // What holds keys is encrypted at rest in the garden's etcd.
    assert_encrypted_in_etcd(&format!("/registry/secrets/{OWN}/mine"));
    assert_encrypted_in_etcd(&format!("/registry/core.gardener.cloud/internalsecrets/{OWN}/demo.ca-client"));
    assert_encrypted_in_etcd(&format!("/registry/core.gardener.cloud/shootstates/{OWN}/demo"));

    // Nothing of the refused attempts is left, and the other project's Secret is there (so its
    // refusal was about rights).
    assert!(Api::<Role>::namespaced(admin.clone(), OWN).get_opt("everything").await.unwrap().is_none());
    assert!(Api::<RoleBinding>::namespaced(admin.clone(), OWN).get_opt("admin").await.unwrap().is_none());
    assert!(Api::<Pod>::namespaced(admin.clone(), OWN).get_opt("root").await.unwrap().is_none());
    assert!(Api::<Secret>::namespaced(admin.clone(), OTHER).get_opt(OTHER_SECRET).await.unwrap().is_some());
}
