//! OperatingSystemConfig on a real kube-apiserver: secret-referenced content is read from the
//! object's namespace, the output is byte-identical for the same input, and a missing Secret is
//! a retryable dependency.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::api::common::ErrorCode;
use extension_sdk::api::extensions::operatingsystemconfig::{
    File, FileContent, FileContentInline, FileContentSecretRef, OperatingSystemConfigPurpose, Unit,
};
use extension_sdk::api::extensions::{OperatingSystemConfig, OperatingSystemConfigSpec};
use extension_sdk::k8s_openapi::ByteString;
use extension_sdk::k8s_openapi::api::core::v1::Secret;
use extension_sdk::kube::Api;
use extension_sdk::kube::api::{ObjectMeta, PostParams};
use extension_sdk::testing::TestCluster;
use extension_sdk::{Actuator, ClusterContext};
use provider_local::LocalOperatingSystemConfig;
use std::collections::BTreeMap;
use support::*;

fn osc() -> OperatingSystemConfig {
    let mut o = OperatingSystemConfig::new(
        "osc-pool",
        OperatingSystemConfigSpec {
            default: default_spec("local"),
            purpose: OperatingSystemConfigPurpose::Provision,
            units: vec![Unit {
                name: "kubelet.service".into(),
                content: Some("[Service]\n".into()),
                ..Default::default()
            }],
            files: vec![
                File {
                    path: "/var/lib/kubelet/token".into(),
                    permissions: Some(0o600),
                    content: FileContent {
                        secret_ref: Some(FileContentSecretRef { name: "bootstrap".into(), data_key: "token".into() }),
                        ..Default::default()
                    },
                },
                File {
                    path: "/etc/motd".into(),
                    permissions: None,
                    content: FileContent {
                        inline: Some(FileContentInline { encoding: "b64".into(), data: "aGVsbG8K".into() }),
                        ..Default::default()
                    },
                },
            ],
            ..Default::default()
        },
    );
    o.metadata.namespace = Some(NS.into());
    o
}

#[tokio::test]
async fn osc_output_is_deterministic_and_reads_referenced_secrets() {
    bounded(async {
        let tc = TestCluster::start().await.unwrap();
        tc.namespace(NS).await.unwrap();
        let actuator = LocalOperatingSystemConfig::new(as_provider_local(&tc).await.unwrap(), None);
        let none = ClusterContext::none();

        let err = actuator.reconcile(&osc(), &none).await.unwrap_err();
        assert_eq!(err.codes(), &[ErrorCode::RetryableInfraDependencies], "{}", err.chain());
        assert!(err.chain().contains("Secret bootstrap has no key token"), "{}", err.chain());

        let secret = Secret {
            metadata: ObjectMeta { name: Some("bootstrap".into()), ..Default::default() },
            data: Some(BTreeMap::from([("token".to_string(), ByteString(b"abc123".to_vec()))])),
            ..Default::default()
        };
        Api::<Secret>::namespaced(tc.client.clone(), NS).create(&PostParams::default(), &secret).await.unwrap();

        let first = actuator.reconcile(&osc(), &none).await.unwrap().output.unwrap();
        let second = actuator.reconcile(&osc(), &none).await.unwrap().output.unwrap();
        assert_eq!(first, second, "the same input gave different output");
        let script = String::from_utf8(first.user_data.clone()).unwrap();
        // "abc123" and "hello\n", base64-encoded for transport.
        assert!(script.contains("base64 -d > '/var/lib/kubelet/token' <<'PROVIDER_LOCAL_EOF'\nYWJjMTIz\n"), "{script}");
        assert!(script.contains("chmod 0600 '/var/lib/kubelet/token'"));
        assert!(script.contains("aGVsbG8K"));
        assert_eq!(first.units, vec!["kubelet.service"]);
    })
    .await;
}
