//! The scheduler as a task of the SDK's [`Runner`]: the runner serves `/healthz`, `/readyz`
//! (ready once the scheduler's caches synced and, with leader election, while leading) and
//! `/metrics`, holds the leader Lease, and stops the controller on shutdown. The binary and the
//! tests wire it the same way.

use crate::Config;
use crate::metrics::Metrics;
use crate::readiness::Readiness;
use runtime::Runner;

/// Adds the scheduler to `runner`; returns its metrics and readiness (for tests).
pub fn add_to(
    runner: &mut Runner,
    client: kube::Client,
    config: Config,
) -> Result<(Metrics, Readiness), prometheus::Error> {
    let metrics = Metrics::with_registry(runner.registry().clone())?;
    let readiness = Readiness::default();
    let (m, r) = (metrics.clone(), readiness.clone());
    runner.add_task_with_readiness(move |stop, ready| crate::controller::run(client, config, m, r, stop, ready));
    Ok((metrics, readiness))
}
