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
