//! What the benches set up alike: the garden namespace, the test actuators, the Shoot they
//! create, and gardenlet as a process of its own.

use crate::support::actuators::{TestActuator, spawn_controller};
use api::core::Shoot;
use api::extensions as ext;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use std::path::Path;

const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: NAME\n  namespace: garden-dev\n  labels:\n    name.seed.gardener.cloud/SEED: \"true\"\nspec:\n  seedName: SEED\n  region: local\n  provider:\n    type: local\n    workers:\n    - name: pool\n      minimum: 1\n      maximum: 2\n      machine:\n        type: local\n        image:\n          name: local\n          version: 1.0.0\n  kubernetes:\n    version: 1.20.2\n  networking:\n    type: local-net\n    pods: 10.96.0.0/11\n    services: 10.112.0.0/13\n";

/// The CRDs and the project namespace `garden-dev` the shoots live in.
pub async fn prepare_garden(client: &kube::Client) {
    testenv::install_crds(client, &api::crds::all()).await.unwrap();
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "garden-dev"}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
}

/// The SDK test actuators for every extension kind a shoot needs (network type `local-net`).
/// They serve every seed: they watch all namespaces, by type.
pub fn spawn_actuators(client: &kube::Client) -> Vec<tokio::task::JoinHandle<()>> {
    vec![
        spawn_controller::<ext::Infrastructure>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::DNSRecord>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::ControlPlane>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::OperatingSystemConfig>(client.clone(), &["local"], TestActuator::new()),
        spawn_controller::<ext::Network>(client.clone(), &["local-net"], TestActuator::new()),
        spawn_controller::<ext::Worker>(client.clone(), &["local"], TestActuator::new()),
    ]
}

/// A shoot `name` with one pool, on seed `seed`.
pub fn shoot(name: &str, seed: &str) -> Shoot {
    serde_yaml::from_str(&SHOOT.replace("NAME", name).replace("SEED", seed)).unwrap()
}

/// Whether the shoot's last operation succeeded completely.
pub fn succeeded(s: &Shoot) -> bool {
    s.status
        .as_ref()
        .and_then(|st| st.last_operation.as_ref())
        .is_some_and(|l| l.state == api::common::LastOperationState::Succeeded && l.progress == 100)
}

/// gardenlet's configuration for seed `seed` (the `index`-th; its networks follow from it),
/// with a LoadBalancer kube-apiserver Service and the `controllers` settings given.
pub fn gardenlet_config(
    kubeconfig: &Path,
    seed: &str,
    index: usize,
    capacity: u32,
    controllers: &[(&str, u64)],
) -> String {
    let mut config = format!(
        "gardenKubeconfig: {}\nseed:\n  name: {seed}\n  capacityShoots: {capacity}\n  spec:\n    provider: {{type: local, region: local}}\n    networks: {{pods: 10.{}.0.0/16, services: 10.{}.0.0/16}}\nkubeApiserverServiceType: LoadBalancer\ncontrollers:\n",
        kubeconfig.display(),
        1 + 2 * index,
        2 + 2 * index,
    );
    for (name, value) in controllers {
        config += &format!("  {name}: {value}\n");
    }
    config
}

/// Starts the gardenlet binary with `config`, its metrics on `127.0.0.1:port` and without
/// leader election; its output is appended to `log`.
pub fn spawn_gardenlet(config: &Path, port: u16, log: &Path) -> std::process::Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_gardenlet"))
        .args([
            "--config",
            &config.display().to_string(),
            "--metrics-bind-address",
            &format!("127.0.0.1:{port}"),
            "--leader-election=false",
        ])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}
