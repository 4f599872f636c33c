//! The backup sidecar's loop: a full snapshot at start (when none is due-free in the store) and at
//! every tick of the schedule, a delta snapshot of every revision since every `delta_period`, the
//! last delta on SIGTERM, an early full snapshot once the deltas since the last one cover
//! `compaction_revisions` revisions (snapshot compaction: a restore replays at most about that
//! many), garbage collection, a defragmentation of etcd at every tick of its schedule, and a
//! health flag that drops when storing has failed for longer than
//! `failure_threshold`.

use crate::chain::{self, Policy};
use crate::delta::{self, Revision};
use crate::gateway::{Etcd, WatchMessage};
use crate::metrics::Metrics;
use crate::names::{Kind, Snapshot};
use crate::schedule::{Schedule, arm, now_unix};
use crate::snapshot::{self, SnapshotError};
use crate::store::Store;
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Config {
    pub full_schedule: Schedule,
    /// When etcd is defragmented (etcd-backup-restore's `--defragmentation-schedule`); never
    /// without one.
    pub defrag_schedule: Option<Schedule>,
    pub delta_period: Duration,
    pub policy: Policy,
    pub gc_period: Duration,
    pub failure_threshold: Duration,
    /// A full snapshot is taken once the deltas since the newest one cover this many revisions
    /// (etcd-druid's compaction `eventsThreshold`); 0 never.
    pub compaction_revisions: u64,
}

/// Deltas buffered beyond this many bytes (a store that keeps failing) are dropped, and the
/// next successful write is a full snapshot instead.
const BUFFER_LIMIT: usize = 64 << 20;

/// How long the shutdown waits for the watch to deliver the revisions etcd had written when it
/// came.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Whether backups are healthy, for `/readyz`.
#[derive(Debug)]
pub struct Health {
    flag: Arc<AtomicBool>,
    failing_since: Option<Instant>,
    threshold: Duration,
}

impl Health {
    pub fn new(flag: Arc<AtomicBool>, threshold: Duration) -> Self {
        flag.store(true, Ordering::Release);
        Self { flag, failing_since: None, threshold }
    }

    fn ok(&mut self) {
        self.failing_since = None;
        self.flag.store(true, Ordering::Release);
    }

    fn failed(&mut self, what: &str, error: &(dyn std::error::Error + 'static)) {
        tracing::warn!(error = %runtime::cli::report(error), "{what} failed");
        let since = *self.failing_since.get_or_insert_with(Instant::now);
        self.flag.store(since.elapsed() < self.threshold, Ordering::Release);
    }

    fn refresh(&self) {
        if let Some(since) = self.failing_since {
            self.flag.store(since.elapsed() < self.threshold, Ordering::Release);
        }
    }
}

pub struct Snapshotter {
    pub etcd: Etcd,
    pub store: Store,
    pub config: Config,
    pub metrics: Metrics,
    pub health: Health,
    /// Revisions seen but not stored yet.
    buffer: Vec<Revision>,
    buffered_bytes: usize,
    /// The last revision stored (by a full snapshot or a delta).
    position: i64,
    need_full: bool,
    /// Revisions stored in deltas since the newest full snapshot.
    since_full: u64,
}

impl std::fmt::Debug for Snapshotter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshotter")
            .field("store", &self.store)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl Snapshotter {
    pub fn new(etcd: Etcd, store: Store, config: Config, metrics: Metrics, health: Health) -> Self {
        Self {
            etcd,
            store,
            config,
            metrics,
            health,
            buffer: Vec::new(),
            buffered_bytes: 0,
            position: 0,
            need_full: false,
            since_full: 0,
        }
    }

    /// Takes and stores a full snapshot (after storing what is buffered).
    async fn full(&mut self) -> Result<(), SnapshotError> {
        // A buffer with a hole (an unreadable event) is not stored: the snapshot covers it.
        if !self.need_full {
            self.flush().await;
        }
        let dir = self.store.dir().to_path_buf();
        let unix = now_unix();
        let scratch_name = format!("Full-pending-{unix}.db");
        let taken = snapshot::take(&self.etcd, &dir, &scratch_name).await;
        let taken = match taken {
            Ok(t) => t,
            Err(e) => {
                self.metrics.failed(Kind::Full);
                return Err(e);
            }
        };
        let name = Snapshot::full(taken.revision, unix);
        let path = self.store.path(&name);
        if let Err(source) = tokio::fs::rename(&taken.path, &path).await {
            self.metrics.failed(Kind::Full);
            return Err(SnapshotError::Io { action: "renaming the snapshot to", path, source });
        }
        snapshot::sync_dir(&dir).await?;
        tracing::info!(file = %name.file_name(), size = taken.size, "stored a full snapshot");
        self.metrics.stored(Kind::Full, unix, taken.revision, taken.size);
        self.position = self.position.max(taken.revision);
        self.need_full = false;
        self.since_full = 0;
        Ok(())
    }

    /// Stores the buffered revisions as a delta (nothing when the buffer is empty). On failure
    /// the buffer stays for the next attempt, unless it grew beyond [`BUFFER_LIMIT`].
    async fn flush(&mut self) {
        let Some(end) = self.buffer.last().map(|r| r.revision) else {
            return;
        };
        let name = Snapshot::incr(self.position + 1, end, now_unix());
        let bytes = delta::encode(&self.buffer);
        match self.store.write(&name, &bytes).await {
            Ok(_) => {
                tracing::debug!(file = %name.file_name(), revisions = self.buffer.len(), "stored a delta snapshot");
                self.metrics.stored(Kind::Incr, name.unix, end, bytes.len() as u64);
                self.since_full += self.buffer.len() as u64;
                self.position = end;
                self.buffer.clear();
                self.buffered_bytes = 0;
                self.health.ok();
            }
            Err(e) => {
                self.metrics.failed(Kind::Incr);
                self.health.failed("storing a delta snapshot", &e);
                if self.buffered_bytes > BUFFER_LIMIT {
                    tracing::warn!(
                        bytes = self.buffered_bytes,
                        "dropping the buffered revisions; the next snapshot is a full one"
                    );
                    self.buffer.clear();
                    self.buffered_bytes = 0;
                    self.need_full = true;
                }
            }
        }
    }

    async fn collect_garbage(&mut self) {
        let result = async {
            let all = self.store.list().await?;
            let gone = chain::garbage(&all, self.config.policy, now_unix());
            self.store.delete(&gone).await?;
            Ok::<_, SnapshotError>(gone)
        }
        .await;
        match result {
            Ok(gone) => {
                for kind in [Kind::Full, Kind::Incr] {
                    let n = gone.iter().filter(|s| s.kind == kind).count();
                    if n > 0 {
                        self.metrics.collected(kind, n);
                        tracing::info!(%kind, n, "garbage collection deleted snapshots");
                    }
                }
            }
            Err(e) => self.health.failed("garbage collection", &e),
        }
    }

    /// Where to continue: from the store's chain when it continues etcd's history and no full
    /// snapshot is due, otherwise from a new full snapshot.
    async fn start(&mut self) -> Result<(), SnapshotError> {
        let all = self.store.list().await?;
        let current = self.etcd.revision().await?;
        let chain = chain::restore_chain(&all);
        let due = chain::full_due(chain.as_ref().map(|c| c.full.unix), self.config.full_schedule.previous(now_unix()));
        match chain {
            Some(c) if !due && c.gap_at.is_none() && c.end() <= current => {
                tracing::info!(from = c.end() + 1, full = %c.full.file_name(), "continuing the store's chain");
                self.position = c.end();
                self.since_full = u64::try_from(c.end() - c.full.end).unwrap_or(0);
                Ok(())
            }
            _ => self.full().await,
        }
    }

    /// Runs until `shutdown` resolves; then stores what is buffered.
    pub async fn run(mut self, shutdown: impl std::future::Future<Output = ()>) {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut retry = tokio::time::interval(Duration::from_secs(2));
        // Waiting for etcd and the first position.
        loop {
            tokio::select! {
                _ = &mut shutdown => return,
                _ = retry.tick() => {}
            }
            match self.start().await {
                Ok(()) => {
                    self.health.ok();
                    break;
                }
                Err(e) => self.health.failed("starting the backups", &e),
            }
        }
        let mut deltas = tokio::time::interval(self.config.delta_period);
        let mut gc = tokio::time::interval(self.config.gc_period);
        deltas.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        gc.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The schedule's next tick is worked out once per tick, not for every watch message.
        let full_timer = tokio::time::sleep(Duration::ZERO);
        let mut full_timer = std::pin::pin!(full_timer);
        let mut next_full = arm(Some(&self.config.full_schedule), full_timer.as_mut());
        let defrag_timer = tokio::time::sleep(Duration::ZERO);
        let mut defrag_timer = std::pin::pin!(defrag_timer);
        let mut next_defrag = arm(self.config.defrag_schedule.as_ref(), defrag_timer.as_mut());
        'watching: loop {
            let watch = match self.etcd.watch(self.position + 1).await {
                Ok(w) => w,
                Err(e) => {
                    self.health.failed("starting the watch", &e);
                    tokio::select! {
                        _ = &mut shutdown => break 'watching,
                        _ = tokio::time::sleep(Duration::from_secs(2)) => continue 'watching,
                    }
                }
            };
            let mut watch = std::pin::pin!(watch);
            loop {
                tokio::select! {
                    _ = &mut shutdown => {
                        self.drain(watch.as_mut()).await;
                        break 'watching;
                    }
                    message = watch.next() => match message {
                        Some(Ok(WatchMessage::Events { events, .. })) => self.take_events(&events),
                        Some(Ok(WatchMessage::Compacted { compact_revision })) => {
                            tracing::warn!(compact_revision, from = self.position + 1, "the watch's start is compacted; taking a full snapshot");
                            self.buffer.clear();
                            self.buffered_bytes = 0;
                            self.full_or_fail().await;
                            if self.need_full {
                                tokio::time::sleep(Duration::from_secs(2)).await;
                            }
                            continue 'watching;
                        }
                        Some(Ok(WatchMessage::Canceled(reason)) | Err(reason)) => {
                            self.health.failed("watching etcd", &std::io::Error::other(reason));
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            continue 'watching;
                        }
                        None => {
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            continue 'watching;
                        }
                    },
                    _ = deltas.tick() => {
                        if self.need_full {
                            self.full_or_fail().await;
                        } else {
                            self.flush().await;
                            if chain::compaction_due(self.since_full, self.config.compaction_revisions) {
                                tracing::info!(revisions = self.since_full, threshold = self.config.compaction_revisions, "the deltas since the last full snapshot reached the compaction threshold; taking a full snapshot");
                                self.full_or_fail().await;
                            }
                        }
                        self.health.refresh();
                    }
                    _ = &mut full_timer => {
                        if now_unix() >= next_full {
                            self.full_or_fail().await;
                        }
                        next_full = arm(Some(&self.config.full_schedule), full_timer.as_mut());
                    }
                    _ = &mut defrag_timer => {
                        if now_unix() >= next_defrag {
                            crate::defrag::defragment(&self.etcd, &self.metrics).await;
                        }
                        next_defrag = arm(self.config.defrag_schedule.as_ref(), defrag_timer.as_mut());
                    }
                    _ = gc.tick() => self.collect_garbage().await,
                }
            }
        }
        // SIGTERM: what etcd wrote since the last delta is stored before the pod goes.
        self.flush().await;
        tracing::info!(position = self.position, "stopped; every revision seen is stored");
    }

    /// On shutdown: reads the watch until it has delivered every revision etcd had when the
    /// shutdown came (bounded by [`DRAIN_LIMIT`]). A write etcd acknowledged just before is
    /// otherwise still on its way to the watch, and the last delta would miss it.
    async fn drain(
        &mut self,
        mut watch: std::pin::Pin<&mut impl futures::Stream<Item = Result<WatchMessage, String>>>,
    ) {
        if self.need_full {
            // Events are not buffered while a full snapshot is due; there is nothing to store.
            return;
        }
        let target = match tokio::time::timeout(DRAIN_LIMIT, self.etcd.revision()).await {
            Ok(Ok(revision)) => revision,
            Ok(Err(e)) => {
                tracing::warn!(error = %runtime::cli::report(&e), "reading etcd's revision at shutdown failed; storing what the watch delivered");
                return;
            }
            Err(_) => {
                tracing::warn!("etcd did not tell its revision at shutdown in time; storing what the watch delivered");
                return;
            }
        };
        let deadline = tokio::time::Instant::now() + DRAIN_LIMIT;
        while !self.need_full && self.seen() < target {
            match tokio::time::timeout_at(deadline, watch.next()).await {
                Ok(Some(Ok(WatchMessage::Events { events, .. }))) => self.take_events(&events),
                Ok(other) => {
                    tracing::warn!(seen = self.seen(), target, message = ?other, "the watch ended at shutdown before it delivered every revision");
                    return;
                }
                Err(_) => {
                    tracing::warn!(
                        seen = self.seen(),
                        target,
                        "the watch did not deliver every revision at shutdown in time"
                    );
                    return;
                }
            }
        }
    }

    /// The newest revision the watch delivered (stored or buffered).
    fn seen(&self) -> i64 {
        self.buffer.last().map_or(self.position, |r| r.revision.max(self.position))
    }

    async fn full_or_fail(&mut self) {
        match self.full().await {
            Ok(()) => self.health.ok(),
            Err(e) => {
                self.health.failed("taking a full snapshot", &e);
                self.need_full = true;
            }
        }
    }

    fn take_events(&mut self, events: &[serde_json::Value]) {
        for event in events {
            match crate::gateway::event(event) {
                Ok(_) if self.need_full => {}
                Ok((revision, _)) if revision <= self.position => {}
                Ok((revision, e)) => {
                    self.buffered_bytes += match &e {
                        delta::Event::Put { key, value } => key.len() + value.len(),
                        delta::Event::Delete { key } => key.len(),
                    };
                    delta::push(&mut self.buffer, revision, e);
                }
                Err(reason) => {
                    // Not storable: only a full snapshot covers it now.
                    self.health.failed("reading a watch event", &std::io::Error::other(reason));
                    self.buffer.clear();
                    self.buffered_bytes = 0;
                    self.need_full = true;
                }
            }
        }
    }
}
