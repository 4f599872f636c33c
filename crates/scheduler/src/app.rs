//! The scheduler as a task of the SDK's [`Runner`]: the runner serves `/healthz`, `/readyz`
//! (ready once the three caches synced and, with leader election, while leading) and
//! `/metrics`, holds the leader Lease, and stops the controller on shutdown. The binary and the
//! tests wire it the same way.

use crate::Config;
use crate::metrics::Metrics;
use crate::readiness::Readiness;
use runtime::Runner;
use runtime::runner::Stop;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Adds the scheduler to `runner`; returns its metrics and readiness (for tests).
pub fn add_to(
    runner: &mut Runner,
    client: kube::Client,
    config: Config,
) -> Result<(Metrics, Readiness), prometheus::Error> {
    let metrics = Metrics::with_registry(runner.registry().clone())?;
    let readiness = Readiness::default();
    let (m, r) = (metrics.clone(), readiness.clone());
    runner.add_task_with_readiness(move |stop, ready| async move {
        let bridge = report_when_synced(r.clone(), ready, stop.clone());
        let controller = crate::controller::run(client, config, m, r, stop);
        let (result, ()) = futures::join!(controller, bridge);
        if let Err(e) = result {
            tracing::error!(error = %runtime::cli::report(&e), "the scheduler stopped");
        }
    });
    Ok((metrics, readiness))
}

/// Sets the runner's readiness flag once the scheduler's caches have synced (a one-off wait at
/// startup; the caches themselves are fed by watches).
async fn report_when_synced(readiness: Readiness, ready: Arc<AtomicBool>, stop: Stop) {
    let synced = async {
        while !readiness.is_ready() {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        ready.store(true, Ordering::Release);
    };
    tokio::select! {
        () = synced => {}
        () = stop => {}
    }
}
