//! etcd's scheduled defragmentation: etcd rewrites its database file without the pages that
//! compactions freed (the file never shrinks by itself). The backup sidecar runs it on its
//! schedule beside the snapshots ([`crate::snapshotter`]); an etcd without backups gets the same
//! sidecar without a store, which only defragments ([`run`]), as etcd-druid's backup-restore
//! sidecar does for an etcd without a store.

use crate::gateway::Etcd;
use crate::metrics::Metrics;
use crate::schedule::{Schedule, arm, now_unix};
use std::time::Instant;

/// Defragments etcd once. The data and its revisions stay as they are, so a chain of snapshots
/// goes on; a failure is logged and counted, and the next tick tries again.
pub async fn defragment(etcd: &Etcd, metrics: &Metrics) {
    let before = etcd.db_size().await.ok();
    let started = Instant::now();
    let result = async {
        etcd.defragment().await?;
        etcd.db_size().await
    }
    .await;
    match result {
        Ok(after) => {
            tracing::info!(
                before_bytes = before.map(|b| b.file),
                after_bytes = after.file,
                in_use_bytes = after.in_use,
                seconds = started.elapsed().as_secs_f64(),
                "defragmented etcd"
            );
            metrics.defragmented(Some(after));
        }
        Err(e) => {
            tracing::warn!(error = %runtime::cli::report(&e), "defragmenting etcd failed; the next tick tries again");
            metrics.defragmented(None);
        }
    }
}

/// Defragments etcd at every tick of `schedule` until `shutdown` resolves (the sidecar of an
/// etcd without backups).
pub async fn run(etcd: Etcd, schedule: Schedule, metrics: Metrics, shutdown: impl std::future::Future<Output = ()>) {
    let mut shutdown = std::pin::pin!(shutdown);
    let timer = tokio::time::sleep(std::time::Duration::ZERO);
    let mut timer = std::pin::pin!(timer);
    let mut next = arm(Some(&schedule), timer.as_mut());
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = &mut timer => {
                if now_unix() >= next {
                    defragment(&etcd, &metrics).await;
                }
                next = arm(Some(&schedule), timer.as_mut());
            }
        }
    }
}
