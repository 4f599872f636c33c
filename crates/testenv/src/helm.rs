//! Helm for tests: lints and installs the charts in `charts/` with Helm's own engine, through
//! `hack/helm.py` (the PyPI package helm-sdkpy bundles Helm's Go library; Helm itself is not in
//! Debian). A missing helm-sdkpy fails with the setup command, never a skip.

use crate::{Error, TestEnv};
use std::path::{Path, PathBuf};
use tokio::process::Command;

/// The command that installs what these helpers need.
pub const SETUP_COMMAND: &str = "hack/setup-helm.sh";

/// The repository's root (this crate is `crates/testenv`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The path of a chart, e.g. `chart("gardener/controlplane")`.
pub fn chart(name: &str) -> PathBuf {
    repo_root().join("charts").join(name)
}

async fn run(args: &[&str]) -> Result<String, Error> {
    let script = repo_root().join("hack/helm.py");
    let output = Command::new("python3").arg(&script).args(args).output().await.map_err(|source| Error::Io {
        what: format!("running python3 {} (needs {SETUP_COMMAND})", script.display()),
        source,
    })?;
    if !output.status.success() {
        return Err(Error::Helm {
            what: format!("helm.py {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Lints `chart`; fails on any warning or error Helm reports.
pub async fn lint(chart: &Path) -> Result<(), Error> {
    run(&["lint", &chart.to_string_lossy()]).await.map(drop)
}

/// `helm upgrade --install` of `chart` as `release` into `namespace` of `env`, with `values`
/// (merged over the chart's). `wait`: until the workloads are ready (needs nodes).
pub async fn install(
    env: &TestEnv,
    release: &str,
    chart: &Path,
    namespace: &str,
    values: &serde_json::Value,
    wait: bool,
) -> Result<(), Error> {
    let file = env.dir().join(format!("values-{release}.json"));
    std::fs::write(&file, values.to_string())
        .map_err(|source| Error::Io { what: format!("writing {}", file.display()), source })?;
    let (file, chart, kubeconfig) =
        (file.to_string_lossy(), chart.to_string_lossy(), env.kubeconfig_path().to_string_lossy());
    let mut args =
        vec!["upgrade", release, &chart, "--namespace", namespace, "--kubeconfig", &kubeconfig, "--values", &file];
    if !wait {
        args.push("--no-wait");
    }
    run(&args).await.map(drop)
}
