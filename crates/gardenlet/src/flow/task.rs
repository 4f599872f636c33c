//! A task of a flow: its name ([`TaskId`]), the work it runs and the error that work may end in
//! ([`TaskError`]). A leaf: building the graph and running it both depend on it.

use api::common::ErrorCode;
use futures::future::BoxFuture;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// The name of a task; it is also the ID recorded in `status.lastErrors[].taskID`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub String);

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for TaskId {
    fn from(value: &str) -> Self {
        Self(value.to_string())
    }
}

pub(crate) type TaskFn = Arc<dyn Fn() -> BoxFuture<'static, Result<(), TaskError>> + Send + Sync>;

pub(crate) struct Task {
    pub(crate) id: TaskId,
    pub(crate) deps: Vec<usize>,
    pub(crate) skip: bool,
    pub(crate) run: TaskFn,
}

/// The error of one task: the cause, plus the error codes that decide whether a shoot keeps
/// retrying (taken from extension objects' `lastError.codes`).
#[derive(Debug, Clone)]
pub struct TaskError {
    message: String,
    codes: Vec<ErrorCode>,
}

impl TaskError {
    /// Wraps any error; the message is the whole `source()` chain joined with ": ".
    pub fn new(err: &(dyn StdError + 'static)) -> Self {
        let mut message = err.to_string();
        let mut source = err.source();
        while let Some(s) = source {
            let text = s.to_string();
            if !message.ends_with(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = s.source();
        }
        Self { message, codes: Vec::new() }
    }

    /// An error from a plain message.
    pub fn msg(message: impl Into<String>) -> Self {
        Self { message: message.into(), codes: Vec::new() }
    }

    /// Attaches error codes.
    pub fn with_codes(mut self, codes: impl IntoIterator<Item = ErrorCode>) -> Self {
        self.codes.extend(codes);
        self.codes.sort();
        self.codes.dedup();
        self
    }

    pub fn codes(&self) -> &[ErrorCode] {
        &self.codes
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error with its message passed through `redact`.
    pub fn redacted(self, redact: &(dyn Fn(&str) -> String + Send + Sync)) -> Self {
        Self { message: redact(&self.message), codes: self.codes }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for TaskError {}
