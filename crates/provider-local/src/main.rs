//! `gardener-extension-provider-local`: runs the provider-local controllers with the SDK's
//! runner (HTTP endpoints, leader election, heartbeat, graceful shutdown). See `--help`.

use clap::Parser;
use provider_local::cli::{Cli, Command};
use runtime::cli;
use runtime::{Runner, RunnerConfig};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Registration {
        image,
        replicas,
        policy,
        machine_image,
        registry,
        backup_host_path,
        volume_provisioner,
    }) = cli.command
    {
        let registry_mirror = match registry.mirror() {
            Ok(m) => m,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        let options = provider_local::registration::Options {
            image,
            replicas,
            policy,
            machine_image,
            registry_mirror,
            backup_host_path,
            volume_provisioner,
        };
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
    if let Some(Command::VolumeProvisioner { node_name, volumes_dir }) = cli.command {
        return cli::block_on(volume_provisioner(cli.common, node_name, volumes_dir));
    }
    if let Some(Command::PodRoutes { node_name }) = cli.command {
        return cli::block_on(pod_routes(cli.common, node_name));
    }
    cli::block_on(run(cli))
}

/// The pod routes agent of one node of a shoot (the DaemonSet Network deploys).
async fn pod_routes(common: cli::CommonArgs, node_name: String) -> Result<(), Box<dyn std::error::Error>> {
    let client = common.client().await?;
    provider_local::pod_routes::run(client, node_name).await?;
    Ok(())
}

/// The shoot's volume provisioner of one node (the DaemonSet ControlPlane deploys).
async fn volume_provisioner(
    common: cli::CommonArgs,
    node_name: String,
    volumes_dir: std::path::PathBuf,
) -> Result<(), Box<dyn std::error::Error>> {
    let client = common.client().await?;
    provider_local::volume_provisioner::run(client, node_name, volumes_dir).await?;
    Ok(())
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let mut settings = cli.settings();
    settings.registry_mirror = cli.registry.mirror()?;
    let client = cli.common.client().await?;
    let mut config = RunnerConfig::new("provider-local", cli.leader_election.namespace.clone());
    config.http_addr = Some(cli.common.metrics_bind_address());
    config.metrics_prefix = "provider_local".into();
    if let Some(le) = cli.leader_election.config("provider-local") {
        config = config.leader_election(le);
    }
    tracing::info!(
        controllers = ?settings.controllers,
        backup_root = %settings.backup.root.display(),
        registry_mirror = settings.registry_mirror.as_ref().map(|m| m.url()),
        "starting"
    );
    let mut runner = Runner::new(client.clone(), config)?;
    provider_local::register(&mut runner, &client, &settings);
    runner.run_until_signal().await?;
    Ok(())
}
