//! The gardenlet binary: `gardenlet --config <file>`.
//!
//! Registers the seed of the configuration file in the garden and runs the seed controller,
//! the shoot controller, the ControllerInstallation controller, the Bastion controller, the BackupEntry controller, the ManagedSeed controller and the
//! ShootState sync, with `/healthz`, `/readyz` and `/metrics` on
//! `--metrics-bind-address`, until SIGTERM or Ctrl+C. See `--help`.

use clap::Parser;
use gardenlet::config::GardenletConfig;
use gardenlet::seed::SeedController;
use gardenlet::shoot::controller::{ShootController, default_backoff};
use runtime::cli::{self, CommonArgs, LeaderElectionArgs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// A seed's gardenlet: registers the seed and runs the control planes of its shoots.
#[derive(Parser, Debug)]
#[command(name = "gardenlet", version)]
struct Cli {
    /// The gardenlet configuration (YAML): the seed, the garden and seed kubeconfigs, controller
    /// settings. See docs/gardenlet.md.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
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

/// The garden client's configuration, the seed client when it is not the garden, and the
/// bootstrap with its certificate when the garden identity is obtained by CSR.
type Clients = (
    kube::Config,
    Option<kube::Client>,
    Option<(gardenlet::bootstrap::Bootstrap, gardenlet::bootstrap::decide::Certificate)>,
);

/// With gardenClientConnection the garden identity is a client certificate obtained by CSR
/// (gardenlet::bootstrap), and the seed is --kubeconfig (or in-cluster) unless seedKubeconfig
/// says otherwise. Without it, the configuration's garden kubeconfig wins over --kubeconfig,
/// which wins over inference, and the seed is the garden unless configured.
async fn clients(config: &GardenletConfig, cli: &Cli) -> Result<Clients, Box<dyn std::error::Error>> {
    match &config.garden_client_connection {
        Some(connection) => {
            let seed = cli::client(config.seed_kubeconfig.as_deref().or(cli.common.kubeconfig.as_deref())).await?;
            let bootstrap = gardenlet::bootstrap::Bootstrap {
                seed_name: config.seed.name.clone(),
                connection: connection.clone(),
                seed: seed.clone(),
                timeout: gardenlet::bootstrap::DEFAULT_TIMEOUT,
            };
            let identity = bootstrap.identity().await?;
            Ok((identity.config, Some(seed), Some((bootstrap, identity.certificate))))
        }
        None => {
            let garden_config =
                cli::config(config.garden_kubeconfig.as_deref().or(cli.common.kubeconfig.as_deref())).await?;
            let seed = match config.seed_kubeconfig.as_deref() {
                Some(path) => Some(cli::client(Some(path)).await?),
                None => None,
            };
            Ok((garden_config, seed, None))
        }
    }
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let config = Arc::new(GardenletConfig::load(&cli.config)?);
    let (garden_config, seed, bootstrap) = clients(&config, &cli).await?;
    let garden_endpoint = gardenlet::managedseed::GardenEndpoint::from_config(&garden_config, &config.managed_seeds)
        .map_err(|e| {
            let file = config.managed_seeds.garden_cluster_ca_file.as_deref().unwrap_or(std::path::Path::new(""));
            format!("managedSeeds.gardenClusterCAFile {}: {e}", file.display())
        })?;
    let garden = kube::Client::try_from(garden_config)?;
    let seed = seed.unwrap_or_else(|| garden.clone());
    // The certificate's renewal runs on every replica (not only the leader): each must restart
    // with the new certificate. It resolves once the Secret holds a newer one.
    let renewal = {
        let garden = garden.clone();
        async move {
            match bootstrap {
                Some((bootstrap, certificate)) => {
                    gardenlet::bootstrap::renew::run(bootstrap, certificate, garden).await
                }
                None => std::future::pending().await,
            }
        }
    };
    let gardener = api::common::Gardener {
        id: format!("{}-{}", config.seed.name, std::process::id()),
        name: std::env::var("POD_NAME").unwrap_or_else(|_| "gardenlet".into()),
        version: env!("CARGO_PKG_VERSION").into(),
    };

    // No heartbeat Lease of the runner's: the seed controller renews its own per seed. One leader
    // Lease per seed (`gardenlet-<seed>-leader-election`): the gardenlets of different seeds share
    // the garden's namespace but never each other's Lease.
    let lease = format!("gardenlet-{}", config.seed.name);
    let runner_config = cli.leader_election.runner_config("gardenlet", &lease, cli.common.metrics_bind_address());
    let mut runner = runtime::runner::Runner::new(garden.clone(), runner_config)?;
    let seed_controller =
        SeedController::new(garden.clone(), config.seed.clone(), config.controllers.seed_heartbeat(), gardener)
            .with_seed_cluster(seed.clone());
    runner.add_task(move |stop| seed_controller.run(stop));
    let (sync_seed, sync_garden, sync_name) = (seed.clone(), garden.clone(), config.seed.name.clone());
    runner.add_task(move |stop| async move {
        tokio::select! {
            _ = gardenlet::shootstate_sync::run_all(sync_seed, sync_garden, gardenlet::shootstate_sync::SAFE_SIZE_BYTES, sync_name) => {}
            _ = stop => {}
        }
    });
    add_garden_object_controllers(&mut runner, &config, &garden, &seed);
    let managed_seed_ctx = gardenlet::managedseed::Context {
        seed_name: config.seed.name.clone(),
        garden: garden.clone(),
        seed: seed.clone(),
        parent: config.clone(),
        endpoint: garden_endpoint,
        image: config.managed_seeds.gardenlet_image(),
        poll: Duration::from_secs(5),
    };
    let managed_seed_concurrency = config.managed_seeds.concurrent_syncs();
    runner.add_task_with_readiness(move |stop, ready| {
        gardenlet::managedseed::run(managed_seed_ctx, managed_seed_concurrency, stop, ready)
    });
    // One cache of this seed's Shoots, filled by the shoot controller's watch, read by both.
    let caches = gardenlet::shoot::caches::SharedCaches::default();
    let care = gardenlet::shoot::health::care::CareController {
        garden: garden.clone(),
        seed: seed.clone(),
        seed_name: config.seed.name.clone(),
        period: Duration::from_secs(config.controllers.shoot_care_period_seconds),
        threshold: config.controllers.shoot_care_threshold(),
        concurrency: usize::from(config.controllers.shoot_care_concurrent_syncs),
        clock: std::sync::Arc::new(|| {
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now())
        }),
        shoots: caches.clone(),
    };
    runner.add_task(move |stop| care.run(stop));
    let metrics = gardenlet::metrics::ShootMetrics::new(runner.registry())?;
    let shoots = ShootController {
        garden,
        seed,
        config: config.clone(),
        wait_timeout: Duration::from_secs(10 * 60),
        backoff: default_backoff(),
        metrics: Some(metrics),
        caches,
    };
    // /readyz waits for the shoot cache (the seed controller and the ShootState sync keep no
    // cache of their own that a request could miss).
    runner.add_task_with_readiness(move |stop, ready| shoots.run_with_ready(stop, ready));
    tracing::info!(seed = %config.seed.name, "gardenlet started");
    let restart = Arc::new(std::sync::Mutex::new(None));
    let noted = restart.clone();
    runner
        .run(async move {
            tokio::select! {
                _ = runtime::runner::shutdown_signal() => {}
                why = renewal => {
                    *noted.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                }
            }
        })
        .await?;
    let why = restart.lock().unwrap_or_else(|p| p.into_inner()).take();
    match why {
        // A non-zero exit so the kubelet starts the container again, with the new certificate.
        Some(why) => {
            tracing::info!(?why, "the garden certificate was renewed; stopping so that gardenlet restarts with it");
            Err(format!("restarting to use the renewed garden certificate ({why:?})").into())
        }
        None => Ok(()),
    }
}

/// The controllers of garden objects that name this seed: ControllerInstallations, Bastions and
/// BackupEntries.
fn add_garden_object_controllers(
    runner: &mut runtime::runner::Runner,
    config: &GardenletConfig,
    garden: &kube::Client,
    seed: &kube::Client,
) {
    let (install_garden, install_seed, install_name) = (garden.clone(), seed.clone(), config.seed.name.clone());
    let install_concurrency = config.controllers.controller_installation_concurrent_syncs;
    runner.add_task_with_readiness(move |stop, ready| {
        gardenlet::installation::run(install_garden, install_seed, install_name, install_concurrency, stop, ready)
    });
    let (bastion_garden, bastion_seed, bastion_name) = (garden.clone(), seed.clone(), config.seed.name.clone());
    let bastion_concurrency = config.controllers.bastion_concurrent_syncs;
    runner.add_task_with_readiness(move |stop, ready| {
        gardenlet::bastion::run(bastion_garden, bastion_seed, bastion_name, bastion_concurrency, stop, ready)
    });
    let backup_entries = gardenlet::backupentry::Context {
        seed_name: config.seed.name.clone(),
        garden: garden.clone(),
        seed: seed.clone(),
        grace: config.controllers.backup_entry_deletion_grace_period(),
    };
    let backup_entry_concurrency = config.controllers.backup_entry_concurrent_syncs;
    runner.add_task_with_readiness(move |stop, ready| {
        gardenlet::backupentry::run(backup_entries, backup_entry_concurrency, stop, ready)
    });
}
