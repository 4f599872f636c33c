//! The gardenlet binary: `gardenlet --config <file>`.
//!
//! Registers the seed of the configuration file in the garden and runs the seed controller,
//! the shoot controller and the ShootState sync, with `/healthz`, `/readyz` and `/metrics` (address from `--metrics-addr`,
//! default `127.0.0.1:8090`), until SIGTERM or Ctrl+C.

use gardenlet::config::GardenletConfig;
use gardenlet::seed::SeedController;
use gardenlet::shoot::controller::{ShootController, default_backoff};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "usage: gardenlet --config <file> [--metrics-addr <host:port>]";

struct Args {
    config: PathBuf,
    metrics_addr: std::net::SocketAddr,
}

fn parse_args() -> Result<Args, String> {
    let mut config = None;
    let mut metrics_addr = "127.0.0.1:8090".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--config" => config = args.next(),
            "--metrics-addr" => metrics_addr = args.next().ok_or(USAGE)?,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other:?}; {USAGE}")),
        }
    }
    Ok(Args {
        config: config.map(PathBuf::from).ok_or_else(|| format!("--config is required; {USAGE}"))?,
        metrics_addr: metrics_addr.parse().map_err(|e| format!("--metrics-addr {metrics_addr:?}: {e}"))?,
    })
}

async fn client(kubeconfig: Option<&Path>) -> Result<kube::Client, Box<dyn std::error::Error>> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::infer().await?,
    };
    Ok(kube::Client::try_from(config)?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,kube=warn".into()),
        )
        .init();
    let args = match parse_args() {
        Ok(a) => a,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let config = Arc::new(GardenletConfig::load(&args.config)?);
    let garden = client(config.garden_kubeconfig.as_deref()).await?;
    let seed = match config.seed_kubeconfig.as_deref() {
        Some(path) => client(Some(path)).await?,
        None => garden.clone(),
    };
    let gardener = api::common::Gardener {
        id: format!("{}-{}", config.seed.name, std::process::id()),
        name: std::env::var("POD_NAME").unwrap_or_else(|_| "gardenlet".into()),
        version: env!("CARGO_PKG_VERSION").into(),
    };

    let mut runner_config = extension_sdk::runner::RunnerConfig::new("gardenlet", "garden");
    runner_config.http_addr = Some(args.metrics_addr);
    // The seed controller renews its own heartbeat Lease per seed.
    runner_config.heartbeat_interval = None;
    let mut runner = extension_sdk::runner::Runner::new(garden.clone(), runner_config)?;
    let seed_controller =
        SeedController::new(garden.clone(), config.seed.clone(), config.controllers.seed_heartbeat(), gardener);
    runner.add_task(move |stop| seed_controller.run(stop));
    let (sync_seed, sync_garden, sync_name) = (seed.clone(), garden.clone(), config.seed.name.clone());
    runner.add_task(move |stop| async move {
        tokio::select! {
            _ = gardenlet::shootstate_sync::run_all(sync_seed, sync_garden, gardenlet::shootstate_sync::SAFE_SIZE_BYTES, sync_name) => {}
            _ = stop => {}
        }
    });
    let shoots = ShootController {
        garden,
        seed,
        config: config.clone(),
        wait_timeout: Duration::from_secs(10 * 60),
        backoff: default_backoff(),
    };
    runner.add_task(move |stop| shoots.run(stop));
    tracing::info!(seed = %config.seed.name, "gardenlet started");
    runner.run_until_signal().await?;
    Ok(())
}
