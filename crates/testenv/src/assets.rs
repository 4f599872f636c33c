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

/// The minor version in `kube-apiserver --version` output (`Kubernetes v1.20.2` → 20).
pub fn parse_minor(version_output: &str) -> Option<u32> {
    let version = version_output.split_whitespace().find_map(|w| w.strip_prefix('v'))?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}

/// Whether binaries of this minor version still have the insecure ports (`kube-apiserver
/// --insecure-port`, `kube-controller-manager --port`): both were removed in 1.24, and passing
/// them there stops the process.
pub fn has_insecure_ports(minor: u32) -> bool {
    minor <= 23
}

impl Assets {
    /// The minor version of `kube-apiserver` (asked once per process and path).
    pub fn minor_version(&self) -> Result<u32, Error> {
        static CACHE: std::sync::Mutex<Vec<(PathBuf, u32)>> = std::sync::Mutex::new(Vec::new());
        let mut cache = CACHE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, minor)) = cache.iter().find(|(p, _)| *p == self.kube_apiserver) {
            return Ok(*minor);
        }
        let output = std::process::Command::new(&self.kube_apiserver).arg("--version").output().map_err(|source| {
            Error::Io { what: format!("running {} --version", self.kube_apiserver.display()), source }
        })?;
        let text = String::from_utf8_lossy(&output.stdout);
        let minor = parse_minor(&text).ok_or_else(|| {
            Error::MissingAssets(format!(
                "{} --version printed {:?}, not `Kubernetes v1.<minor>.<patch>`; run `{SETUP_COMMAND}`",
                self.kube_apiserver.display(),
                text.trim()
            ))
        })?;
        cache.push((self.kube_apiserver.clone(), minor));
        Ok(minor)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_the_insecure_ports() {
        assert_eq!(parse_minor("Kubernetes v1.20.2\n"), Some(20));
        assert_eq!(parse_minor("Kubernetes v1.31.0-rc.1"), Some(31));
        assert_eq!(parse_minor("Kubernetes v2.0.0"), None);
        assert_eq!(parse_minor("garbage"), None);
        assert!(has_insecure_ports(20) && has_insecure_ports(23));
        assert!(!has_insecure_ports(24) && !has_insecure_ports(31));
    }
}
