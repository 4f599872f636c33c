//! gardenlet's metrics, in the process registry the runner serves on `/metrics`:
//! `gardenlet_reconciliations_total{kind="Shoot"}`,
//! `gardenlet_reconciliation_errors_total{kind, reason}`,
//! `gardenlet_reconcile_duration_seconds{kind}` (the SDK's controller metrics under gardenlet's
//! prefix), `gardenlet_flow_task_duration_seconds{flow, task}` for every task of every flow, and
//! `gardenlet_shoot_cache_objects`, the Shoots in the shoot controller's cache (this seed's).

use prometheus::{HistogramOpts, HistogramVec, IntGauge, Registry};

const KIND: &str = "Shoot";

/// The shoot controller's metrics.
#[derive(Clone, Debug)]
pub struct ShootMetrics {
    controller: runtime::metrics::Metrics,
    /// Per flow task, what the flow engine observes (`RunOptions::task_duration`).
    pub task_duration: HistogramVec,
    /// The Shoots in the shoot controller's cache, set at every reconcile.
    pub cached_shoots: IntGauge,
}

impl ShootMetrics {
    /// Registers the metrics in `registry`. The reconcile series start at zero, so a scrape
    /// before the first reconcile shows them; the task histogram appears with its first task.
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let controller = runtime::metrics::Metrics::new(registry, "gardenlet")?;
        let task_duration = HistogramVec::new(
            HistogramOpts::new("gardenlet_flow_task_duration_seconds", "Duration of flow tasks, by flow and task.")
                .buckets(vec![0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0]),
            &["flow", "task"],
        )?;
        registry.register(Box::new(task_duration.clone()))?;
        let cached_shoots = IntGauge::new(
            "gardenlet_shoot_cache_objects",
            "Shoots in the shoot controller's cache (those labelled for this seed).",
        )?;
        registry.register(Box::new(cached_shoots.clone()))?;
        controller.register(KIND);
        Ok(Self { controller, task_duration, cached_shoots })
    }

    pub fn started(&self) {
        self.controller.reconcile_started(KIND);
    }

    pub fn finished(&self, seconds: f64, failure: Option<&str>) {
        self.controller.observe_duration(KIND, seconds);
        if let Some(reason) = failure {
            self.controller.reconcile_failed(KIND, reason);
        }
    }
}
