//! The provider-local chart's RBAC on a real API server: every controller of provider-local
//! runs (as the binary runs them, with its leader and heartbeat Leases) as the chart's
//! ServiceAccount with the chart's rules installed by Helm; a DNSRecord and a Network are
//! reconciled to Succeeded. Take away the rule for the DNS zone ConfigMaps and the next record
//! fails with `forbidden`, named in its lastError.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::api::common::LastOperationState;
use extension_sdk::api::extensions::dnsrecord::DnsRecordType;
use extension_sdk::api::extensions::{DNSRecord, DNSRecordSpec, Network, NetworkSpec};
use extension_sdk::k8s_openapi::api::coordination::v1::Lease;
use extension_sdk::k8s_openapi::api::rbac::v1::ClusterRole;
use extension_sdk::kinds::ExtensionResource;
use extension_sdk::kube::api::{Patch, PatchParams, PostParams};
use extension_sdk::kube::{Api, Client};
use extension_sdk::testing::{TestCluster, sample_shoot, testenv};
use extension_sdk::{LeaderElectionConfig, Runner, RunnerConfig};
use std::time::{Duration, Instant};
use support::*;

const RELEASE_NS: &str = "garden";
const ROLE: &str = "gardener.cloud:extension:provider-local";

fn record(name: &str, value: &str) -> DNSRecord {
    let mut r = DNSRecord::new(
        name,
        DNSRecordSpec {
            default: default_spec("local"),
            secret_ref: cloudprovider(),
            zone: Some("local.example".into()),
            name: format!("{name}.local.example"),
            record_type: DnsRecordType::A,
            values: vec![value.into()],
            ttl: Some(60),
            ..Default::default()
        },
    );
    r.metadata.namespace = Some(NS.into());
    r
}

/// Waits until `name`'s lastOperation is `Succeeded` (Ok) or its lastError mentions `needle`.
async fn outcome<K: ExtensionResource>(client: &Client, name: &str, needle: &str) -> Result<(), String> {
    let api = K::api(client.clone(), Some(NS));
    let start = Instant::now();
    loop {
        let obj = api.get(name).await.unwrap();
        let status = obj.default_status();
        let state = status.and_then(|s| s.last_operation.as_ref()).map(|l| l.state);
        let error = status.and_then(|s| s.last_error.as_ref()).map(|e| e.description.clone()).unwrap_or_default();
        if state == Some(LastOperationState::Succeeded) {
            return Ok(());
        }
        if !needle.is_empty() && error.contains(needle) {
            return Err(error);
        }
        assert!(start.elapsed() < Duration::from_secs(90), "{name}: state {state:?}, last error {error:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn the_chart_rbac_is_what_provider_local_needs_and_no_rule_can_go() {
    bounded(async {
        let tc = TestCluster::start().await.unwrap();
        let chart = testenv::helm::chart("gardener/provider-local");
        testenv::helm::lint(&chart).await.unwrap_or_else(|e| panic!("{e}"));
        let values = serde_json::json!({"replicas": 1});
        testenv::helm::install(&tc.env, "gardener-extension-provider-local", &chart, RELEASE_NS, &values, false)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        tc.namespace(NS).await.unwrap();
        tc.cluster(NS, sample_shoot("local")).await.unwrap();

        let sa = tc.env.client_as_service_account(RELEASE_NS, "gardener-extension-provider-local").await.unwrap();
        let mut config = RunnerConfig::new("provider-local", RELEASE_NS);
        config.http_addr = None;
        config.heartbeat_interval = Some(Duration::from_secs(30));
        config = config.leader_election(LeaderElectionConfig::new(
            "provider-local-leader-election",
            RELEASE_NS,
            "rbac-test",
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut runner = Runner::new(sa.clone(), config).unwrap().with_listener(listener);
        provider_local::register(&mut runner, &sa, &provider_local::Settings::default());
        let running = tokio::spawn(async move { runner.run(std::future::pending()).await.unwrap() });

        let admin = tc.client.clone();
        let records = DNSRecord::api(admin.clone(), Some(NS));
        records.create(&PostParams::default(), &record("api", "10.0.0.1")).await.unwrap();
        let spec = NetworkSpec {
            default: default_spec("local"),
            pod_cidr: "10.96.0.0/11".into(),
            service_cidr: "10.112.0.0/13".into(),
            ..Default::default()
        };
        let mut network = Network::new("network", spec);
        network.metadata.namespace = Some(NS.into());
        Network::api(admin.clone(), Some(NS)).create(&PostParams::default(), &network).await.unwrap();
        outcome::<DNSRecord>(&admin, "api", "").await.unwrap();
        outcome::<Network>(&admin, "network", "").await.unwrap();
        let leases = Api::<Lease>::namespaced(admin.clone(), RELEASE_NS);
        let leader = leases.get("provider-local-leader-election").await.unwrap();
        assert_eq!(leader.spec.and_then(|s| s.holder_identity).as_deref(), Some("rbac-test"));

        // Without the ConfigMap rule, the zone cannot be written.
        let roles = Api::<ClusterRole>::all(admin.clone());
        let mut role = roles.get(ROLE).await.unwrap();
        role.rules.as_mut().unwrap().retain(|r| r.resources.as_deref() != Some(&["configmaps".to_string()][..]));
        role.metadata.managed_fields = None;
        roles.patch(ROLE, &PatchParams::apply("rbac-test").force(), &Patch::Apply(&role)).await.unwrap();
        records.create(&PostParams::default(), &record("second", "10.0.0.2")).await.unwrap();
        let error = outcome::<DNSRecord>(&admin, "second", "forbidden").await.expect_err("the record must fail");
        assert!(error.contains("gardener-extension-provider-local"), "{error}");
        running.abort();
    })
    .await
}
