//! `gardener-extension-provider-local`: runs the provider-local controllers with the SDK's
//! runner (HTTP endpoints, leader election, heartbeat, graceful shutdown). See `--help`.

use extension_sdk::kube::Client;
use extension_sdk::{LeaderElectionConfig, Runner, RunnerConfig};
use provider_local::cli;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = match cli::parse(std::env::args().skip(1), std::env::var("NAMESPACE").ok()) {
        Ok(o) if o.help => {
            print!("{}", cli::USAGE);
            return Ok(());
        }
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}\n\n{}", cli::USAGE);
            std::process::exit(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,kube=warn".into()),
        )
        .init();

    let client = Client::try_default().await?;
    let mut config = RunnerConfig::new("provider-local", options.namespace.clone());
    config.http_addr = options.http_addr;
    config.metrics_prefix = "provider_local".into();
    if options.leader_election {
        let identity = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| format!("provider-local-{}", std::process::id()));
        config = config.leader_election(LeaderElectionConfig::new(
            options.leader_election_id.clone(),
            options.namespace.clone(),
            identity,
        ));
    }
    tracing::info!(controllers = ?options.settings.controllers, backup_root = %options.settings.backup.root.display(), "starting");
    let mut runner = Runner::new(client.clone(), config)?;
    provider_local::register(&mut runner, &client, &options.settings);
    runner.run_until_signal().await?;
    Ok(())
}
