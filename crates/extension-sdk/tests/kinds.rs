//! Kind-specific behaviour on a real kube-apiserver: OperatingSystemConfig user data stored in
//! a Secret, and the conformance suite for a cluster-scoped kind without migration
//! (BackupBucket).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::api::common::SecretReference;
use extension_sdk::api::common::{LastOperationState as S, LastOperationType as T};
use extension_sdk::api::extensions::operatingsystemconfig::{
    File, FileContent, FileContentInline, OperatingSystemConfigSpec, Unit,
};
use extension_sdk::api::extensions::{BackupBucket, BackupBucketSpec, DefaultSpec, OperatingSystemConfig};
use extension_sdk::k8s_openapi::api::core::v1::Secret;
use extension_sdk::kinds::{CLOUD_CONFIG_DATA_KEY, ExtensionResource, OscOutput};
use extension_sdk::kube::Api;
use extension_sdk::kube::api::PostParams;
use extension_sdk::testing::Conformance;
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Deployer, Outcome};
use std::time::Duration;
use support::*;

struct Osc;

impl Actuator<OperatingSystemConfig> for Osc {
    async fn reconcile(
        &self,
        osc: &OperatingSystemConfig,
        _: &ClusterContext,
    ) -> Result<Outcome<OperatingSystemConfig>, ActuatorError> {
        let units: Vec<String> = osc.spec.units.iter().map(|u| u.name.clone()).collect();
        Ok(Outcome::done().with_output(OscOutput {
            user_data: format!("#!/bin/bash\n# units: {}\n", units.join(",")).into_bytes(),
            command: Some("/usr/bin/env bash /var/lib/osc/run.sh".into()),
            units,
            extension_units: vec![Unit {
                name: "extra.service".into(),
                content: Some("[Unit]".into()),
                ..Default::default()
            }],
            extension_files: vec![File {
                path: "/etc/extra".into(),
                permissions: Some(0o644),
                content: FileContent {
                    inline: Some(FileContentInline { encoding: String::new(), data: "x".into() }),
                    ..Default::default()
                },
            }],
        }))
    }

    async fn delete(&self, _: &OperatingSystemConfig, _: &ClusterContext) -> Result<(), ActuatorError> {
        Ok(())
    }
}

#[tokio::test]
async fn operating_system_config_user_data_is_stored_in_an_owned_secret() {
    bounded(async {
        let tc = cluster().await;
        let running = start::<OperatingSystemConfig, _>(&tc.client, Osc, config());
        let mut osc = OperatingSystemConfig::new(
            "pool-a",
            OperatingSystemConfigSpec {
                default: DefaultSpec { type_: TYPE.into(), ..Default::default() },
                units: vec![Unit { name: "kubelet.service".into(), ..Default::default() }],
                ..Default::default()
            },
        );
        osc.metadata.namespace = Some(NS.into());
        let deployer = Deployer::new(tc.client.clone()).with_timeout(Duration::from_secs(30));
        let ready = deployer.deploy_and_wait(&osc).await.unwrap();
        let status = ready.status.clone().unwrap();
        let secret_ref = status.cloud_config.clone().unwrap().secret_ref;
        assert_eq!(secret_ref, SecretReference { name: "cloud-config-pool-a".into(), namespace: Some(NS.into()) });
        assert_eq!(status.units, vec!["kubelet.service".to_string()]);
        assert_eq!(status.extension_units[0].name, "extra.service");
        assert_eq!(status.extension_files[0].path, "/etc/extra");
        assert!(status.command.is_some());

        let secrets: Api<Secret> = Api::namespaced(tc.client.clone(), NS);
        let secret = secrets.get("cloud-config-pool-a").await.unwrap();
        let data = secret.data.unwrap();
        let user_data = String::from_utf8(data[CLOUD_CONFIG_DATA_KEY].0.clone()).unwrap();
        assert!(user_data.contains("units: kubelet.service"), "{user_data}");
        let owner = &secret.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.controller),
            ("OperatingSystemConfig", "pool-a", Some(true))
        );

        deployer.delete_and_wait::<OperatingSystemConfig>(Some(NS), "pool-a").await.unwrap();
        assert!(secrets.get_opt("cloud-config-pool-a").await.unwrap().is_none(), "the Secret goes with the object");
        running.stop().await;
    })
    .await
}

/// A BackupBucket provider: only reconcile and delete.
struct Bucket;

impl Actuator<BackupBucket> for Bucket {
    async fn reconcile(
        &self,
        bucket: &BackupBucket,
        cluster: &ClusterContext,
    ) -> Result<Outcome<BackupBucket>, ActuatorError> {
        if cluster.exists() {
            return Err(ActuatorError::new("a BackupBucket has no Cluster"));
        }
        let region = bucket.spec.region.clone();
        Ok(Outcome::done().with_provider_status(serde_json::json!({ "region": region })))
    }

    async fn delete(&self, _: &BackupBucket, _: &ClusterContext) -> Result<(), ActuatorError> {
        Ok(())
    }
}

fn bucket() -> BackupBucket {
    BackupBucket::new(
        "bucket-1",
        BackupBucketSpec {
            default: DefaultSpec { type_: TYPE.into(), ..Default::default() },
            region: "local".into(),
            secret_ref: SecretReference { name: "creds".into(), namespace: Some("garden".into()) },
        },
    )
}

#[tokio::test]
async fn a_cluster_scoped_kind_without_migration_passes_the_conformance_suite() {
    let report = tokio::time::timeout(
        Duration::from_secs(180),
        Conformance::new(Bucket, bucket()).with_spec_update(|b| b.spec.region = "other".into()).run(),
    )
    .await
    .expect("timed out")
    .unwrap_or_else(|e| panic!("{e}"));
    println!("{report}");
    assert_eq!(report.noop_calls, 0);
    assert_eq!(report.calls.get("Migrate"), None);
    assert_eq!(report.calls.get("Delete"), Some(&1));
}

#[tokio::test]
async fn a_migrate_annotation_on_a_backup_bucket_is_a_reconcile_request() {
    bounded(async {
        let tc = extension_sdk::testing::TestCluster::start().await.unwrap();
        let actuator = Scripted::new(tc.client.clone(), Script::Succeed);
        let running = start::<BackupBucket, _>(&tc.client, actuator.clone(), config());
        let api = BackupBucket::api(tc.client.clone(), None);
        api.create(&PostParams::default(), &bucket()).await.unwrap();
        wait_state(&api, "bucket-1", T::Create, S::Succeeded).await;
        let deployer = Deployer::new(tc.client.clone()).with_timeout(Duration::from_secs(30));
        deployer.annotate::<BackupBucket>(None, "bucket-1", "migrate").await.unwrap();
        let obj = deployer.wait::<BackupBucket>(None, "bucket-1", Some(T::Reconcile)).await.unwrap();
        assert!(!obj.metadata.annotations.unwrap_or_default().contains_key("gardener.cloud/operation"));
        assert_eq!(Counts::get(&actuator.counts.migrate), 0);
        assert_eq!(Counts::get(&actuator.counts.reconcile), 2);
        running.stop().await;
    })
    .await
}
