//! Running a flow: maximum parallelism, no fail-fast, panics captured per task.

use super::graph::Flow;
use super::task::{TaskError, TaskFn, TaskId};
use api::common::ErrorCode;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;
use tracing::Instrument;

/// How long a task keeps retrying a transient error ([`TaskError::is_transient`]) before it
/// fails with it. Until then the operation stays `Processing`: a dropped connection is not an
/// error of the shoot.
pub const TRANSIENT_RETRY_BUDGET: Duration = Duration::from_secs(120);
/// The first pause before retrying a transient error; it doubles up to [`TRANSIENT_RETRY_MAX_PAUSE`].
const TRANSIENT_RETRY_FIRST_PAUSE: Duration = Duration::from_secs(1);
const TRANSIENT_RETRY_MAX_PAUSE: Duration = Duration::from_secs(15);

/// Runs `run` again while it fails transiently, with growing pauses, until
/// [`TRANSIENT_RETRY_BUDGET`] has passed; then returns its last outcome.
async fn retry_transient(id: &TaskId, run: &TaskFn) -> Result<(), TaskError> {
    let started = tokio::time::Instant::now();
    let mut pause = TRANSIENT_RETRY_FIRST_PAUSE;
    loop {
        match (run)().await {
            Err(e) if e.is_transient() && started.elapsed() + pause < TRANSIENT_RETRY_BUDGET => {
                tracing::info!(task = %id, error = %e, retry_in = ?pause, "transient error, retrying inside the task");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(TRANSIENT_RETRY_MAX_PAUSE);
            }
            outcome => return outcome,
        }
    }
}

/// A failed task and its error.
#[derive(Debug, Clone)]
pub struct TaskFailure {
    pub task: TaskId,
    pub error: TaskError,
}

/// Progress after a task finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Succeeded tasks as a percentage of the tasks that are not skipped (0..=100).
    pub percent: i32,
    pub succeeded: usize,
    pub total: usize,
    /// The task whose completion triggered this report.
    pub finished: TaskId,
    /// The tasks running after it (including those it unblocked), in flow order: what the
    /// operation now waits for.
    pub running: Vec<TaskId>,
}

type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;
/// Removes secret material from a task error's message.
pub type RedactFn = Arc<dyn Fn(&str) -> String + Send + Sync>;
type SucceededFn = Arc<dyn Fn(&TaskId) + Send + Sync>;

/// Hooks and metrics for one run.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Called after every finished task.
    pub on_progress: Option<ProgressFn>,
    /// Called when a task succeeds: the error cleaner that drops the task's stale error entry.
    pub on_task_succeeded: Option<SucceededFn>,
    /// `flow_task_duration_seconds{flow, task}`-style histogram.
    pub task_duration: Option<prometheus::HistogramVec>,
    /// Applied to every task error before it is logged or put into the result.
    pub redact: Option<RedactFn>,
}

impl fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("on_progress", &self.on_progress.is_some())
            .field("on_task_succeeded", &self.on_task_succeeded.is_some())
            .field("task_duration", &self.task_duration.is_some())
            .field("redact", &self.redact.is_some())
            .finish()
    }
}

/// What happened to every task.
#[derive(Debug, Clone, Default)]
pub struct FlowResult {
    pub succeeded: Vec<TaskId>,
    pub skipped: Vec<TaskId>,
    pub failed: Vec<TaskFailure>,
    /// Not run because a dependency failed (directly or transitively).
    pub blocked: Vec<TaskId>,
}

impl FlowResult {
    pub fn is_success(&self) -> bool {
        self.failed.is_empty() && self.blocked.is_empty()
    }

    /// Succeeded as a percentage of non-skipped tasks.
    pub fn percent(&self) -> i32 {
        percent(self.succeeded.len(), self.succeeded.len() + self.failed.len() + self.blocked.len())
    }

    /// All error codes of all failed tasks, deduplicated.
    pub fn codes(&self) -> Vec<ErrorCode> {
        let mut codes: Vec<ErrorCode> = self.failed.iter().flat_map(|f| f.error.codes().iter().copied()).collect();
        codes.sort();
        codes.dedup();
        codes
    }

    /// "task A failed: ...; task B failed: ..." for `lastOperation.description`.
    pub fn summary(&self) -> String {
        self.failed.iter().map(|f| format!("task {:?} failed: {}", f.task.0, f.error)).collect::<Vec<_>>().join("; ")
    }
}

fn percent(done: usize, total: usize) -> i32 {
    if total == 0 {
        return 100;
    }
    // total > 0 and done <= total, so the result is within 0..=100.
    i32::try_from(done * 100 / total).unwrap_or(100)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Running,
    Succeeded,
    Skipped,
    Failed,
    Blocked,
}

impl Flow {
    /// Runs every task once (retrying transient errors inside it), as described in the module
    /// documentation. Dropping the returned
    /// future aborts the tasks still running.
    pub async fn run(&self, options: &RunOptions) -> FlowResult {
        let n = self.tasks.len();
        let mut state = vec![State::Pending; n];
        let mut result = FlowResult::default();
        let total = self.tasks.iter().filter(|t| !t.skip).count();
        let mut running: JoinSet<(usize, Result<(), TaskError>, Duration)> = JoinSet::new();

        loop {
            self.schedule(&mut state, &mut result, &mut running);
            let Some(joined) = running.join_next().await else { break };
            // The wrapper future in `spawn` never panics (it contains the task's panic), so a
            // join error means it was aborted, which only happens when this future is dropped.
            let Ok((i, outcome, elapsed)) = joined else { continue };
            let id = self.tasks[i].id.clone();
            if let Some(h) = &options.task_duration {
                h.with_label_values(&[self.name.as_str(), id.0.as_str()]).observe(elapsed.as_secs_f64());
            }
            match outcome {
                Ok(()) => {
                    state[i] = State::Succeeded;
                    result.succeeded.push(id.clone());
                    if let Some(clean) = &options.on_task_succeeded {
                        clean(&id);
                    }
                }
                Err(error) => {
                    let error = match &options.redact {
                        Some(redact) => error.redacted(redact.as_ref()),
                        None => error,
                    };
                    tracing::warn!(flow = %self.name, task = %id, %error, "flow task failed");
                    state[i] = State::Failed;
                    result.failed.push(TaskFailure { task: id.clone(), error });
                }
            }
            if let Some(report) = &options.on_progress {
                // Start what this task unblocked first, so that the report names every task that
                // runs now (scheduling again at the top of the loop then changes nothing).
                self.schedule(&mut state, &mut result, &mut running);
                let now_running =
                    state.iter().zip(&self.tasks).filter(|(s, _)| **s == State::Running).map(|(_, t)| t.id.clone());
                report(&Progress {
                    percent: percent(result.succeeded.len(), total),
                    succeeded: result.succeeded.len(),
                    total,
                    finished: id,
                    running: now_running.collect(),
                });
            }
        }
        result
    }

    /// Marks skipped and blocked tasks and starts every task whose dependencies are done.
    fn schedule(
        &self,
        state: &mut [State],
        result: &mut FlowResult,
        running: &mut JoinSet<(usize, Result<(), TaskError>, Duration)>,
    ) {
        // Repeat until nothing changes: skipping or blocking one task can settle its dependents.
        loop {
            let mut changed = false;
            for (i, task) in self.tasks.iter().enumerate() {
                if state[i] != State::Pending {
                    continue;
                }
                let deps = task.deps.iter().map(|&d| state[d]);
                if deps.clone().any(|s| matches!(s, State::Failed | State::Blocked)) {
                    state[i] = State::Blocked;
                    result.blocked.push(task.id.clone());
                    changed = true;
                } else if deps.clone().all(|s| matches!(s, State::Succeeded | State::Skipped)) {
                    if task.skip {
                        state[i] = State::Skipped;
                        result.skipped.push(task.id.clone());
                        changed = true;
                    } else {
                        state[i] = State::Running;
                        self.spawn(i, running);
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    fn spawn(&self, i: usize, running: &mut JoinSet<(usize, Result<(), TaskError>, Duration)>) {
        let task = &self.tasks[i];
        let span = tracing::info_span!("flow_task", flow = %self.name, task = %task.id);
        let run = task.run.clone();
        let id = task.id.clone();
        let fut = async move { retry_transient(&id, &run).await };
        running.spawn(async move {
            let started = Instant::now();
            // The task runs in its own tokio task so that a panic is contained and reported
            // as this task's error, with the index still known.
            let inner = tokio::spawn(fut.instrument(span));
            let _abort_with_flow = AbortOnDrop(inner.abort_handle());
            let outcome = match inner.await {
                Ok(outcome) => outcome,
                Err(e) if e.is_panic() => {
                    Err(TaskError::msg(format!("task panicked: {}", panic_message(e.into_panic()))))
                }
                Err(e) => Err(TaskError::msg(format!("task was cancelled: {e}"))),
            };
            (i, outcome, started.elapsed())
        });
    }
}

/// Aborts the inner task when the wrapper is dropped (the flow was cancelled).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
