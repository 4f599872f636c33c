//! Pod security in the garden through a real kube-apiserver (1.20, which has no PodSecurity
//! admission of its own): in a namespace without label a privileged Pod is refused (403, naming
//! the field and the default level) and a plain Pod admitted; in a namespace labelled
//! `restricted` a Pod without `runAsNonRoot` is refused and a hardened one admitted, also when
//! the namespace was labelled after the server started; in a namespace labelled `privileged` a
//! privileged Pod is admitted without the webhook being asked.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use support::*;

async fn namespace(client: &Client, name: &str, level: Option<&str>) {
    let labels = level.map(|l| json!({"pod-security.kubernetes.io/enforce": l})).unwrap_or(Value::Null);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
}

fn pod(name: &str, spec: Value) -> Pod {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}))
        .unwrap()
}

fn privileged() -> Pod {
    pod("root", json!({"containers": [{"name": "x", "image": "busybox", "securityContext": {"privileged": true}}]}))
}

fn plain() -> Pod {
    pod("plain", json!({"containers": [{"name": "app", "image": "nginx"}]}))
}

fn hardened() -> Pod {
    pod(
        "hardened",
        json!({"securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
               "containers": [{"name": "app", "image": "nginx",
                               "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}),
    )
}

/// How many Pod reviews the webhook has answered.
fn pod_reviews(webhook: &Webhook) -> u64 {
    ["true", "false"].iter().map(|a| webhook.metrics.requests.with_label_values(&["validate", "pods", a]).get()).sum()
}

/// Creating `pod` in `ns` is refused by the pods webhook; returns the message (waits until the
/// API server calls the webhook and the server sees what `expect` needs).
async fn refused(client: &Client, ns: &str, pod: &Pod, expect: &str) -> String {
    let pods = Api::<Pod>::namespaced(client.clone(), ns);
    eventually(
        &format!("pod {ns}/{} to be refused with {expect:?}", pod.metadata.name.as_deref().unwrap_or("")),
        || async {
            match pods.create(&PostParams::default(), pod).await {
                Err(kube::Error::Api(status)) if status.message.contains(expect) => {
                    assert_eq!(status.code, 403, "{status:?}");
                    Ok(status.message)
                }
                Err(e) => Err(e.to_string()),
                Ok(p) => {
                    let _ = pods.delete(p.metadata.name.as_deref().unwrap_or_default(), &DeleteParams::default()).await;
                    Err("admitted".to_string())
                }
            }
        },
    )
    .await
}

#[tokio::test]
async fn pods_are_held_to_the_level_of_their_namespace() {
    let (env, client) = garden().await;
    namespace(&client, "team", None).await;
    namespace(&client, "hard", Some("restricted")).await;
    namespace(&client, "open", Some("privileged")).await;
    let webhook = start_webhook(&env, &client, |_| {}).await;

    // No label: the default level, baseline.
    let message = refused(&client, "team", &privileged(), "securityContext.privileged").await;
    assert!(
        message.starts_with("admission webhook \"pods.validate.admission.gardener.cloud\" denied the request: "),
        "{message}"
    );
    assert!(
        message.contains(
            "pod \"root\" in namespace \"team\" violates PodSecurity \"baseline:latest\" (namespace has no label \
             pod-security.kubernetes.io/enforce: default level baseline): spec.containers[0].securityContext.privileged: \
             Forbidden: privileged (container \"x\" must not set securityContext.privileged=true)"
        ),
        "{message}"
    );
    let hostpath = pod(
        "host",
        json!({"hostNetwork": true, "containers": [{"name": "x", "image": "busybox"}],
               "volumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
    );
    let message = refused(&client, "team", &hostpath, "spec.volumes[0].hostPath").await;
    assert!(message.contains("spec.hostNetwork: Forbidden: host namespaces (hostNetwork=true)"), "{message}");
    Api::<Pod>::namespaced(client.clone(), "team").create(&PostParams::default(), &plain()).await.unwrap();

    // restricted: the plain pod is refused, the hardened one admitted.
    let message = refused(&client, "hard", &plain(), "runAsNonRoot").await;
    assert!(message.contains("violates PodSecurity \"restricted:latest\": ["), "{message}");
    assert!(
        message.contains("spec.containers[0].securityContext.runAsNonRoot: Forbidden: runAsNonRoot != true"),
        "{message}"
    );
    Api::<Pod>::namespaced(client.clone(), "hard").create(&PostParams::default(), &hardened()).await.unwrap();

    // A namespace labelled after the server started: its cache follows.
    namespace(&client, "late", None).await;
    let labelled = json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}});
    let patch = kube::api::Patch::Merge(&labelled);
    Api::<Namespace>::all(client.clone()).patch("late", &Default::default(), &patch).await.unwrap();
    let message = refused(&client, "late", &plain(), "violates PodSecurity \"restricted:latest\": [").await;
    assert!(message.contains("runAsNonRoot"), "{message}");

    // privileged: admitted, and the webhook is not asked.
    let before = pod_reviews(&webhook);
    Api::<Pod>::namespaced(client.clone(), "open").create(&PostParams::default(), &privileged()).await.unwrap();
    assert_eq!(pod_reviews(&webhook), before, "a pod in a privileged namespace was sent to the webhook");
    assert!(before > 0);
}
