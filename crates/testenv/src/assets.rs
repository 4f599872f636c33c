//! Finding the control-plane binaries (the envtest convention: `KUBEBUILDER_ASSETS`).

use crate::Error;
use std::path::PathBuf;

/// The command that provisions the binaries; named in every "missing binaries" error.
pub const SETUP_COMMAND: &str = "export KUBEBUILDER_ASSETS=$(hack/setup-envtest.sh)";

/// Paths of the binaries a test environment runs.
#[derive(Clone, Debug)]
pub struct Assets {
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
    pub kube_controller_manager: PathBuf,
    pub kube_scheduler: PathBuf,
}

impl Assets {
    /// Reads `KUBEBUILDER_ASSETS` and checks that every binary is there and executable.
    pub fn from_env() -> Result<Self, Error> {
        let dir = std::env::var_os("KUBEBUILDER_ASSETS").map(PathBuf::from).ok_or_else(|| {
            Error::MissingAssets(format!("KUBEBUILDER_ASSETS is not set; run `{SETUP_COMMAND}` first"))
        })?;
        Self::from_dir(&dir)
    }

    /// Checks that every binary is in `dir`.
    pub fn from_dir(dir: &std::path::Path) -> Result<Self, Error> {
        let find = |name: &str| -> Result<PathBuf, Error> {
            let path = dir.join(name);
            if path.is_file() {
                Ok(path)
            } else {
                Err(Error::MissingAssets(format!(
                    "{} not found in KUBEBUILDER_ASSETS={}; run `{SETUP_COMMAND}` first",
                    name,
                    dir.display()
                )))
            }
        };
        Ok(Self {
            etcd: find("etcd")?,
            kube_apiserver: find("kube-apiserver")?,
            kube_controller_manager: find("kube-controller-manager")?,
            kube_scheduler: find("kube-scheduler")?,
        })
    }
}
