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
/// retrying (taken from extension objects' `lastError.codes`), and whether it is transient (a
/// dropped connection, an API server that is briefly unavailable or overloaded, a write
/// conflict): the flow retries a transient error inside the task instead of failing it.
#[derive(Debug, Clone)]
pub struct TaskError {
    message: String,
    codes: Vec<ErrorCode>,
    transient: bool,
}

/// Whether one error of a cause chain is transient: a connection that failed or broke, or an API
/// answer that asks to come back (409 Conflict, 429, 500, 502, 503, 504).
fn is_transient(err: &(dyn StdError + 'static)) -> bool {
    if let Some(e) = err.downcast_ref::<kube::Error>() {
        return match e {
            kube::Error::Api(status) => matches!(status.code, 409 | 429 | 500 | 502 | 503 | 504),
            kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
            _ => false,
        };
    }
    if let Some(e) = err.downcast_ref::<std::io::Error>() {
        use std::io::ErrorKind::*;
        return matches!(
            e.kind(),
            ConnectionRefused
                | ConnectionReset
                | ConnectionAborted
                | NotConnected
                | BrokenPipe
                | TimedOut
                | UnexpectedEof
        );
    }
    false
}

impl TaskError {
    /// Wraps any error; the message is the whole `source()` chain joined with ": ".
    /// It is transient when any error of the chain is ([`TaskError::is_transient`]).
    pub fn new(err: &(dyn StdError + 'static)) -> Self {
        let mut message = err.to_string();
        let mut transient = is_transient(err);
        let mut source = err.source();
        while let Some(s) = source {
            transient |= is_transient(s);
            let text = s.to_string();
            if !message.ends_with(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = s.source();
        }
        Self { message, codes: Vec::new(), transient }
    }

    /// `what: <err>`, transient as `err` is ([`TaskError::new`]): the way to say what failed
    /// without losing whether it may pass.
    pub fn context(what: impl fmt::Display, err: &(dyn StdError + 'static)) -> Self {
        let inner = Self::new(err);
        Self { message: format!("{what}: {}", inner.message), ..inner }
    }

    /// An error from a plain message (not transient).
    pub fn msg(message: impl Into<String>) -> Self {
        Self { message: message.into(), codes: Vec::new(), transient: false }
    }

    /// The same error, marked transient.
    pub fn transient(mut self) -> Self {
        self.transient = true;
        self
    }

    /// Whether the flow retries it inside the task. An error with codes is never transient: the
    /// codes decide (a non-retryable code must reach the shoot's status).
    pub fn is_transient(&self) -> bool {
        self.transient && self.codes.is_empty()
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
        Self { message: redact(&self.message), codes: self.codes, transient: self.transient }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for TaskError {}
