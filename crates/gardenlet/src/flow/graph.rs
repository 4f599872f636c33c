//! Building and validating a flow graph.

use super::task::{Task, TaskError, TaskFn, TaskId};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

/// Why a graph cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("flow {flow}: task {task:?} is defined twice")]
    Duplicate { flow: String, task: String },
    #[error("flow {flow}: task {task:?} depends on unknown task {dependency:?}")]
    UnknownDependency { flow: String, task: String, dependency: String },
    #[error("flow {flow}: dependency cycle through {tasks:?}")]
    Cycle { flow: String, tasks: Vec<String> },
}

/// Collects tasks; [`FlowBuilder::build`] validates the graph.
pub struct FlowBuilder {
    name: String,
    tasks: Vec<(TaskId, Vec<TaskId>, bool, TaskFn)>,
}

impl fmt::Debug for FlowBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowBuilder").field("name", &self.name).field("tasks", &self.tasks.len()).finish()
    }
}

impl FlowBuilder {
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), tasks: Vec::new() }
    }

    /// Adds a task that runs `f` once all `deps` are done. Returns the task's ID for use as a
    /// dependency of later tasks.
    pub fn task<F, Fut>(&mut self, id: &str, deps: &[&TaskId], f: F) -> TaskId
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), TaskError>> + Send + 'static,
    {
        self.task_if(id, deps, true, f)
    }

    /// Like [`task`](Self::task), but the task is skipped (and counts as done for its
    /// dependents) unless `enabled`.
    pub fn task_if<F, Fut>(&mut self, id: &str, deps: &[&TaskId], enabled: bool, f: F) -> TaskId
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), TaskError>> + Send + 'static,
    {
        let task_id = TaskId::from(id);
        let run: TaskFn = Arc::new(move || Box::pin(f()));
        self.tasks.push((task_id.clone(), deps.iter().map(|d| (*d).clone()).collect(), !enabled, run));
        task_id
    }

    /// Validates the graph: unique IDs, known dependencies, no cycles.
    pub fn build(self) -> Result<Flow, GraphError> {
        let mut index = BTreeMap::new();
        for (i, (id, ..)) in self.tasks.iter().enumerate() {
            if index.insert(id.clone(), i).is_some() {
                return Err(GraphError::Duplicate { flow: self.name.clone(), task: id.0.clone() });
            }
        }
        let mut tasks = Vec::with_capacity(self.tasks.len());
        for (id, deps, skip, run) in self.tasks {
            let mut resolved = Vec::with_capacity(deps.len());
            for dep in deps {
                let Some(&i) = index.get(&dep) else {
                    return Err(GraphError::UnknownDependency { flow: self.name, task: id.0, dependency: dep.0 });
                };
                resolved.push(i);
            }
            tasks.push(Task { id, deps: resolved, skip, run });
        }
        check_acyclic(&self.name, &tasks)?;
        Ok(Flow { name: self.name, tasks })
    }
}

/// Kahn's algorithm: whatever cannot be ordered lies on (or behind) a cycle.
fn check_acyclic(flow: &str, tasks: &[Task]) -> Result<(), GraphError> {
    let mut missing: Vec<usize> = tasks.iter().map(|t| t.deps.len()).collect();
    let mut ready: Vec<usize> = (0..tasks.len()).filter(|&i| missing[i] == 0).collect();
    let mut done = BTreeSet::new();
    while let Some(i) = ready.pop() {
        done.insert(i);
        for (j, t) in tasks.iter().enumerate() {
            let n = t.deps.iter().filter(|&&d| d == i).count();
            if n > 0 {
                missing[j] -= n;
                if missing[j] == 0 {
                    ready.push(j);
                }
            }
        }
    }
    if done.len() == tasks.len() {
        return Ok(());
    }
    let tasks = tasks.iter().enumerate().filter(|(i, _)| !done.contains(i)).map(|(_, t)| t.id.0.clone()).collect();
    Err(GraphError::Cycle { flow: flow.to_string(), tasks })
}

/// A validated flow, ready to run (any number of times).
pub struct Flow {
    pub(crate) name: String,
    pub(crate) tasks: Vec<Task>,
}

impl fmt::Debug for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flow").field("name", &self.name).field("tasks", &self.len()).finish()
    }
}

impl Flow {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Every task with its dependencies and whether it is skipped, in definition order (for
    /// documentation and debugging).
    pub fn describe(&self) -> Vec<(String, Vec<String>, bool)> {
        self.tasks
            .iter()
            .map(|t| (t.id.0.clone(), t.deps.iter().map(|&d| self.tasks[d].id.0.clone()).collect(), t.skip))
            .collect()
    }
}
