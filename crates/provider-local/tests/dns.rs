//! DNSRecord on a real kube-apiserver: records of two shoots in one zone do not clobber each
//! other, a record owned by another shoot is not taken over, and delete removes only its own.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::api::common::ErrorCode;
use extension_sdk::api::extensions::dnsrecord::DnsRecordType;
use extension_sdk::api::extensions::{DNSRecord, DNSRecordSpec};
use extension_sdk::k8s_openapi::api::core::v1::ConfigMap;
use extension_sdk::kube::Api;
use extension_sdk::testing::TestCluster;
use extension_sdk::{Actuator, ClusterContext};
use provider_local::LocalDnsRecord;
use std::collections::BTreeMap;
use support::*;

const DNS_NS: &str = "provider-local-dns";

fn record(shoot_ns: &str, name: &str, values: &[&str]) -> DNSRecord {
    let mut r = DNSRecord::new(
        "api-external",
        DNSRecordSpec {
            default: default_spec("local"),
            secret_ref: cloudprovider(),
            zone: Some("local.example".into()),
            name: name.into(),
            record_type: DnsRecordType::A,
            values: values.iter().map(|v| v.to_string()).collect(),
            ttl: Some(60),
            ..Default::default()
        },
    );
    r.metadata.namespace = Some(shoot_ns.into());
    r
}

async fn zone(tc: &TestCluster) -> BTreeMap<String, String> {
    let api: Api<ConfigMap> = Api::namespaced(tc.client.clone(), DNS_NS);
    api.get("zone-local.example").await.unwrap().data.unwrap_or_default()
}

#[tokio::test]
async fn records_of_two_shoots_in_one_zone_do_not_clobber_each_other() {
    bounded(async {
        let tc = TestCluster::start().await.unwrap();
        let dns = LocalDnsRecord::new(as_provider_local(&tc).await.unwrap(), DNS_NS);
        let none = ClusterContext::none();
        let a = record("shoot--dev--a", "api.a.local.example", &["10.0.0.1"]);
        let b = record("shoot--dev--b", "api.b.local.example", &["10.0.0.2"]);

        // Both at once: each writes only its key, guarded by the resourceVersion.
        let (ra, rb) = tokio::join!(dns.reconcile(&a, &none), dns.reconcile(&b, &none));
        ra.unwrap();
        rb.unwrap();
        let data = zone(&tc).await;
        assert_eq!(data.len(), 2, "{data:?}");
        assert!(data["api.a.local.example.A"].contains("api.a.local.example. 60 IN A 10.0.0.1"));
        assert!(data["api.a.local.example.A"].contains("owner=shoot--dev--a/api-external"));
        assert!(data["api.b.local.example.A"].contains("10.0.0.2"));

        // Updating one leaves the other alone.
        let a2 = record("shoot--dev--a", "api.a.local.example", &["10.0.0.3"]);
        let outcome = dns.reconcile(&a2, &none).await.unwrap();
        assert_eq!(outcome.state.as_ref().unwrap()["zone"], "local.example");
        let data = zone(&tc).await;
        assert!(data["api.a.local.example.A"].contains("10.0.0.3"));
        assert!(data["api.b.local.example.A"].contains("10.0.0.2"));

        // Shoot a may not take over shoot b's name.
        let thief = record("shoot--dev--a", "api.b.local.example", &["10.9.9.9"]);
        let err = dns.reconcile(&thief, &none).await.unwrap_err();
        assert!(err.chain().contains("owned by shoot--dev--b/api-external"), "{}", err.chain());
        assert_eq!(err.codes(), &[ErrorCode::ConfigurationProblem]);
        // ... nor delete it.
        dns.delete(&thief, &none).await.unwrap();
        assert!(zone(&tc).await["api.b.local.example.A"].contains("10.0.0.2"));

        // Deleting a removes only a's record.
        dns.delete(&a2, &none).await.unwrap();
        let data = zone(&tc).await;
        assert_eq!(data.keys().collect::<Vec<_>>(), vec!["api.b.local.example.A"]);
        dns.delete(&a2, &none).await.unwrap();
    })
    .await;
}
