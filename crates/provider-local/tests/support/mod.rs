//! Sample objects and small helpers shared by the integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use extension_sdk::ClusterContext;
use extension_sdk::api::Opaque;
use extension_sdk::api::common::SecretReference;
use extension_sdk::api::extensions::worker::{MachineImage, WorkerPool};
use extension_sdk::api::extensions::{Cluster, ClusterSpec, DefaultSpec, Worker, WorkerSpec};
use extension_sdk::testing::sample_shoot;
use serde_json::json;
use std::future::Future;
use std::time::Duration;

/// The shoot namespace (technical ID) the samples live in.
pub const NS: &str = "shoot--dev--local";

/// Bounds a test; a hang becomes a failure naming the limit.
pub async fn bounded<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(240), f).await.expect("the test did not finish within 240 s")
}

pub fn default_spec(type_: &str) -> DefaultSpec {
    DefaultSpec { type_: type_.into(), ..Default::default() }
}

pub fn cloudprovider() -> SecretReference {
    SecretReference { name: "cloudprovider".into(), namespace: Some(NS.into()) }
}

/// A Cluster context for `NS`, hibernated or not.
pub fn cluster(hibernated: bool) -> ClusterContext {
    let mut shoot = sample_shoot("local");
    shoot["spec"]["hibernation"] = json!({"enabled": hibernated});
    ClusterContext::new(Cluster::new(
        NS,
        ClusterSpec { cloud_profile: Opaque(json!({})), seed: Opaque(json!({})), shoot: Opaque(shoot) },
    ))
}

pub fn pool(name: &str, minimum: i32, image: &str) -> WorkerPool {
    WorkerPool {
        name: name.into(),
        machine_type: "local".into(),
        machine_image: MachineImage { name: "local".into(), version: "1.0.0".into(), provider_config: None },
        minimum,
        maximum: minimum + 2,
        provider_config: Some(Opaque(json!({"image": image}))),
        user_data: "IyEvYmluL2Jhc2gKZWNobyBoZWxsbwo=".into(),
        ..Default::default()
    }
}

pub fn worker(pools: Vec<WorkerPool>) -> Worker {
    let mut w = Worker::new(
        "worker",
        WorkerSpec {
            default: default_spec("local"),
            infrastructure_provider_status: None,
            region: "local".into(),
            secret_ref: cloudprovider(),
            ssh_public_key: None,
            pools,
        },
    );
    w.metadata.namespace = Some(NS.into());
    w
}

/// provider-local's chart installed into the test cluster (its ServiceAccount and RBAC; CRDs
/// are the cluster's own), and a client acting as that ServiceAccount, so a test proves the
/// chart grants what the actuators use.
pub async fn as_provider_local(
    tc: &extension_sdk::testing::TestCluster,
) -> Result<extension_sdk::kube::Client, String> {
    use extension_sdk::testing::testenv;
    let chart = testenv::helm::chart("gardener/provider-local");
    let values = json!({"replicas": 1});
    testenv::helm::install(&tc.env, "gardener-extension-provider-local", &chart, "garden", &values, false)
        .await
        .map_err(|e| e.to_string())?;
    tc.env.client_as_service_account("garden", "gardener-extension-provider-local").await.map_err(|e| e.to_string())
}

/// [`as_provider_local`] for `Conformance::with_identity`.
#[allow(clippy::type_complexity)] // the SDK's BoxFuture, spelled out (no futures dependency here)
pub fn chart_identity(
    tc: &extension_sdk::testing::TestCluster,
) -> std::pin::Pin<Box<dyn Future<Output = Result<extension_sdk::kube::Client, String>> + Send + '_>> {
    Box::pin(as_provider_local(tc))
}
