//! A shoot's routes at the seed's entry point, against a real kube-apiserver: shoots published
//! at the same time keep each other's routes, a name another shoot has is refused naming that
//! shoot, and withdrawing removes only the shoot's own key.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gardenlet::config::ShootEntryConfig;
use gardenlet::shoot::entry::{self, Error};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;
use shoot_entry::routes::{self, ROUTES_CONFIGMAP};
use testenv::TestEnv;

#[tokio::test]
async fn routes_are_published_concurrently_and_never_taken_over() {
    let env = TestEnv::start().await.unwrap();
    let seed = env.client().await.unwrap();
    let config = ShootEntryConfig { namespace: "garden".into(), service: "shoot-entry".into() };
    let namespaces: Api<Namespace> = Api::all(seed.clone());
    namespaces
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "garden"}})).unwrap())
        .await
        .unwrap();

    // Ten shoots at once: every one's routes are there afterwards.
    let publishes = (0..10).map(|i| {
        let (seed, config) = (seed.clone(), config.clone());
        async move {
            let hosts = vec![format!("api.s{i}.p.internal.local"), format!("API.s{i}.example.com.")];
            entry::publish(&seed, &config, &format!("shoot--p--s{i}"), &hosts, &format!("10.96.0.{}", i + 10)).await
        }
    });
    for result in futures::future::join_all(publishes).await {
        result.unwrap();
    }
    let cms: Api<ConfigMap> = Api::namespaced(seed.clone(), "garden");
    let data = cms.get(ROUTES_CONFIGMAP).await.unwrap().data.unwrap();
    assert_eq!(data.len(), 10, "{data:?}");
    let (parsed, problems) = routes::parse(&data);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(parsed.len(), 20);
    assert_eq!(parsed["api.s3.example.com"].to_string(), "10.96.0.13", "names are stored normalized");

    // Publishing the same routes again writes nothing.
    let before = cms.get(ROUTES_CONFIGMAP).await.unwrap().metadata.resource_version;
    entry::publish(
        &seed,
        &config,
        "shoot--p--s3",
        &["api.s3.p.internal.local".into(), "api.s3.example.com".into()],
        "10.96.0.13",
    )
    .await
    .unwrap();
    assert_eq!(cms.get(ROUTES_CONFIGMAP).await.unwrap().metadata.resource_version, before);

    // Another shoot cannot have s3's name; the error names the shoot that has it.
    let err =
        entry::publish(&seed, &config, "shoot--q--x", &["api.s3.example.com".into()], "10.96.1.1").await.unwrap_err();
    assert!(matches!(&err, Error::Taken { other, .. } if other == "shoot--p--s3"), "{err}");
    assert!(err.to_string().contains("api.s3.example.com"), "{err}");
    // Nor can an address that is not one be published.
    let err =
        entry::publish(&seed, &config, "shoot--q--x", &["api.x.example.com".into()], "kas.example").await.unwrap_err();
    assert!(matches!(err, Error::BadAddress { .. }), "{err}");
    assert!(!cms.get(ROUTES_CONFIGMAP).await.unwrap().data.unwrap().contains_key("shoot--q--x"));

    // Withdrawing removes only the shoot's own key, and is idempotent.
    entry::withdraw(&seed, &config, "shoot--p--s3").await.unwrap();
    entry::withdraw(&seed, &config, "shoot--p--s3").await.unwrap();
    let data = cms.get(ROUTES_CONFIGMAP).await.unwrap().data.unwrap();
    assert_eq!(data.len(), 9);
    assert!(!data.contains_key("shoot--p--s3"));
    // Now the name is free.
    entry::publish(&seed, &config, "shoot--q--x", &["api.s3.example.com".into()], "10.96.1.1").await.unwrap();

    // The entry point's address: its Service's cluster IP (no load balancer here).
    let err = entry::address(&seed, &config).await.unwrap_err();
    assert!(matches!(err, Error::Service { .. }), "{err}");
    let services: Api<Service> = Api::namespaced(seed.clone(), "garden");
    let svc = services
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "shoot-entry"},
                "spec": {"ports": [{"name": "api", "port": 443}, {"name": "tunnel", "port": 8132}]}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let ip = svc.spec.unwrap().cluster_ip.unwrap();
    assert_eq!(entry::address(&seed, &config).await.unwrap(), ip);
}
