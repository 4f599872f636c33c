//! BackupBucket and BackupEntry on a real kube-apiserver and a temporary backup root: the
//! directories appear on reconcile and disappear on delete (an entry only after its grace
//! period), and the bucket publishes a Secret with its location.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::api::extensions::{BackupBucket, BackupBucketSpec, BackupEntry, BackupEntrySpec};
use extension_sdk::k8s_openapi::api::core::v1::Secret;
use extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use extension_sdk::k8s_openapi::jiff::Timestamp;
use extension_sdk::kube::Api;
use extension_sdk::testing::TestCluster;
use extension_sdk::{Actuator, ClusterContext};
use provider_local::{BackupConfig, LocalBackupBucket, LocalBackupEntry};
use std::time::Duration;
use support::*;

fn entry(name: &str) -> BackupEntry {
    BackupEntry::new(
        name,
        BackupEntrySpec {
            default: default_spec("local"),
            backup_bucket_provider_status: None,
            region: "local".into(),
            secret_ref: cloudprovider(),
            bucket_name: "bucket-1".into(),
        },
    )
}

#[tokio::test]
async fn backup_directories_appear_and_disappear() {
    bounded(async {
        let tc = TestCluster::start().await.unwrap();
        let root = tempfile::tempdir().unwrap();
        let config = BackupConfig::new(root.path());
        let none = ClusterContext::none();
        let buckets = LocalBackupBucket::new(as_provider_local(&tc).await.unwrap(), config.clone());
        let entries = LocalBackupEntry::new(config.clone());
        let bucket = BackupBucket::new(
            "bucket-1",
            BackupBucketSpec { default: default_spec("local"), region: "local".into(), secret_ref: cloudprovider() },
        );
        let e = entry(&format!("{NS}--uid-1"));
        let bucket_dir = root.path().join("bucket-1");
        let entry_dir = bucket_dir.join(format!("{NS}--uid-1"));

        // An entry needs its bucket first: a retryable dependency.
        let err = entries.reconcile(&e, &none).await.unwrap_err();
        assert!(err.chain().contains("does not exist yet"), "{}", err.chain());

        let outcome = buckets.reconcile(&bucket, &none).await.unwrap();
        assert!(bucket_dir.is_dir());
        assert_eq!(outcome.provider_status.as_ref().unwrap()["hostPath"], bucket_dir.to_string_lossy().as_ref());
        let secret =
            Api::<Secret>::namespaced(tc.client.clone(), "garden").get("generated-bucket-bucket-1").await.unwrap();
        let data = secret.data.unwrap();
        assert_eq!(data["bucketName"].0, b"bucket-1");
        assert_eq!(data["hostPath"].0, bucket_dir.to_string_lossy().as_bytes());

        entries.reconcile(&e, &none).await.unwrap();
        assert!(entry_dir.is_dir());

        // Within the grace period the entry stays and the delete asks to be called again.
        let graceful =
            LocalBackupEntry::new(BackupConfig { deletion_grace: Duration::from_secs(3600), ..config.clone() });
        let mut deleting = e.clone();
        deleting.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        let wait = graceful.delete(&deleting, &none).await.unwrap_err();
        assert!(wait.requeue().is_some_and(|d| d > Duration::from_secs(3500)), "{wait:?}");
        assert!(entry_dir.is_dir(), "removed within the grace period");

        entries.delete(&deleting, &none).await.unwrap();
        assert!(!entry_dir.exists(), "the entry directory survived");
        assert!(bucket_dir.is_dir(), "deleting an entry removed the bucket");

        buckets.delete(&bucket, &none).await.unwrap();
        assert!(!bucket_dir.exists(), "the bucket directory survived");
        let gone =
            Api::<Secret>::namespaced(tc.client.clone(), "garden").get_opt("generated-bucket-bucket-1").await.unwrap();
        assert!(gone.is_none(), "the generated Secret survived");
    })
    .await;
}
