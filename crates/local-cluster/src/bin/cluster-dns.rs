//! `cluster-dns`: the project's cluster DNS server as a workload, for clusters that run it as a
//! pod (the shoots' `kube-system/cluster-dns`). The same server as the local cluster's add-ons
//! (`local_cluster::addons::cluster_dns`): authoritative for the cluster domain (pod names
//! included) and the reverse names of its addresses from watches of Services and Endpoints,
//! refusing every other name, forwarding nothing.

use clap::Parser;
use runtime::cli;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "cluster-dns", version, about = "Cluster DNS from Services and Endpoints, forwarding nothing")]
struct Cli {
    /// Address to serve DNS on (UDP and TCP).
    #[arg(long, default_value = "0.0.0.0:53")]
    listen: SocketAddr,
    /// The cluster domain.
    #[arg(long, default_value = "cluster.local")]
    domain: String,
    /// Kubeconfig of the cluster to serve; without it, the inferred configuration (in a pod,
    /// its service account).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// Log level filter (RUST_LOG syntax).
    #[arg(long, default_value = "info")]
    log_level: String,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli::init_logging(&cli.log_level, cli::LogFormat::Text);
    cli::block_on(run(cli))
}

/// How long the server keeps answering after SIGTERM (CoreDNS's `lameduck`): a pod being
/// evicted leaves the Service's endpoints at once, but every node's kube-proxy needs a moment to
/// stop sending queries to it (several seconds on a busy node). Within the pod's 30 s grace.
const LAME_DUCK: std::time::Duration = std::time::Duration::from_secs(15);

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let client = cli::client(cli.kubeconfig.as_deref()).await?;
    tracing::info!(listen = %cli.listen, domain = %cli.domain, "serving cluster DNS");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let server = local_cluster::addons::cluster_dns(client, &cli.domain, cli.listen, None);
    tokio::pin!(server);
    tokio::select! {
        result = &mut server => result?,
        _ = term.recv() => {
            tracing::info!(seconds = LAME_DUCK.as_secs(), "SIGTERM: answering a little longer, then stopping");
            // Still serving meanwhile: the server future is polled until the pause ends.
            let _ = tokio::time::timeout(LAME_DUCK, &mut server).await;
        }
    }
    Ok(())
}
