//! The sidecar's metrics (etcd-backup-restore's names where it has one).

use crate::names::Kind;
use prometheus::{IntCounterVec, IntGaugeVec, Opts, Registry};

#[derive(Debug, Clone)]
pub struct Metrics {
    pub registry: Registry,
    latest_timestamp: IntGaugeVec,
    latest_revision: IntGaugeVec,
    latest_size: IntGaugeVec,
    failures: IntCounterVec,
    collected: IntCounterVec,
    defragmentations: IntCounterVec,
    db_size: IntGaugeVec,
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let gauge_by = |label: &str, name: &str, help: &str| -> Result<IntGaugeVec, prometheus::Error> {
            let g = IntGaugeVec::new(Opts::new(name, help), &[label])?;
            registry.register(Box::new(g.clone()))?;
            Ok(g)
        };
        let counter_by = |label: &str, name: &str, help: &str| -> Result<IntCounterVec, prometheus::Error> {
            let c = IntCounterVec::new(Opts::new(name, help), &[label])?;
            registry.register(Box::new(c.clone()))?;
            Ok(c)
        };
        let gauge = |name: &str, help: &str| gauge_by("kind", name, help);
        let counter = |name: &str, help: &str| counter_by("kind", name, help);
        Ok(Self {
            latest_timestamp: gauge(
                "etcdbr_snapshot_latest_timestamp",
                "When the latest snapshot of a kind was stored (Unix seconds).",
            )?,
            latest_revision: gauge(
                "etcdbr_snapshot_latest_revision",
                "The last etcd revision the latest snapshot of a kind covers.",
            )?,
            latest_size: gauge("etcdbr_snapshot_latest_size_bytes", "The size of the latest snapshot of a kind.")?,
            failures: counter(
                "etcdbr_snapshot_failures_total",
                "Snapshots of a kind that could not be taken or stored.",
            )?,
            collected: counter("etcdbr_snapshot_gc_total", "Snapshots of a kind deleted by garbage collection.")?,
            defragmentations: counter_by(
                "succeeded",
                "etcdbr_defragmentation_total",
                "Scheduled defragmentations, by result.",
            )?,
            db_size: gauge_by("part", "etcdbr_db_size_bytes", "etcd's database after the last defragmentation.")?,
            registry,
        })
    }

    pub fn stored(&self, kind: Kind, unix: i64, revision: i64, size: u64) {
        let k = [kind.as_str()];
        self.latest_timestamp.with_label_values(&k).set(unix);
        self.latest_revision.with_label_values(&k).set(revision);
        self.latest_size.with_label_values(&k).set(i64::try_from(size).unwrap_or(i64::MAX));
    }

    pub fn failed(&self, kind: Kind) {
        self.failures.with_label_values(&[kind.as_str()]).inc();
    }

    pub fn collected(&self, kind: Kind, n: usize) {
        self.collected.with_label_values(&[kind.as_str()]).inc_by(n as u64);
    }

    /// A scheduled defragmentation's outcome, and the database's size after a successful one.
    pub fn defragmented(&self, after: Option<crate::gateway::DbSize>) {
        self.defragmentations.with_label_values(&[if after.is_some() { "true" } else { "false" }]).inc();
        if let Some(size) = after {
            self.db_size.with_label_values(&["file"]).set(size.file);
            self.db_size.with_label_values(&["in_use"]).set(size.in_use);
        }
    }
}
