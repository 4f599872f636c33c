//! The deployer side against a real kube-apiserver: the readiness rules as gardenlet applies
//! them, with no controller running (statuses are written by hand).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::Deployer;
use extension_sdk::api::extensions::Infrastructure;
use extension_sdk::deployer::DeployError;
use extension_sdk::kinds::ExtensionResource;
use extension_sdk::kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::Duration;
use support::*;

fn succeeded_at(ts: &str, generation: i64) -> serde_json::Value {
    json!({"status": {
        "observedGeneration": generation,
        "lastOperation": {"type": "Reconcile", "state": "Succeeded", "progress": 100, "description": "done", "lastUpdateTime": ts}
    }})
}

#[tokio::test]
async fn readiness_rejects_an_operation_older_than_the_timestamp_annotation() {
    bounded(async {
        let tc = cluster().await;
        let api = Infrastructure::api(tc.client.clone(), Some(NS));
        let mut obj = infra("a");
        obj.metadata.annotations =
            Some([("gardener.cloud/timestamp".to_string(), "2030-01-01T00:00:10Z".to_string())].into());
        let created = api.create(&PostParams::default(), &obj).await.unwrap();
        let generation = created.metadata.generation.unwrap();
        // Succeeded, but one second before the request.
        api.patch_status("a", &PatchParams::default(), &Patch::Merge(succeeded_at("2030-01-01T00:00:09Z", generation)))
            .await
            .unwrap();
        let deployer = Deployer::new(tc.client.clone()).with_timeout(Duration::from_secs(2));
        match deployer.wait_ready(&created).await {
            Err(DeployError::Timeout { reason, object, .. }) => {
                assert!(reason.contains("older than the request"), "{reason}");
                assert_eq!(object, format!("Infrastructure {NS}/a"));
            }
            other => panic!("a stale operation must not be ready: {other:?}"),
        }
        // The same second is fine (the comparison is to the second).
        api.patch_status("a", &PatchParams::default(), &Patch::Merge(succeeded_at("2030-01-01T00:00:10Z", generation)))
            .await
            .unwrap();
        deployer.wait_ready(&created).await.unwrap();
    })
    .await
}

#[tokio::test]
async fn an_old_error_is_waited_out_and_a_current_one_fails_at_once() {
    bounded(async {
        let tc = cluster().await;
        let api = Infrastructure::api(tc.client.clone(), Some(NS));
        let mut obj = infra("a");
        obj.metadata.annotations = Some([("gardener.cloud/timestamp".to_string(), "2030-01-01T00:00:10Z".to_string())].into());
        let created = api.create(&PostParams::default(), &obj).await.unwrap();
        let generation = created.metadata.generation.unwrap();
        let error_at = |ts: &str| {
            json!({"status": {
                "observedGeneration": generation,
                "lastOperation": {"type": "Reconcile", "state": "Error", "progress": 50, "description": "x", "lastUpdateTime": ts},
                "lastError": {"description": "quota exceeded", "codes": ["ERR_INFRA_QUOTA_EXCEEDED"], "lastUpdateTime": ts}
            }})
        };
        api.patch_status("a", &PatchParams::default(), &Patch::Merge(error_at("2030-01-01T00:00:05Z"))).await.unwrap();
        let deployer = Deployer::new(tc.client.clone()).with_timeout(Duration::from_secs(2));
        let Err(DeployError::Timeout { last_error, .. }) = deployer.wait_ready(&created).await else {
            panic!("an error from before the request must be waited out")
        };
        assert!(last_error.is_some(), "the timeout reports the last error seen");
        api.patch_status("a", &PatchParams::default(), &Patch::Merge(error_at("2030-01-01T00:00:11Z"))).await.unwrap();
        let err = Deployer::new(tc.client.clone()).wait_ready(&created).await.expect_err("current error");
        assert!(matches!(err, DeployError::Failed { .. }), "{err:?}");
        assert_eq!(err.codes(), &[extension_sdk::api::common::ErrorCode::InfraQuotaExceeded]);
    })
    .await
}

#[tokio::test]
async fn operations_on_missing_objects_are_no_ops() {
    bounded(async {
        let tc = cluster().await;
        let deployer = Deployer::new(tc.client.clone());
        deployer.delete_and_wait::<Infrastructure>(Some(NS), "missing").await.unwrap();
        assert!(deployer.migrate_and_wait::<Infrastructure>(Some(NS), "missing").await.unwrap().is_none());
    })
    .await
}
