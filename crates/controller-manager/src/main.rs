//! `gardener-controller-manager`: runs the garden's own controllers until SIGINT or SIGTERM.
//! See `--help` and docs/controller-manager.md.

use ::runtime::Runner;
use ::runtime::cli::{self, CommonArgs, LeaderElectionArgs};
use clap::Parser;
use controller_manager::{Config, SystemClock, app};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// The garden's own controllers (projects, seed lifecycle, bastion expiry, hibernation
/// schedules, maintenance, protection) and its admission webhooks.
#[derive(Parser, Debug)]
#[command(name = "gardener-controller-manager", version)]
struct Cli {
    /// The configuration file (YAML or JSON); defaults apply without it. See
    /// docs/controller-manager.md.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    leader_election: LeaderElectionArgs,
    #[command(flatten)]
    common: CommonArgs,
}

/// The component name: leader Lease (`gardener-controller-manager-leader-election`), logs.
const NAME: &str = "gardener-controller-manager";

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli.common.init_logging();
    cli::block_on(run(cli))
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let mut config: Config = ::runtime::config::load_or_default(cli.config.as_deref())?;
    // An explicit flag wins over the configuration file.
    if let Some(address) = cli.common.metrics_bind_address {
        config.bind_address = address;
    }
    tracing::info!(bind_address = %config.bind_address, "starting gardener-controller-manager");
    let client = cli.common.client().await?;

    let mut runner = Runner::new(client.clone(), cli.leader_election.runner_config(NAME, NAME, config.bind_address))?;
    if config.admission.enabled {
        admission::server::add_to(&mut runner, client.clone(), config.admission.server())?;
    }
    app::add_to(&mut runner, client, &config, Arc::new(SystemClock))?;
    runner.run_until_signal().await?;
    Ok(())
}
