//! The scheduler's metrics, in a registry owned by the process (not prometheus' global one), so
//! that several schedulers in one test process keep their own counts.

use prometheus::{Encoder, Histogram, HistogramOpts, IntCounterVec, IntGauge, Opts, Registry, TextEncoder};

/// Results a decision is counted under.
pub const RESULT_SCHEDULED: &str = "scheduled";
pub const RESULT_UNSCHEDULABLE: &str = "unschedulable";

#[derive(Clone, Debug)]
pub struct Metrics {
    pub registry: Registry,
    /// `scheduler_decisions_total{result}`: decisions by result.
    pub decisions: IntCounterVec,
    /// `scheduler_decision_duration_seconds`: time spent in the pure decision.
    pub decision_duration: Histogram,
    /// `scheduler_reconciliation_errors_total{reason}`: failed writes, by reason.
    pub errors: IntCounterVec,
    /// `scheduler_waiting_shoots`: shoots without a seed.
    pub waiting: IntGauge,
}

impl Metrics {
    /// The metrics in a registry of their own.
    pub fn new() -> Result<Self, prometheus::Error> {
        Self::with_registry(Registry::new())
    }

    /// The metrics, registered in `registry` (the process runner's, in the binary).
    pub fn with_registry(registry: Registry) -> Result<Self, prometheus::Error> {
        let decisions = IntCounterVec::new(
            Opts::new("scheduler_decisions_total", "Scheduling decisions, by result (scheduled, unschedulable)."),
            &["result"],
        )?;
        let decision_duration = Histogram::with_opts(
            HistogramOpts::new("scheduler_decision_duration_seconds", "Time spent choosing a seed for one shoot.")
                .buckets(vec![1e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 5e-2]),
        )?;
        let errors = IntCounterVec::new(
            Opts::new("scheduler_reconciliation_errors_total", "Failed attempts to record a decision, by reason."),
            &["reason"],
        )?;
        let waiting = IntGauge::new("scheduler_waiting_shoots", "Shoots that have no seed yet.")?;
        registry.register(Box::new(decisions.clone()))?;
        registry.register(Box::new(decision_duration.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        registry.register(Box::new(waiting.clone()))?;
        // Both results appear from the start, so that rates can be computed before the first refusal.
        for result in [RESULT_SCHEDULED, RESULT_UNSCHEDULABLE] {
            decisions.with_label_values(&[result]);
        }
        Ok(Self { registry, decisions, decision_duration, errors, waiting })
    }

    /// The registry in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut buf) {
            tracing::warn!(error = %e, "encoding metrics failed");
        }
        String::from_utf8(buf).unwrap_or_default()
    }

    /// How many decisions ended with `result`.
    pub fn decisions_with(&self, result: &str) -> u64 {
        self.decisions.with_label_values(&[result]).get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_family() {
        let m = Metrics::new().unwrap();
        m.decisions.with_label_values(&[RESULT_SCHEDULED]).inc();
        m.decision_duration.observe(0.0002);
        m.errors.with_label_values(&["PlaceFailed"]).inc();
        let text = m.render();
        for needle in [
            "scheduler_decisions_total{result=\"scheduled\"} 1",
            "scheduler_decisions_total{result=\"unschedulable\"} 0",
            "scheduler_decision_duration_seconds_count 1",
            "scheduler_reconciliation_errors_total{reason=\"PlaceFailed\"} 1",
            "scheduler_waiting_shoots 0",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
        assert_eq!(m.decisions_with(RESULT_SCHEDULED), 1);
    }
}
