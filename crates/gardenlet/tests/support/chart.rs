//! gardenlet's chart in a test API server: its ServiceAccount and RBAC for the seed in the
//! given configuration, installed with Helm (CRDs are the test's own), and a client acting as
//! that ServiceAccount, so the tests prove the chart grants what gardenlet uses.

/// Installs the chart as release `gardenlet` in `garden` with `config` (gardenlet's
/// configuration, YAML) and returns a client for `garden/gardenlet`.
pub async fn gardenlet_client(env: &testenv::TestEnv, config: &str) -> kube::Client {
    gardenlet_client_in(env, config, "garden", true).await
}

/// Like [`gardenlet_client`], into `namespace`; `priority_class`: whether this release creates
/// the (cluster-wide) PriorityClass, which only one release in a cluster may own.
pub async fn gardenlet_client_in(
    env: &testenv::TestEnv,
    config: &str,
    namespace: &str,
    priority_class: bool,
) -> kube::Client {
    let values = serde_json::json!({
        "crds": {"enabled": false},
        "replicas": 1,
        "priorityClass": {"create": priority_class},
        "config": serde_yaml::from_str::<serde_json::Value>(config).unwrap_or_else(|e| panic!("config: {e}")),
    });
    testenv::helm::install(env, "gardenlet", &testenv::helm::chart("gardener/gardenlet"), namespace, &values, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    env.client_as_service_account(namespace, "gardenlet").await.unwrap_or_else(|e| panic!("{e}"))
}
