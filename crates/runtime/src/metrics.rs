//! Prometheus metrics of extension controllers, in a registry owned by the process (never the
//! global one), so that tests can read the counters of the controller they started.

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

/// Reconcile metrics, labelled by kind (or another label, see [`Metrics::labelled`]):
/// `<prefix>_reconciliations_total{kind}`, `<prefix>_reconciliation_errors_total{kind,reason}`,
/// `<prefix>_reconcile_duration_seconds{kind}`.
#[derive(Clone, Debug)]
pub struct Metrics {
    registry: Registry,
    label: &'static str,
    reconciliations: IntCounterVec,
    errors: IntCounterVec,
    duration: HistogramVec,
}

impl Metrics {
    /// Registers the metrics in `registry` under `prefix` (e.g. `extension`).
    pub fn new(registry: &Registry, prefix: &str) -> Result<Self, prometheus::Error> {
        Self::labelled(registry, prefix, "kind")
    }

    /// Like [`Metrics::new`], with the series told apart by `label` instead of `kind` (the
    /// controller-manager labels by `controller`).
    pub fn labelled(registry: &Registry, prefix: &str, label: &'static str) -> Result<Self, prometheus::Error> {
        let reconciliations = IntCounterVec::new(
            Opts::new(format!("{prefix}_reconciliations_total"), format!("Reconciliations started, by {label}.")),
            &[label],
        )?;
        let errors = IntCounterVec::new(
            Opts::new(
                format!("{prefix}_reconciliation_errors_total"),
                format!("Failed reconciliations, by {label} and reason."),
            ),
            &[label, "reason"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                format!("{prefix}_reconcile_duration_seconds"),
                format!("Duration of reconciliations, by {label}."),
            )
            .buckets(vec![0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 1200.0]),
            &[label],
        )?;
        registry.register(Box::new(reconciliations.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        Ok(Self { registry: registry.clone(), label, reconciliations, errors, duration })
    }

    /// Metrics in a fresh registry of their own (for a controller run on its own, and tests).
    pub fn standalone(prefix: &str) -> Result<Self, prometheus::Error> {
        Self::new(&Registry::new(), prefix)
    }

    /// The registry the metrics live in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Creates the series of `kind` at zero, so that a scrape before the first reconcile
    /// shows them (rates work from the start).
    pub fn register(&self, kind: &str) {
        self.reconciliations.with_label_values(&[kind]);
        self.duration.with_label_values(&[kind]);
    }

    pub fn reconcile_started(&self, kind: &str) {
        self.reconciliations.with_label_values(&[kind]).inc();
    }

    pub fn reconcile_failed(&self, kind: &str, reason: &str) {
        self.errors.with_label_values(&[kind, reason]).inc();
    }

    pub fn observe_duration(&self, kind: &str, seconds: f64) {
        self.duration.with_label_values(&[kind]).observe(seconds);
    }

    /// Reconciliations started for `kind` so far.
    pub fn reconciliations(&self, kind: &str) -> u64 {
        self.reconciliations.with_label_values(&[kind]).get()
    }

    /// Failed reconciliations for `kind` and `reason` so far.
    pub fn errors(&self, kind: &str, reason: &str) -> u64 {
        self.errors.with_label_values(&[kind, reason]).get()
    }

    /// Failed reconciliations for `kind`, all reasons.
    pub fn all_errors(&self, kind: &str) -> u64 {
        let families = self.registry.gather();
        families
            .iter()
            .filter(|f| f.name().ends_with("_reconciliation_errors_total"))
            .flat_map(|f| f.get_metric())
            .filter(|m| m.get_label().iter().any(|l| l.name() == self.label && l.value() == kind))
            .map(|m| m.get_counter().get_value() as u64)
            .sum()
    }

    /// The registry in the Prometheus text format.
    pub fn render(&self) -> String {
        render(&self.registry)
    }
}

/// A registry in the Prometheus text format.
pub fn render(registry: &Registry) -> String {
    let mut out = String::new();
    if let Err(e) = prometheus::TextEncoder::new().encode_utf8(&registry.gather(), &mut out) {
        tracing::warn!(error = %e, "encoding metrics failed");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_labelled_and_rendered() {
        let m = Metrics::standalone("ext").unwrap();
        m.reconcile_started("Infrastructure");
        m.reconcile_started("Infrastructure");
        m.reconcile_failed("Infrastructure", "ReconcileFailed");
        m.observe_duration("Infrastructure", 0.2);
        assert_eq!(m.reconciliations("Infrastructure"), 2);
        assert_eq!(m.errors("Infrastructure", "ReconcileFailed"), 1);
        assert_eq!(m.all_errors("Infrastructure"), 1);
        let text = m.render();
        assert!(text.contains("ext_reconciliations_total{kind=\"Infrastructure\"} 2"), "{text}");
        assert!(text.contains("ext_reconciliation_errors_total{kind=\"Infrastructure\",reason=\"ReconcileFailed\"} 1"));
        assert!(text.contains("ext_reconcile_duration_seconds_count{kind=\"Infrastructure\"} 1"));
    }

    #[test]
    fn registering_twice_in_one_registry_is_an_error() {
        let r = Registry::new();
        assert!(Metrics::new(&r, "a").is_ok());
        assert!(Metrics::new(&r, "a").is_err());
    }
}
