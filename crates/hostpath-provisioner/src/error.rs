//! Errors of the provisioner. Each says what was being done, on which object or path.

use std::path::PathBuf;

/// Why a provisioner step failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed ("creating PersistentVolume pvc-1234").
    #[error("{action}")]
    Kube {
        action: String,
        #[source]
        source: kube::Error,
    },
    /// A file-system operation on the node failed.
    #[error("{action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn kube(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let action = action.into();
        move |source| Self::Kube { action, source }
    }

    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { action, path, source }
    }
}

/// An error and its causes on one line, joined with ": " (for log fields).
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![error.to_string()];
    let mut next = error.source();
    while let Some(e) = next {
        parts.push(e.to_string());
        next = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_what_was_done_and_why() {
        let e = Error::io("creating", "/v/pvc-1")(std::io::Error::other("disk full"));
        assert_eq!(chain(&e), "creating /v/pvc-1: disk full");
    }
}
