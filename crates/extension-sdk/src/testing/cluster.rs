//! A real API server for extension tests: etcd and kube-apiserver from `testenv`, every CRD of
//! `api` installed, and helpers for namespaces and `Cluster` objects.

use super::{ConformanceError, err};
use api::Opaque;
use api::extensions::{Cluster, ClusterSpec};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use std::fmt;

/// A real API server with every CRD installed.
pub struct TestCluster {
    pub env: testenv::TestEnv,
    pub client: Client,
}

impl fmt::Debug for TestCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestCluster").field("server", &self.env.server_url()).finish()
    }
}

impl TestCluster {
    /// Starts etcd and kube-apiserver and installs every CRD of `api`.
    pub async fn start() -> Result<Self, ConformanceError> {
        let env = testenv::TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..Default::default() })
            .await
            .map_err(|e| err("setup", format!("starting the test control plane: {e}")))?;
        let client = env.client().await.map_err(|e| err("setup", e))?;
        Ok(Self { env, client })
    }

    /// Creates a namespace (no error when it exists).
    pub async fn namespace(&self, name: &str) -> Result<(), ConformanceError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let ns = Namespace {
            metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() },
            ..Default::default()
        };
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) => Err(err("setup", format!("creating namespace {name}: {e}"))),
        }
    }

    /// Creates or replaces the Cluster `name` with the given shoot (seed and cloud profile minimal).
    pub async fn cluster(&self, name: &str, shoot: Value) -> Result<(), ConformanceError> {
        let cluster = Cluster::new(
            name,
            ClusterSpec {
                cloud_profile: Opaque(
                    json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "CloudProfile", "metadata": {"name": "local"}}),
                ),
                seed: Opaque(
                    json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed", "metadata": {"name": "local"}}),
                ),
                shoot: Opaque(shoot),
            },
        );
        let api: Api<Cluster> = Api::all(self.client.clone());
        api.patch(name, &PatchParams::apply("conformance").force(), &Patch::Apply(&cluster))
            .await
            .map_err(|e| err("setup", format!("applying Cluster {name}: {e}")))?;
        Ok(())
    }
}

/// A shoot as a Cluster carries it: healthy, of the given provider type.
pub fn sample_shoot(provider_type: &str) -> Value {
    json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "Shoot",
        "metadata": {"name": "conformance", "namespace": "garden-conformance", "generation": 1},
        "spec": {"provider": {"type": provider_type}, "kubernetes": {"version": "1.33.0"}, "region": "local"},
        "status": {"lastOperation": {"type": "Reconcile", "state": "Succeeded", "progress": 100}}
    })
}
