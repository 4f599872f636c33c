//! The conformance suite, run against the example extension (`examples/infrastructure`) on a
//! real kube-apiserver.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

#[path = "../examples/infrastructure/actuator.rs"]
mod actuator;

use actuator::{ExampleInfrastructure, TYPE};
use extension_sdk::api::common::SecretReference;
use extension_sdk::api::extensions::{DefaultSpec, Infrastructure, InfrastructureSpec};
use extension_sdk::testing::Conformance;
use std::time::Duration;

fn sample() -> Infrastructure {
    let mut infra = Infrastructure::new(
        "infra",
        InfrastructureSpec {
            default: DefaultSpec { type_: TYPE.into(), ..Default::default() },
            region: "local-1".into(),
            secret_ref: SecretReference {
                name: "cloudprovider".into(),
                namespace: Some("shoot--dev--conformance".into()),
            },
            ssh_public_key: None,
        },
    );
    infra.metadata.namespace = Some("shoot--dev--conformance".into());
    infra
}

#[tokio::test]
async fn example_infrastructure_passes_the_conformance_suite() {
    let run = async {
        // The actuator needs a client of the test cluster, which the harness starts; it
        // builds the actuator from that client.
        Conformance::with_client(ExampleInfrastructure::new, sample())
            .with_spec_update(|infra| infra.spec.region = "local-2".into())
            .run()
            .await
    };
    let report = tokio::time::timeout(Duration::from_secs(240), run)
        .await
        .expect("the conformance run timed out")
        .unwrap_or_else(|e| panic!("{e}"));
    println!("{report}");
    assert_eq!(report.noop_calls, 0);
    assert!(report.noop_reconciles >= 10, "the no-op updates were not all seen: {}", report.noop_reconciles);
    assert_eq!(report.calls.get("Reconcile"), Some(&3));
    assert_eq!(report.calls.get("Migrate"), Some(&1));
    assert_eq!(report.calls.get("Restore"), Some(&1));
    assert_eq!(report.calls.get("Delete"), Some(&1));
}
