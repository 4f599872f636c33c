//! `shoot-entry sync`: keeps haproxy's SNI routes equal to gardenlet's routes ConfigMap. See
//! the library's documentation.

use clap::Parser;
use shoot_entry::haproxy::RuntimeApi;
use shoot_entry::routes::ROUTES_CONFIGMAP;
use shoot_entry::sync::RouteSync;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "shoot-entry", version, about = "Keeps haproxy's SNI routes equal to gardenlet's routes ConfigMap")]
struct Cli {
    /// Namespace of the routes ConfigMap (the Pod's own).
    #[arg(long, env = "NAMESPACE")]
    namespace: String,
    #[arg(long, default_value = ROUTES_CONFIGMAP)]
    configmap: String,
    /// haproxy's admin socket.
    #[arg(long, default_value = "/run/shoot-entry/admin.sock")]
    socket: PathBuf,
    /// The map file haproxy's configuration uses.
    #[arg(long, default_value = "/run/shoot-entry/routes.map")]
    map_file: PathBuf,
    /// Write the map file once and exit (the init container, before haproxy starts).
    #[arg(long)]
    once: bool,
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    #[arg(long, default_value = "info,kube=warn")]
    log_level: String,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    runtime::cli::init_logging(&cli.log_level, runtime::cli::LogFormat::Text);
    runtime::cli::block_on(run(cli))
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let client = runtime::cli::client(cli.kubeconfig.as_deref()).await?;
    let sync = RouteSync {
        namespace: cli.namespace,
        configmap: cli.configmap,
        map_file: cli.map_file,
        haproxy: RuntimeApi::new(cli.socket),
    };
    if cli.once {
        let routes = sync.read(&client).await?;
        sync.write_file(&routes)?;
        tracing::info!(routes = routes.len(), file = %sync.map_file.display(), "map file written");
        return Ok(());
    }
    tokio::select! {
        result = sync.run(client) => result?,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
