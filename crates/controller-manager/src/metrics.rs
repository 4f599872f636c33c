//! The controllers' metrics, in the runner's registry (owned by the process, never the global
//! one), so that tests read the counters of the controllers they started: the SDK's reconcile
//! metrics, labelled by controller:
//! `controller_manager_reconciliations_total{controller}`,
//! `controller_manager_reconciliation_errors_total{controller,reason}` and
//! `controller_manager_reconcile_duration_seconds{controller}`.

use prometheus::Registry;

pub use ::runtime::metrics::Metrics;

/// Registers the controllers' metrics in `registry`.
pub fn new(registry: &Registry) -> Result<Metrics, prometheus::Error> {
    Metrics::labelled(registry, "controller_manager", "controller")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_labelled_by_controller_and_rendered() {
        let m = new(&Registry::new()).unwrap();
        m.register("bastion");
        m.reconcile_started("project");
        m.reconcile_started("project");
        m.reconcile_failed("project", "ApplyNamespaceFailed");
        m.observe_duration("project", 0.02);
        // The counters themselves are runtime's (tested there); here: the prefix and the label.
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
