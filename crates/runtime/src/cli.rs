//! What every binary of the project shares on its command line and around `main`: the flags
//! with the same name and meaning everywhere (`--kubeconfig`, `--metrics-bind-address`,
//! `--log-level`, `--log-format`; each binary adds `--config` and its own), logging set up from
//! them, one way to build the client, and errors printed for people (the message and its causes,
//! one per line) with a non-zero exit code.
//!
//! ```no_run
//! use clap::Parser;
//! #[derive(Parser, Debug)]
//! struct Cli {
//!     #[command(flatten)]
//!     common: runtime::cli::CommonArgs,
//! }
//! fn main() -> std::process::ExitCode {
//!     let cli = Cli::parse();
//!     cli.common.init_logging();
//!     runtime::cli::exit_code(Ok::<(), std::io::Error>(()))
//! }
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// The output format of the logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Flags shared by every binary.
#[derive(Clone, Debug, clap::Args)]
pub struct CommonArgs {
    /// Kubeconfig of the cluster to talk to. Without it: $KUBECONFIG, ~/.kube/config, or the
    /// in-cluster service account.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Address of the HTTP server with /healthz, /readyz and /metrics [default: 0.0.0.0:8080,
    /// or what the configuration file says].
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_bind_address: Option<SocketAddr>,
    /// Log filter: a level (error, warn, info, debug, trace) or per-module directives
    /// (`info,kube=warn`).
    #[arg(long, value_name = "FILTER", env = "RUST_LOG", default_value = "info,kube=warn")]
    pub log_level: String,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Leader election flags, shared by every binary that runs more than one replica.
#[derive(Clone, Debug, clap::Args)]
pub struct LeaderElectionArgs {
    /// Run the controllers only while holding the leader Lease (one active replica).
    #[arg(long = "leader-election", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub enabled: bool,
    /// Namespace of the leader Lease.
    #[arg(long = "leader-election-namespace", value_name = "NS", env = "NAMESPACE", default_value = "garden")]
    pub namespace: String,
    /// Name of the leader Lease [default: <component>-leader-election].
    #[arg(long = "leader-election-id", value_name = "NAME")]
    pub id: Option<String>,
}

impl LeaderElectionArgs {
    /// The runner's leader election for `component`, or `None` when disabled. The identity is
    /// the pod's name (`POD_NAME`, else `HOSTNAME`), else the component and the process ID.
    pub fn config(&self, component: &str) -> Option<crate::runner::LeaderElectionConfig> {
        self.enabled.then(|| {
            let identity = std::env::var("POD_NAME")
                .or_else(|_| std::env::var("HOSTNAME"))
                .unwrap_or_else(|_| format!("{component}-{}", std::process::id()));
            let id = self.id.clone().unwrap_or_else(|| format!("{component}-leader-election"));
            crate::runner::LeaderElectionConfig::new(id, self.namespace.clone(), identity)
        })
    }

    /// The runner of a controller binary: named `name`, serving `/healthz`, `/readyz` and
    /// `/metrics` on `http_addr`, without the heartbeat Lease, holding the leader Lease of
    /// `lease_component` ([`Self::config`]) unless leader election is off.
    pub fn runner_config(
        &self,
        name: &str,
        lease_component: &str,
        http_addr: SocketAddr,
    ) -> crate::runner::RunnerConfig {
        let mut config = crate::runner::RunnerConfig::new(name, self.namespace.clone());
        config.http_addr = Some(http_addr);
        config.heartbeat_interval = None;
        config.leader_election = self.config(lease_component);
        config
    }
}

/// Building the client failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("reading the kubeconfig {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("using the kubeconfig {path}")]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error(
        "finding a cluster configuration (no --kubeconfig given: tried $KUBECONFIG, ~/.kube/config and the in-cluster service account)"
    )]
    Infer(#[source] kube::config::InferConfigError),
    #[error("creating the client")]
    Client(#[source] kube::Error),
}

/// The default of `--metrics-bind-address`: every interface, so a kubelet's probes reach it.
pub const DEFAULT_METRICS_BIND_ADDRESS: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 8080);

impl CommonArgs {
    /// `--metrics-bind-address`, or [`DEFAULT_METRICS_BIND_ADDRESS`].
    pub fn metrics_bind_address(&self) -> SocketAddr {
        self.metrics_bind_address.unwrap_or(DEFAULT_METRICS_BIND_ADDRESS)
    }

    /// Sets up logging to stderr ([`init_logging`]).
    pub fn init_logging(&self) {
        init_logging(&self.log_level, self.log_format);
    }

    /// The client for `--kubeconfig`, or the inferred configuration without it.
    pub async fn client(&self) -> Result<kube::Client, ClientError> {
        client(self.kubeconfig.as_deref()).await
    }
}

/// Sets up logging to stderr with the filter `level` (RUST_LOG syntax): every binary's
/// `--log-level`. A filter that does not parse falls back to `info` and says so.
pub fn init_logging(level: &str, format: LogFormat) {
    let (filter, bad) = match tracing_subscriber::EnvFilter::try_new(level) {
        Ok(f) => (f, None),
        Err(e) => (tracing_subscriber::EnvFilter::new("info"), Some(e)),
    };
    // Colours only on a terminal: a pod's log (or a file) gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
    if let Some(e) = bad {
        tracing::warn!(filter = %level, error = %e, "--log-level does not parse; logging at info");
    }
}

/// A client from a kubeconfig file, or from the inferred configuration when `path` is `None`.
pub async fn client(path: Option<&std::path::Path>) -> Result<kube::Client, ClientError> {
    kube::Client::try_from(config(path).await?).map_err(ClientError::Client)
}

/// The client configuration of a kubeconfig file, or the inferred one when `path` is `None`.
pub async fn config(path: Option<&std::path::Path>) -> Result<kube::Config, ClientError> {
    Ok(match path {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|source| ClientError::Read { path: path.to_path_buf(), source })?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .map_err(|source| ClientError::Kubeconfig { path: path.to_path_buf(), source })?
        }
        None => kube::Config::infer().await.map_err(ClientError::Infer)?,
    })
}

/// An error and its causes, one per line (the parts of [`crate::events::error_chain`]).
pub fn report(error: &(dyn std::error::Error + 'static)) -> String {
    crate::events::chain_parts(error).join("\n  caused by: ")
}

/// Runs `main`'s asynchronous body on a new multi-threaded runtime and turns its result into
/// the exit code ([`exit_code`]).
pub fn block_on<E>(body: impl std::future::Future<Output = Result<(), E>>) -> ExitCode
where
    E: Into<Box<dyn std::error::Error + 'static>>,
{
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => exit_code(runtime.block_on(body)),
        Err(e) => exit_code(Err(e)),
    }
}

/// The process's exit code for `main`'s result; an error is printed for people first.
pub fn exit_code<E>(result: Result<(), E>) -> ExitCode
where
    E: Into<Box<dyn std::error::Error + 'static>>,
{
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let e: Box<dyn std::error::Error + 'static> = e.into();
            eprintln!("error: {}", report(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("reading the configuration file /x.yaml")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn shared_flags_and_defaults() {
        let cli = Cli::try_parse_from(["bin"]).expect("defaults");
        assert_eq!(cli.common.metrics_bind_address(), SocketAddr::from(([0, 0, 0, 0], 8080)));
        assert_eq!(cli.common.log_format, LogFormat::Text);
        let cli = Cli::try_parse_from([
            "bin",
            "--kubeconfig=k",
            "--metrics-bind-address",
            "127.0.0.1:9",
            "--log-format=json",
        ])
        .expect("flags");
        assert_eq!(cli.common.kubeconfig, Some(PathBuf::from("k")));
        assert_eq!(cli.common.metrics_bind_address().port(), 9);
        assert_eq!(cli.common.log_format, LogFormat::Json);
        let bad = Cli::try_parse_from(["bin", "--metrics-bind-address=nope"]).expect_err("a bad address");
        assert!(bad.to_string().contains("--metrics-bind-address"), "{bad}");
    }

    #[test]
    fn reports_walk_the_cause_chain_without_debug_output() {
        let e = Outer(std::io::Error::from(std::io::ErrorKind::NotFound));
        let text = report(&e);
        assert_eq!(text, "reading the configuration file /x.yaml\n  caused by: entity not found");
        assert!(!text.contains("Os {"));
    }
}
