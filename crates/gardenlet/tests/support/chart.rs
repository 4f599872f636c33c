//! gardenlet's chart in a test API server: its ServiceAccount and RBAC for the seed in the
//! given configuration, installed with Helm (CRDs are the test's own), and a client acting as
//! that ServiceAccount, so the tests prove the chart grants what gardenlet uses.

/// Installs the chart as release `gardenlet` in `garden` with `config` (gardenlet's
/// configuration, YAML) and returns a client for `garden/gardenlet`.
pub async fn gardenlet_client(env: &testenv::TestEnv, config: &str) -> kube::Client {
    let values = serde_json::json!({
        "crds": {"enabled": false},
        "replicas": 1,
        "config": serde_yaml::from_str::<serde_json::Value>(config).unwrap_or_else(|e| panic!("config: {e}")),
    });
    testenv::helm::install(env, "gardenlet", &testenv::helm::chart("gardener/gardenlet"), "garden", &values, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    env.client_as_service_account("garden", "gardenlet").await.unwrap_or_else(|e| panic!("{e}"))
}
