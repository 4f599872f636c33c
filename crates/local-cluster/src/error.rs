//! Errors of the local cluster's bring-up and teardown. Each says what was being done and, where
//! a user can act, what to do.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what}: {path}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("another `local-cluster {0}` holds this state directory; nothing was changed; wait for it to finish")]
    Busy(String),
    #[error("{binary} is missing ({path}); {fix}")]
    MissingBinary { binary: String, path: PathBuf, fix: String },
    #[error("the kernel lacks {feature}: {detail}")]
    MissingKernelFeature { feature: &'static str, detail: String },
    #[error(
        "{address} is already in use (needed by {component}); stop whatever listens there (`ss -ltnp | grep {port}`) and retry"
    )]
    PortTaken { component: &'static str, address: String, port: u16 },
    #[error("`{command}` failed ({status}): {stderr}")]
    Command { command: String, status: String, stderr: String },
    #[error("running `{command}`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{component} exited during startup; last log lines ({log}):\n{tail}")]
    Exited { component: &'static str, log: PathBuf, tail: String },
    #[error("{what} was not ready within {timeout:?}{detail}")]
    Timeout { what: String, timeout: Duration, detail: String },
    #[error("the local cluster's PKI")]
    Pki(#[from] pki::Error),
    #[error("{what}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("connecting to the local cluster")]
    Client(#[from] runtime::cli::ClientError),
    #[error("{what}")]
    Json {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what}")]
    Yaml {
        what: String,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("{what}")]
    Toml {
        what: String,
        #[source]
        source: toml::ser::Error,
    },
    /// Encryption at rest; the text names a file or key, never a key's value.
    #[error("encryption at rest: {0}")]
    Encryption(String),
    #[error("the bring-up's plan names {0}, which is not in its table of components")]
    UnknownComponent(String),
    #[error("the image registry: {0}")]
    Registry(String),
    #[error("cluster DNS")]
    Dns(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("the storage provisioner")]
    Storage(#[source] hostpath_provisioner::Error),
}

impl Error {
    pub fn io(what: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { what, path, source }
    }

    pub fn kube(what: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let what = what.into();
        move |source| Self::Kube { what, source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
