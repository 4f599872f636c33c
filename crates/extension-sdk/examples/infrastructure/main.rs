//! An example extension process: serves `Infrastructure` objects of type `example` in the
//! cluster of the current kubeconfig (`KUBECONFIG`, or in-cluster config).
//!
//! ```sh
//! kubectl apply -f crds/                       # the CRDs must be installed
//! cargo run -p extension-sdk --example infrastructure
//! ```
//!
//! Settings come from the environment: `NAMESPACE` (where the leader and heartbeat Leases
//! live, default `default`), `POD_NAME` (leader-election identity, default the host name) and
//! `METRICS_ADDR` (default `0.0.0.0:8080`).

mod actuator;

use actuator::{ExampleInfrastructure, TYPE};
use extension_sdk::kube::Client;
use extension_sdk::{ControllerConfig, ExtensionController, LeaderElectionConfig, Runner, RunnerConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,kube=warn".into()),
        )
        .init();

    let namespace = std::env::var("NAMESPACE").unwrap_or_else(|_| "default".into());
    let identity = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("provider-example-{}", std::process::id()));

    let client = Client::try_default().await?;
    let mut config = RunnerConfig::new("provider-example", namespace.clone())
        .leader_election(LeaderElectionConfig::new("provider-example-leader-election", namespace, identity));
    if let Ok(addr) = std::env::var("METRICS_ADDR") {
        config.http_addr = Some(addr.parse()?);
    }
    let mut runner = Runner::new(client.clone(), config)?;
    runner.add_controller(ExtensionController::new(
        client.clone(),
        ExampleInfrastructure::new(client),
        ControllerConfig::new([TYPE]),
        runner.metrics(),
    ));
    runner.run_until_signal().await?;
    Ok(())
}
