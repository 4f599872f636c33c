//! The flow engine: a directed acyclic graph of named tasks.
//!
//! * A task starts as soon as every dependency has succeeded or been skipped; independent
//!   branches run concurrently (maximum parallelism).
//! * No fail-fast: when a task fails, only the tasks that depend on it (transitively) are
//!   blocked; every other branch keeps running to completion.
//! * A panic inside a task becomes that task's error.
//! * A transient error (a broken connection, 409/429/5xx from an API server) is retried inside
//!   the task with growing pauses for up to `run::TRANSIENT_RETRY_BUDGET`; only then does the task
//!   fail, so a blip never turns an operation to `Error`.
//! * Progress is succeeded / non-skipped tasks, reported after every task.
//! * The result names every failed task, so callers can record per-task error IDs and clear an
//!   entry once its task succeeds again (the "error cleaner").
//!
//! The graph is validated when built (unknown dependencies, duplicates and cycles are errors),
//! so a flow that compiles and builds always terminates.
//!
//! `task` (a task's name, work and error) is the leaf that `graph` (building and validating)
//! and `run` (running) both use; `helpers` has timeouts and retries for task bodies.

mod graph;
mod helpers;
mod run;
mod task;

pub use graph::{Flow, FlowBuilder, GraphError};
pub use helpers::{RetryError, retry_until_timeout, with_timeout};
pub use run::{FlowResult, Progress, RedactFn, RunOptions, TRANSIENT_RETRY_BUDGET, TaskFailure};
pub use task::{TaskError, TaskId};

#[cfg(test)]
mod tests;
