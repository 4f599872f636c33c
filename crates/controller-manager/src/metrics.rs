//! The controllers' metrics, in the runner's registry (owned by the process, never the global
//! one), so that tests read the counters of the controllers they started:
//! `controller_manager_reconciliations_total{controller}`,
//! `controller_manager_reconciliation_errors_total{controller,reason}` and
//! `controller_manager_reconcile_duration_seconds{controller}`.

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

#[derive(Clone, Debug)]
pub struct Metrics {
    registry: Registry,
    reconciliations: IntCounterVec,
    errors: IntCounterVec,
    duration: HistogramVec,
}

impl Metrics {
    /// Registers the metrics in `registry`.
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let reconciliations = IntCounterVec::new(
            Opts::new("controller_manager_reconciliations_total", "Reconciliations started, by controller."),
            &["controller"],
        )?;
        let errors = IntCounterVec::new(
            Opts::new(
                "controller_manager_reconciliation_errors_total",
                "Failed reconciliations, by controller and reason.",
            ),
            &["controller", "reason"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "controller_manager_reconcile_duration_seconds",
                "Duration of reconciliations, by controller.",
            )
            .buckets(vec![0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0]),
            &["controller"],
        )?;
        registry.register(Box::new(reconciliations.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        Ok(Self { registry: registry.clone(), reconciliations, errors, duration })
    }

    /// Makes the controller's series visible from the start (rates before the first event).
    pub fn register_controller(&self, controller: &str) {
        self.reconciliations.with_label_values(&[controller]);
        self.duration.with_label_values(&[controller]);
    }

    pub fn started(&self, controller: &str) {
        self.reconciliations.with_label_values(&[controller]).inc();
    }

    pub fn failed(&self, controller: &str, reason: &str) {
        self.errors.with_label_values(&[controller, reason]).inc();
    }

    pub fn observe(&self, controller: &str, seconds: f64) {
        self.duration.with_label_values(&[controller]).observe(seconds);
    }

    /// Reconciliations of `controller` so far.
    pub fn reconciliations(&self, controller: &str) -> u64 {
        self.reconciliations.with_label_values(&[controller]).get()
    }

    /// Failed reconciliations of `controller` for `reason` so far.
    pub fn errors(&self, controller: &str, reason: &str) -> u64 {
        self.errors.with_label_values(&[controller, reason]).get()
    }

    /// Failed reconciliations of `controller`, all reasons.
    pub fn all_errors(&self, controller: &str) -> u64 {
        self.registry
            .gather()
            .iter()
            .filter(|f| f.name() == "controller_manager_reconciliation_errors_total")
            .flat_map(|f| f.get_metric())
            .filter(|m| m.get_label().iter().any(|l| l.name() == "controller" && l.value() == controller))
            .map(|m| m.get_counter().get_value() as u64)
            .sum()
    }

    /// The registry in the Prometheus text format.
    pub fn render(&self) -> String {
        extension_sdk::metrics::render(&self.registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_labelled_by_controller_and_rendered() {
        let m = Metrics::new(&Registry::new()).unwrap();
        m.register_controller("bastion");
        m.started("project");
        m.started("project");
        m.failed("project", "ApplyNamespaceFailed");
        m.observe("project", 0.02);
        assert_eq!(m.reconciliations("project"), 2);
        assert_eq!(m.errors("project", "ApplyNamespaceFailed"), 1);
        assert_eq!(m.all_errors("project"), 1);
        assert_eq!(m.all_errors("bastion"), 0);
        let text = m.render();
        for needle in [
            "controller_manager_reconciliations_total{controller=\"project\"} 2",
            "controller_manager_reconciliations_total{controller=\"bastion\"} 0",
            "controller_manager_reconciliation_errors_total{controller=\"project\",reason=\"ApplyNamespaceFailed\"} 1",
            "controller_manager_reconcile_duration_seconds_count{controller=\"project\"} 1",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
    }
}
