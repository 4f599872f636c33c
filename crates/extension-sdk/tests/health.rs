//! Health conditions computed from Deployments and Nodes on a real kube-apiserver.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::api::common::{Condition, ConditionStatus};
use extension_sdk::api::extensions::Infrastructure;
use extension_sdk::health::{DeploymentsRolledOut, HealthChecker, NodesReady, REASON_PROGRESSING_TOO_LONG};
use extension_sdk::k8s_openapi::api::apps::v1::Deployment;
use extension_sdk::k8s_openapi::api::core::v1::Node;
use extension_sdk::kinds::ExtensionResource;
use extension_sdk::kube::api::{Patch, PatchParams, PostParams};
use extension_sdk::kube::{Api, Client};
use serde_json::json;
use std::time::Duration;
use support::*;

async fn conditions(client: &Client) -> Vec<Condition> {
    Infrastructure::api(client.clone(), Some(NS)).get("a").await.unwrap().status.unwrap().default.conditions
}

fn status_of(conditions: &[Condition], type_: &str) -> (ConditionStatus, String) {
    let c = conditions.iter().find(|c| c.type_ == type_).unwrap_or_else(|| panic!("no {type_} in {conditions:?}"));
    (c.status, c.reason.clone())
}

#[tokio::test]
async fn conditions_follow_rollouts_and_progressing_turns_false_after_the_threshold() {
    bounded(async {
        let tc = cluster().await;
        let api = Infrastructure::api(tc.client.clone(), Some(NS));
        api.create(&PostParams::default(), &infra("a")).await.unwrap();
        let done = json!({"status": {"lastOperation": {"type": "Create", "state": "Succeeded", "progress": 100, "description": "done", "lastUpdateTime": "2030-01-01T00:00:00Z"}}});
        api.patch_status("a", &PatchParams::default(), &Patch::Merge(&done)).await.unwrap();

        let deployments: Api<Deployment> = Api::namespaced(tc.client.clone(), NS);
        let d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "cloud-controller-manager"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "ccm"}},
                     "template": {"metadata": {"labels": {"app": "ccm"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}
        }))
        .unwrap();
        deployments.create(&PostParams::default(), &d).await.unwrap();
        let nodes: Api<Node> = Api::all(tc.client.clone());
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
        nodes.create(&PostParams::default(), &node).await.unwrap();
        nodes
            .patch_status("n1", &PatchParams::default(), &Patch::Merge(json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})))
            .await
            .unwrap();

        let checker = HealthChecker::<Infrastructure>::new(tc.client.clone(), [TYPE])
            .condition("ControlPlaneHealthy", vec![Box::new(DeploymentsRolledOut(vec!["cloud-controller-manager".into()]))])
            .condition("EveryNodeReady", vec![Box::new(NodesReady { shoot: None })])
            .progressing_threshold(Some(Duration::ZERO));

        // No controller updates the Deployment's status here: it has not rolled out.
        assert_eq!(checker.check_all().await.unwrap(), 1);
        let cs = conditions(&tc.client).await;
        assert_eq!(status_of(&cs, "ControlPlaneHealthy").0, ConditionStatus::Progressing);
        assert_eq!(status_of(&cs, "EveryNodeReady").0, ConditionStatus::True);
        // Past the threshold, Progressing turns False.
        checker.check_all().await.unwrap();
        assert_eq!(status_of(&conditions(&tc.client).await, "ControlPlaneHealthy"), (ConditionStatus::False, REASON_PROGRESSING_TOO_LONG.into()));
        // Nothing changed: nothing is written.
        assert_eq!(checker.check_all().await.unwrap(), 0);

        // The rollout completes.
        let rolled = json!({"status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1, "readyReplicas": 1}});
        deployments.patch_status("cloud-controller-manager", &PatchParams::default(), &Patch::Merge(&rolled)).await.unwrap();
        checker.check_all().await.unwrap();
        assert_eq!(status_of(&conditions(&tc.client).await, "ControlPlaneHealthy").0, ConditionStatus::True);
    })
    .await
}
