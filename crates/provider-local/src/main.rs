//! `gardener-extension-provider-local`: runs the provider-local controllers with the SDK's
//! runner (HTTP endpoints, leader election, heartbeat, graceful shutdown). See `--help`.

use clap::Parser;
use extension_sdk::cli;
use extension_sdk::{Runner, RunnerConfig};
use provider_local::cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Registration { image, replicas, policy, machine_image }) = cli.command {
        let options = provider_local::registration::Options { image, replicas, policy, machine_image };
        return match provider_local::registration::documents(&options) {
            Ok(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    cli.common.init_logging();
    cli::block_on(run(cli))
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let settings = cli.settings();
    let client = cli.common.client().await?;
    let mut config = RunnerConfig::new("provider-local", cli.leader_election.namespace.clone());
    config.http_addr = Some(cli.common.metrics_bind_address());
    config.metrics_prefix = "provider_local".into();
    if let Some(le) = cli.leader_election.config("provider-local") {
        config = config.leader_election(le);
    }
    tracing::info!(controllers = ?settings.controllers, backup_root = %settings.backup.root.display(), "starting");
    let mut runner = Runner::new(client.clone(), config)?;
    provider_local::register(&mut runner, &client, &settings);
    runner.run_until_signal().await?;
    Ok(())
}
