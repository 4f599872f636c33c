//! `local-cluster`: the local garden's single-node Kubernetes cluster. See `docs/local-setup.md`.

use clap::{Parser, Subcommand};
use local_cluster::Layout;
use local_cluster::host::snapshot::{self, Snapshot};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(name = "local-cluster", about = "A single-node Kubernetes cluster from upstream binaries, without Docker")]
struct Cli {
    /// The state directory: configuration, PKI, data, logs and PID files of the cluster.
    #[arg(long, global = true, default_value = ".local")]
    state_dir: PathBuf,
    /// Log level filter (RUST_LOG syntax). The client's own connection errors are off by
    /// default: the readiness waits report what they last saw.
    #[arg(long, global = true, default_value = "info,kube_client=off")]
    log_level: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Bring the cluster up, or repair it (idempotent).
    Up {
        /// Directory with the Kubernetes binaries (`hack/setup-envtest.sh --node`).
        #[arg(long)]
        assets: PathBuf,
        /// Directory with the image archives (`hack/images.sh`).
        #[arg(long)]
        images: PathBuf,
        /// Seconds each readiness wait may take.
        #[arg(long, default_value_t = 180)]
        timeout: u64,
        /// The image registry's binary (`hack/setup-local.sh` unpacks Debian's docker-registry)
        /// [default: $REGISTRY_DIR/root/usr/bin/docker-registry, $REGISTRY_DIR defaulting to
        /// ~/.cache/gardener-rs/docker-registry]
        #[arg(long, value_name = "PATH")]
        registry_binary: Option<PathBuf>,
    },
    /// Remove the cluster and restore the host.
    Down,
    /// Run the add-ons (cluster DNS, host-path storage); started by `up`.
    Addons,
    /// Print the host state the cluster touches, as JSON.
    Snapshot,
    /// Compare the host with a snapshot; lists every difference and fails if there is one.
    Compare {
        /// A file written by `local-cluster snapshot`.
        before: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    ::runtime::cli::init_logging(&cli.log_level, ::runtime::cli::LogFormat::Text);
    // Absolute, since the processes run with the state directory as their working directory.
    let state_dir = std::path::absolute(&cli.state_dir).unwrap_or(cli.state_dir.clone());
    let layout = Layout::new(state_dir);
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    match cli.command {
        Command::Up { assets, images, timeout, registry_binary } => {
            let options = local_cluster::up::Options {
                assets,
                images,
                timeout: Duration::from_secs(timeout),
                registry: registry_binary.unwrap_or_else(local_cluster::registry::default_binary),
            };
            match runtime.block_on(local_cluster::up::run(&layout, &options)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            }
        }
        Command::Down => match local_cluster::down::run(&layout) {
            Ok(problems) if problems.is_empty() => ExitCode::SUCCESS,
            Ok(problems) => {
                eprintln!("local-cluster: down finished with problems:");
                for p in problems {
                    eprintln!("  {p}");
                }
                ExitCode::FAILURE
            }
            Err(e) => fail(e),
        },
        Command::Addons => match runtime.block_on(local_cluster::addons::run(&layout)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(e),
        },
        Command::Snapshot => match serde_json::to_string_pretty(&Snapshot::capture()) {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Command::Compare { before } => {
            let snap: Snapshot = match std::fs::read_to_string(&before)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
            {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: reading {}: {e}", before.display());
                    return ExitCode::FAILURE;
                }
            };
            let diff = snapshot::differences(&snap, &Snapshot::capture());
            if diff.is_empty() {
                eprintln!("local-cluster: the host matches {}", before.display());
                ExitCode::SUCCESS
            } else {
                eprintln!("local-cluster: the host differs from {}:", before.display());
                for d in diff {
                    eprintln!("  {d}");
                }
                ExitCode::FAILURE
            }
        }
    }
}

fn fail<E: Into<Box<dyn std::error::Error + 'static>>>(error: E) -> ExitCode {
    runtime::cli::exit_code(Err(error))
}
