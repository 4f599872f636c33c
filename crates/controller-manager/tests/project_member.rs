//! A project member cannot escalate, on a real API server with the control-plane chart's project
//! roles: bound to `gardener.cloud:system:project-member` in the project's namespace (as the
//! project controller binds members), the member manages the namespace's Secrets and may grant
//! others what the member holds, but every way past that is refused with `forbidden` and leaves
//! nothing behind: a Role with `*` on `*`, a binding of `cluster-admin` or of the Role, the
//! shoot's client CA (an InternalSecret) and its ShootState, a privileged Pod, another project's
//! Secret.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::{InternalSecret, ShootState};
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::PostParams;
use kube::config::KubeConfigOptions;
use kube::{Api, Client};
use serde_json::json;
use support::*;

const MEMBER_ROLE: &str = "gardener.cloud:system:project-member";
const OWN: &str = "garden-dev";
const OTHER: &str = "garden-other";

async fn impersonating(env: &testenv::TestEnv, user: &str) -> Client {
    let mut config =
        kube::Config::from_custom_kubeconfig(env.kubeconfig().clone(), &KubeConfigOptions::default()).await.unwrap();
    config.auth_info.impersonate = Some(user.into());
    config.auth_info.impersonate_groups = Some(vec!["system:authenticated".into()]);
    Client::try_from(config).unwrap()
}

fn from<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// The result must be a 403 from the API server.
fn assert_forbidden<T: std::fmt::Debug>(what: &str, result: Result<T, kube::Error>) {
    match result {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => panic!("{what}: must be forbidden, got {other:?}"),
    }
}

#[tokio::test]
async fn a_project_member_cannot_grant_itself_more_than_it_holds() {
    let (env, admin) = garden().await;
    for ns in [OWN, OTHER] {
        namespace(&admin, ns).await;
    }
    let binding = |name: &str, user: &str, kind: &str, role: &str| -> RoleBinding {
        from(json!({
            "metadata": {"name": name, "namespace": OWN},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }))
    };
    Api::<RoleBinding>::namespaced(admin.clone(), OWN)
        .create(&PostParams::default(), &binding("members", "alice", "ClusterRole", MEMBER_ROLE))
        .await
        .unwrap();
    let ca: InternalSecret = from(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "InternalSecret",
        "metadata": {"name": "demo.ca-client", "namespace": OWN}, "data": {"ca.key": "c2VjcmV0"},
    }));
    Api::<InternalSecret>::namespaced(admin.clone(), OWN).create(&PostParams::default(), &ca).await.unwrap();
    Api::<ShootState>::namespaced(admin.clone(), OWN)
        .create(&PostParams::default(), &from(json!({"metadata": {"name": "demo", "namespace": OWN}, "spec": {}})))
        .await
        .unwrap();
    let theirs: Secret = from(json!({"metadata": {"name": "cloud", "namespace": OTHER}, "stringData": {"key": "x"}}));
    Api::<Secret>::namespaced(admin.clone(), OTHER).create(&PostParams::default(), &theirs).await.unwrap();

    let alice = impersonating(&env, "alice").await;
    let roles = Api::<Role>::namespaced(alice.clone(), OWN);
    let bindings = Api::<RoleBinding>::namespaced(alice.clone(), OWN);
    let pp = PostParams::default();

    // What a member is for: the namespace's Secrets, and granting others what the member holds.
    let mine: Secret = from(json!({"metadata": {"name": "mine", "namespace": OWN}, "stringData": {"key": "x"}}));
    Api::<Secret>::namespaced(alice.clone(), OWN).create(&pp, &mine).await.expect("a member writes Secrets");
    let reader: Role = from(json!({
        "metadata": {"name": "secret-reader", "namespace": OWN},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
    }));
    roles.create(&pp, &reader).await.expect("a Role within the member's rights");
    bindings
        .create(&pp, &binding("bob-reads", "bob", "Role", "secret-reader"))
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
        bindings.create(&pp, &binding("alice-admin", "alice", "ClusterRole", "cluster-admin")).await,
    );
    let ca_reader: Role = from(json!({
        "metadata": {"name": "ca-reader", "namespace": OWN},
        "rules": [{"apiGroups": ["core.gardener.cloud"], "resources": ["internalsecrets", "shootstates"], "verbs": ["get"]}],
    }));
    assert_forbidden("a Role reading InternalSecrets and ShootStates", roles.create(&pp, &ca_reader).await);
    assert_forbidden(
        "the shoot's client CA",
        Api::<InternalSecret>::namespaced(alice.clone(), OWN).get("demo.ca-client").await,
    );
    assert_forbidden("the shoot's ShootState", Api::<ShootState>::namespaced(alice.clone(), OWN).get("demo").await);
    let privileged: Pod = from(json!({
        "metadata": {"name": "root", "namespace": OWN},
        "spec": {"containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": true},
                                 "volumeMounts": [{"name": "host", "mountPath": "/host"}]}],
                 "volumes": [{"name": "host", "hostPath": {"path": "/"}}]},
    }));
    assert_forbidden("a privileged Pod", Api::<Pod>::namespaced(alice.clone(), OWN).create(&pp, &privileged).await);
    assert_forbidden("another project's Secret", Api::<Secret>::namespaced(alice.clone(), OTHER).get("cloud").await);

    // Nothing of the refused attempts is left.
    let admin_roles = Api::<Role>::namespaced(admin.clone(), OWN);
    let admin_bindings = Api::<RoleBinding>::namespaced(admin.clone(), OWN);
    for role in ["everything", "ca-reader"] {
        assert!(admin_roles.get_opt(role).await.unwrap().is_none(), "Role {role} must not exist");
    }
    assert!(admin_bindings.get_opt("alice-admin").await.unwrap().is_none());
    assert!(Api::<Pod>::namespaced(admin.clone(), OWN).get_opt("root").await.unwrap().is_none());
}
