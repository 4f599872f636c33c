//! `etcd-backup`: the backup sidecar of a shoot's etcd (`serve`) and the restore before etcd
//! starts (`restore`). See the library's documentation.

use clap::{Parser, Subcommand, ValueEnum};
use etcd_backup::chain::Policy;
use etcd_backup::gateway::{Etcd, EtcdClientTls};
use etcd_backup::restore;
use etcd_backup::schedule::Schedule;
use etcd_backup::snapshotter::{Config, Health, Snapshotter};
use etcd_backup::store::Store;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "etcd-backup",
    version,
    about = "Continuous backups of etcd into a directory store, and the restore from them"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log level filter (RUST_LOG syntax).
    #[arg(long, global = true, default_value = "info")]
    log_level: String,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum GcPolicy {
    Exponential,
    LimitBased,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Store full and delta snapshots of a running etcd until SIGTERM.
    Serve {
        /// etcd's client URL.
        #[arg(long, default_value = "https://localhost:2379")]
        endpoint: String,
        /// The name etcd's serving certificate is checked for.
        #[arg(long, default_value = "localhost")]
        server_name: String,
        /// CA bundle, client certificate and key (PEM files).
        #[arg(long)]
        cacert: PathBuf,
        #[arg(long)]
        cert: PathBuf,
        #[arg(long)]
        key: PathBuf,
        /// The backup store (a directory). Without one the sidecar only defragments etcd on
        /// `--defragmentation-schedule` (an etcd without backups).
        #[arg(long)]
        store: Option<PathBuf>,
        /// When full snapshots are taken (5-field cron, UTC).
        #[arg(long, default_value = "0 0 * * *")]
        full_snapshot_schedule: String,
        /// When etcd is defragmented (5-field cron, UTC); never without it.
        #[arg(long)]
        defragmentation_schedule: Option<String>,
        /// Seconds between delta snapshots.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=3600))]
        delta_snapshot_period_seconds: u64,
        #[arg(long, value_enum, default_value = "exponential")]
        garbage_collection_policy: GcPolicy,
        /// Full snapshots kept by the limit-based policy.
        #[arg(long, default_value_t = 7)]
        max_backups: usize,
        #[arg(long, default_value_t = 60)]
        garbage_collection_period_seconds: u64,
        /// A full snapshot is taken early once the deltas since the newest one cover this many
        /// revisions (snapshot compaction: a restore replays at most about that many); 0 never.
        #[arg(long, default_value_t = 10_000)]
        compaction_revisions_threshold: u64,
        /// /readyz fails once storing snapshots has failed for this long.
        #[arg(long, default_value_t = 600)]
        failure_threshold_seconds: u64,
        /// Address of /healthz, /readyz and /metrics.
        #[arg(long, default_value = "0.0.0.0:2382")]
        listen: SocketAddr,
    },
    /// Bring this member into a multi-member etcd before etcd starts (the first member
    /// bootstraps; the others join as learners and are promoted), then exit.
    Join {
        #[command(flatten)]
        options: etcd_backup::join::Options,
        /// Where the outcome is written for the pod's status (the kubelet's termination message).
        #[arg(long, default_value = "/dev/termination-log")]
        termination_log: PathBuf,
    },
    /// Rebuild a missing data directory from the store, then exit.
    Restore {
        #[command(flatten)]
        options: restore::Options,
        /// Where the outcome is written for the pod's status (the kubelet's termination message).
        #[arg(long, default_value = "/dev/termination-log")]
        termination_log: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    runtime::cli::init_logging(&cli.log_level, runtime::cli::LogFormat::Text);
    runtime::cli::block_on(run(cli.command))
}

#[derive(Debug, thiserror::Error)]
enum MainError {
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}: {1}")]
    Schedule(&'static str, String),
    #[error("binding {address}")]
    Bind {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Gateway(#[from] etcd_backup::gateway::GatewayError),
    #[error(transparent)]
    Restore(#[from] restore::RestoreError),
    #[error(transparent)]
    Join(#[from] etcd_backup::join::JoinError),
    #[error(transparent)]
    Metrics(#[from] prometheus::Error),
    #[error("waiting for SIGTERM")]
    Signal(#[source] std::io::Error),
    #[error("without --store the sidecar only defragments etcd: --defragmentation-schedule is required")]
    NothingToDo,
}

fn read(path: &PathBuf) -> Result<String, MainError> {
    std::fs::read_to_string(path).map_err(|source| MainError::Read { path: path.clone(), source })
}

async fn run(command: Command) -> Result<(), MainError> {
    match command {
        Command::Serve {
            endpoint,
            server_name,
            cacert,
            cert,
            key,
            store,
            full_snapshot_schedule,
            defragmentation_schedule,
            delta_snapshot_period_seconds,
            garbage_collection_policy,
            max_backups,
            garbage_collection_period_seconds,
            compaction_revisions_threshold,
            failure_threshold_seconds,
            listen,
        } => {
            let tls = EtcdClientTls { ca: read(&cacert)?, cert: read(&cert)?, key: read(&key)? };
            let config = Config {
                full_schedule: Schedule::parse(&full_snapshot_schedule)
                    .map_err(|e| MainError::Schedule("--full-snapshot-schedule", e))?,
                defrag_schedule: defragmentation_schedule
                    .map(|s| Schedule::parse(&s).map_err(|e| MainError::Schedule("--defragmentation-schedule", e)))
                    .transpose()?,
                delta_period: Duration::from_secs(delta_snapshot_period_seconds),
                policy: match garbage_collection_policy {
                    GcPolicy::Exponential => Policy::Exponential,
                    GcPolicy::LimitBased => Policy::LimitBased(max_backups),
                },
                gc_period: Duration::from_secs(garbage_collection_period_seconds.max(1)),
                failure_threshold: Duration::from_secs(failure_threshold_seconds),
                compaction_revisions: compaction_revisions_threshold,
            };
            if store.is_none() && config.defrag_schedule.is_none() {
                return Err(MainError::NothingToDo);
            }
            let etcd = Etcd::new(&endpoint, &server_name, Some(&tls)).await?;
            let metrics = etcd_backup::metrics::Metrics::new()?;
            let healthy = Arc::new(AtomicBool::new(true));
            let readiness = runtime::runner::http::Readiness {
                caches: Vec::new(),
                leader: Arc::new(AtomicBool::new(true)),
                servers: vec![healthy.clone()],
            };
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .map_err(|source| MainError::Bind { address: listen, source })?;
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(MainError::Signal)?;
            let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
            let mut server_stop = stop_rx.clone();
            let server =
                tokio::spawn(runtime::runner::http::serve(listener, metrics.registry.clone(), readiness, async move {
                    let _ = server_stop.wait_for(|s| *s).await;
                }));
            let mut stop = stop_rx;
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            let run = match store {
                Some(store) => {
                    tracing::info!(store = %store.display(), schedule = config.full_schedule.as_str(), defragmentation = config.defrag_schedule.as_ref().map(|s| s.as_str()), delta_seconds = delta_snapshot_period_seconds, "backing up etcd");
                    let health = Health::new(healthy, config.failure_threshold);
                    let snapshotter = Snapshotter::new(etcd, Store::new(store), config, metrics, health);
                    tokio::spawn(snapshotter.run(shutdown))
                }
                None => {
                    let schedule = config.defrag_schedule.ok_or(MainError::NothingToDo)?;
                    tracing::info!(defragmentation = schedule.as_str(), "no backup store: defragmenting etcd only");
                    tokio::spawn(etcd_backup::defrag::run(etcd, schedule, metrics, shutdown))
                }
            };
            let _ = term.recv().await;
            tracing::info!("SIGTERM: storing the last delta snapshot (if backing up) and stopping");
            let _ = stop_tx.send(true);
            let _ = run.await;
            let _ = server.await;
            Ok(())
        }
        Command::Restore { options, termination_log } => {
            let outcome = restore::run(&options).await?;
            tracing::info!("{outcome}");
            // The message is for people; a read-only or absent file only loses it.
            let _ = std::fs::write(&termination_log, outcome.to_string());
            Ok(())
        }
        Command::Join { options, termination_log } => {
            let outcome = etcd_backup::join::run(&options).await?;
            tracing::info!("{outcome}");
            let _ = std::fs::write(&termination_log, outcome.to_string());
            Ok(())
        }
    }
}
