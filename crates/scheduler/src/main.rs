//! `gardener-scheduler`: runs the scheduler until SIGINT or SIGTERM. See `--help`.

use clap::Parser;
use extension_sdk::cli::{self, CommonArgs};
use futures::FutureExt;
use scheduler::Config;
use scheduler::http::{self, Readiness};
use scheduler::metrics::Metrics;
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
    common: CommonArgs,
}

async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
    tracing::info!("shutting down");
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli.common.init_logging();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return cli::exit_code(Err(e)),
    };
    cli::exit_code(runtime.block_on(run(cli)))
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let mut config = match &cli.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    // An explicit flag wins over the configuration file.
    if let Some(address) = cli.common.metrics_bind_address {
        config.bind_address = address;
    }
    tracing::info!(strategy = ?config.strategy, bind_address = %config.bind_address, "starting gardener-scheduler");
    let client = cli.common.client().await?;
    let metrics = Metrics::new()?;
    let readiness = Readiness::default();
    let shutdown = shutdown_signal().shared();

    let listener = tokio::net::TcpListener::bind(config.bind_address).await?;
    let server = tokio::spawn(http::serve(listener, metrics.clone(), readiness.clone(), shutdown.clone()));
    scheduler::controller::run(client, config, metrics, readiness, shutdown).await?;
    server.await??;
    Ok(())
}
