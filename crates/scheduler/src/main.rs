//! `gardener-scheduler --config <file> [--kubeconfig <file>]`: runs the scheduler until SIGINT or
//! SIGTERM. Without `--kubeconfig` the in-cluster configuration (or `$KUBECONFIG`) is used.

use futures::FutureExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use scheduler::Config;
use scheduler::http::{self, Readiness};
use scheduler::metrics::Metrics;
use std::path::PathBuf;
use tracing_subscriber::EnvFilter;

const USAGE: &str = "usage: gardener-scheduler [--config <file>] [--kubeconfig <file>]

  --config <file>      scheduler configuration (YAML or JSON); defaults apply without it
  --kubeconfig <file>  kubeconfig of the garden cluster; in-cluster or $KUBECONFIG without it
";

#[derive(Debug, Default)]
struct Args {
    config: Option<PathBuf>,
    kubeconfig: Option<PathBuf>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--config" => parsed.config = Some(PathBuf::from(value()?)),
            "--kubeconfig" => parsed.kubeconfig = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(parsed)
}

async fn client(kubeconfig: Option<&PathBuf>) -> Result<kube::Client, Box<dyn std::error::Error>> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer().await?,
    };
    Ok(kube::Client::try_from(config)?)
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("{message}\n");
            }
            eprint!("{USAGE}");
            std::process::exit(if message.is_empty() { 0 } else { 2 });
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .init();

    let config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    tracing::info!(strategy = ?config.strategy, bind_address = %config.bind_address, "starting gardener-scheduler");
    let client = client(args.kubeconfig.as_ref()).await?;
    let metrics = Metrics::new()?;
    let readiness = Readiness::default();
    let shutdown = shutdown_signal().shared();

    let listener = tokio::net::TcpListener::bind(config.bind_address).await?;
    let server = tokio::spawn(http::serve(listener, metrics.clone(), readiness.clone(), shutdown.clone()));
    scheduler::controller::run(client, config, metrics, readiness, shutdown).await?;
    server.await??;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        parse_args(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn arguments() {
        let a = args(&["--config", "c.yaml", "--kubeconfig=k"]).unwrap();
        assert_eq!(a.config, Some(PathBuf::from("c.yaml")));
        assert_eq!(a.kubeconfig, Some(PathBuf::from("k")));
        assert!(args(&[]).unwrap().config.is_none());
        assert_eq!(args(&["--config"]).unwrap_err(), "--config needs a value");
        assert!(args(&["--verbose"]).unwrap_err().contains("--verbose"));
        assert_eq!(args(&["--help"]).unwrap_err(), "");
    }
}
