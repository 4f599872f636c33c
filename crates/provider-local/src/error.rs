//! The crate's error type. Every variant names the object (and field or path) it is about, and
//! maps to the contract's error codes when it becomes an [`ActuatorError`].

use extension_sdk::ActuatorError;
use extension_sdk::api::common::ErrorCode;
use std::path::PathBuf;

/// Why an actuator call of provider-local failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The object asks for something that cannot work: a person has to change it.
    #[error("invalid configuration of {object}: {field}: {message}")]
    Config { object: String, field: String, message: String },
    /// Something the object depends on is not there yet; retrying can help.
    #[error("retryable dependency of {object}: {message}")]
    Dependency { object: String, message: String },
    /// An API call failed.
    #[error("{action}")]
    Kube {
        action: String,
        #[source]
        source: extension_sdk::kube::Error,
    },
    /// An object could not be encoded or decoded as JSON.
    #[error("{action}")]
    Json {
        action: String,
        #[source]
        source: serde_json::Error,
    },
    /// A file-system operation on the seed host failed.
    #[error("{action} {}", path.display())]
    Io {
        action: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub fn config(object: impl Into<String>, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Config { object: object.into(), field: field.into(), message: message.into() }
    }

    pub fn dependency(object: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Dependency { object: object.into(), message: message.into() }
    }

    /// Wraps an API error with what was being done ("applying Pod a in ns b").
    pub fn kube(action: impl Into<String>) -> impl FnOnce(extension_sdk::kube::Error) -> Self {
        let action = action.into();
        move |source| Self::Kube { action, source }
    }

    /// Wraps a JSON error with what was being done.
    pub fn json(action: impl Into<String>) -> impl FnOnce(serde_json::Error) -> Self {
        let action = action.into();
        move |source| Self::Json { action, source }
    }

    /// Wraps an I/O error with what was being done and the path.
    pub fn io(action: impl Into<String>, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let (action, path) = (action.into(), path.into());
        move |source| Self::Io { action, path, source }
    }
}

impl From<Error> for ActuatorError {
    fn from(e: Error) -> Self {
        match &e {
            Error::Config { .. } => {
                ActuatorError::context("provider-local", e).with_codes([ErrorCode::ConfigurationProblem])
            }
            Error::Dependency { .. } => {
                ActuatorError::context("provider-local", e).with_codes([ErrorCode::RetryableInfraDependencies])
            }
            Error::Kube { .. } | Error::Json { .. } | Error::Io { .. } => ActuatorError::from_error(e),
        }
    }
}

/// Whether an API error is a 404.
pub fn is_not_found(e: &extension_sdk::kube::Error) -> bool {
    matches!(e, extension_sdk::kube::Error::Api(s) if s.code == 404)
}

/// Whether an API error is a 409 (already exists, or a resourceVersion conflict).
pub fn is_conflict(e: &extension_sdk::kube::Error) -> bool {
    matches!(e, extension_sdk::kube::Error::Api(s) if s.code == 409)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_errors_are_final_and_dependencies_retryable() {
        let e: ActuatorError = Error::config("Worker a/b", "spec.pools[0].providerConfig", "no image").into();
        assert_eq!(e.codes(), &[ErrorCode::ConfigurationProblem]);
        assert!(e.chain().contains("Worker a/b"), "{}", e.chain());
        assert!(e.chain().contains("spec.pools[0].providerConfig"));
        let e: ActuatorError = Error::dependency("BackupEntry x", "bucket directory missing").into();
        assert_eq!(e.codes(), &[ErrorCode::RetryableInfraDependencies]);
    }

    #[test]
    fn io_errors_name_the_path() {
        let e = Error::io("creating directory", "/srv/backup/b")(std::io::Error::other("disk full"));
        let e: ActuatorError = e.into();
        assert_eq!(e.chain(), "creating directory /srv/backup/b: disk full");
    }
}
