//! `gardener-scheduler`: runs the scheduler until SIGINT or SIGTERM. See `--help`.

use clap::Parser;
use runtime::Runner;
use runtime::cli::LeaderElectionArgs;
use runtime::cli::{self, CommonArgs};
use scheduler::Config;
use std::path::PathBuf;
use std::process::ExitCode;

/// Places new shoots on seeds.
#[derive(Parser, Debug)]
#[command(name = "gardener-scheduler", version)]
struct Cli {
    /// The scheduler configuration (YAML or JSON); defaults apply without it. See
    /// docs/scheduler.md.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    leader_election: LeaderElectionArgs,
    #[command(flatten)]
    common: CommonArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli.common.init_logging();
    cli::block_on(run(cli))
}

/// The component name: leader Lease, metrics and logs.
const NAME: &str = "gardener-scheduler";

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let mut config: Config = runtime::config::load_or_default(cli.config.as_deref())?;
    // An explicit flag wins over the configuration file.
    if let Some(address) = cli.common.metrics_bind_address {
        config.bind_address = address;
    }
    tracing::info!(strategy = ?config.strategy, bind_address = %config.bind_address, "starting gardener-scheduler");
    let client = cli.common.client().await?;

    // The SDK's runner serves /healthz, /readyz and /metrics, holds the leader Lease, and stops
    // the controller on SIGTERM (releasing the Lease).
    let mut runner = Runner::new(client.clone(), cli.leader_election.runner_config(NAME, NAME, config.bind_address))?;
    scheduler::app::add_to(&mut runner, client, config)?;
    runner.run_until_signal().await?;
    Ok(())
}
