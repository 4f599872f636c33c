//! A Worker roll-out on a real kube-apiserver that plays both the seed (machine Pods) and the
//! shoot (Nodes, the workload, its PodDisruptionBudget), reached through the admin kubeconfig
//! Secret gardenlet would write. No kubelet runs: the test registers each machine's Node and
//! marks it Ready, as a machine's kubelet would. Proves: no old machine is drained while the new
//! one does not serve; the drain cordons the old Node and asks the Eviction API, which the budget
//! refuses and the Worker's status names; a new actuator (a restarted provider-local) carries on
//! with the same drain and deadline; once the budget allows, the pod leaves and the old machine
//! goes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::Actuator;
use extension_sdk::api::extensions::Worker;
use extension_sdk::k8s_openapi::api::core::v1::{Namespace, Node, Pod, Secret};
use extension_sdk::kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use extension_sdk::kube::{Api, Client, ResourceExt};
use extension_sdk::testing::TestCluster;
use provider_local::LocalWorker;
use provider_local::infrastructure::machine_namespace;
use provider_local::worker::drain::ANNOTATION_DRAIN_STARTED;
use provider_local::worker::{LABEL_POOL, PoolRollout};
use serde_json::json;
use support::*;

/// The machine Pods' names.
async fn machines(client: &Client) -> Vec<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &machine_namespace(NS));
    let mut names: Vec<String> =
        pods.list(&ListParams::default()).await.unwrap().items.iter().map(|p| p.name_any()).collect();
    names.sort();
    names
}

/// Registers `name` as a Ready Node of pool `a`, as its kubelet would.
async fn register_ready_node(client: &Client, name: &str) {
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": name, "labels": {LABEL_POOL: "a"}}})).unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    nodes.patch_status(name, &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
}

/// A PodDisruptionBudget in the version the API server serves (policy/v1 from 1.21, else
/// v1beta1).
async fn budget(client: &Client, min_available: i32) -> Api<DynamicObject> {
    for version in ["v1", "v1beta1"] {
        let gvk = GroupVersionKind::gvk("policy", version, "PodDisruptionBudget");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "poddisruptionbudgets");
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
        let mut pdb = DynamicObject::new("app", &resource);
        pdb.data = json!({"spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "x"}}}});
        if api.create(&PostParams::default(), &pdb).await.is_ok() {
            return api;
        }
    }
    panic!("the API server serves no PodDisruptionBudget version");
}

fn rollout(outcome: &extension_sdk::Outcome<Worker>) -> PoolRollout {
    let status = outcome.provider_status.clone().expect("a provider status");
    serde_json::from_value(status["rollouts"][0].clone()).unwrap()
}

#[tokio::test]
async fn a_roll_out_waits_for_the_new_node_drains_through_the_budget_and_survives_a_restart() {
    bounded(async {
        let tc = TestCluster::start().await.unwrap();
        let sa = as_provider_local(&tc).await.unwrap();
        // The shoot is the same API server, reached as gardenlet's Secret says.
        let namespaces: Api<Namespace> = Api::all(tc.client.clone());
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap();
        namespaces.create(&PostParams::default(), &ns).await.unwrap();
        // JSON is YAML: the kubeconfig parser reads it.
        let kubeconfig = serde_json::to_string(tc.env.kubeconfig()).unwrap();
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": "kubeconfig-admin"},
            "stringData": {"kubeconfig": kubeconfig},
        }))
        .unwrap();
        Api::<Secret>::namespaced(tc.client.clone(), NS).create(&PostParams::default(), &secret).await.unwrap();

        let first = LocalWorker::new(sa.clone(), None);
        first.reconcile(&worker(vec![pool("a", 1, "machine:1")]), &cluster(false)).await.unwrap();
        let old = machines(&tc.client).await;
        assert_eq!(old.len(), 1, "{old:?}");
        let old = old[0].clone();
        register_ready_node(&tc.client, &old).await;
        // The workload on the old node: one pod, and a budget that keeps it.
        let pods: Api<Pod> = Api::namespaced(tc.client.clone(), "default");
        let app: Pod = serde_json::from_value(json!({
            "metadata": {"name": "app", "labels": {"app": "x"}},
            "spec": {"nodeName": old, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "busybox"}]},
        }))
        .unwrap();
        pods.create(&PostParams::default(), &app).await.unwrap();
        // Running and Ready, as its kubelet would report (a pending pod is evicted whatever its
        // budget says).
        let running = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        pods.patch_status("app", &PatchParams::default(), &Patch::Merge(&running)).await.unwrap();
        let budgets = budget(&tc.client, 1).await;

        // The new class: a new machine, and nothing drained while its Node is not there.
        let rolled = worker(vec![pool("a", 1, "machine:2")]);
        let outcome = first.reconcile(&rolled, &cluster(false)).await.unwrap();
        let now = machines(&tc.client).await;
        assert_eq!(now.len(), 2, "a new machine next to the old one: {now:?}");
        let new = now.iter().find(|m| **m != old).unwrap().clone();
        let status = rollout(&outcome);
        assert!(status.draining.is_empty() && !status.settled, "{status:?}");
        let nodes: Api<Node> = Api::all(tc.client.clone());
        let cordoned = |n: &Node| n.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
        assert!(!cordoned(&nodes.get(&old).await.unwrap()), "the old Node is cordoned before the new one serves");

        // The new Node is Ready: the old one is cordoned, and the budget refuses the eviction.
        register_ready_node(&tc.client, &new).await;
        let status = rollout(&first.reconcile(&rolled, &cluster(false)).await.unwrap());
        assert!(cordoned(&nodes.get(&old).await.unwrap()), "the old Node is cordoned");
        assert_eq!(status.draining.len(), 1, "{status:?}");
        let drain = &status.draining[0];
        assert_eq!(drain.machine, old);
        assert_eq!(drain.remaining, ["default/app"]);
        assert!(drain.blocked_by.iter().any(|b| b.starts_with("default/app: ")), "{:?}", drain.blocked_by);
        assert!(pods.get_opt("app").await.unwrap().is_some(), "the budget kept the pod");
        let machine_pods: Api<Pod> = Api::namespaced(tc.client.clone(), &machine_namespace(NS));
        let since = machine_pods.get(&old).await.unwrap().annotations().get(ANNOTATION_DRAIN_STARTED).cloned();
        assert!(since.is_some(), "the drain's start is on the machine");

        // A restarted provider-local: the same drain, the same start, the same refusal.
        let second = LocalWorker::new(sa.clone(), None);
        let status = rollout(&second.reconcile(&rolled, &cluster(false)).await.unwrap());
        assert_eq!(status.draining.len(), 1, "{status:?}");
        assert_eq!(status.draining[0].since, drain.since, "the drain keeps its start (and so its deadline)");
        assert_eq!(machines(&tc.client).await.len(), 2);

        // The budget allows it: the pod is evicted, and the old machine goes.
        budgets.delete("app", &DeleteParams::default()).await.unwrap();
        let mut settled = false;
        for _ in 0..20 {
            let status = rollout(&second.reconcile(&rolled, &cluster(false)).await.unwrap());
            if status.settled {
                settled = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        assert!(settled, "the roll-out did not settle");
        assert!(pods.get_opt("app").await.unwrap().is_none(), "the pod was evicted");
        assert_eq!(machines(&tc.client).await, [new]);
    })
    .await;
}
