//! How a shoot's etcd is backed up: gardenlet's `etcdBackup` settings and the values the etcd
//! pod is built from (`super::etcd_backup` builds the pod; docs/backup.md).

use serde::{Deserialize, Serialize};

/// How the seed's shoots are backed up (gardenlet's `etcdBackup`; docs/backup.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EtcdBackupSettings {
    /// Seconds between delta snapshots (1 to 3600): the most writes a lost volume can cost.
    pub delta_snapshot_period_seconds: u64,
    /// `Exponential` (etcd-backup-restore's default) or `LimitBased`.
    pub garbage_collection_policy: GarbageCollectionPolicy,
    /// Full snapshots the `LimitBased` policy keeps.
    pub max_backups: u32,
    /// The sidecar turns unready (and with it the etcd pod) when storing snapshots has failed
    /// for this long.
    pub failure_threshold_seconds: u64,
    /// Snapshot compaction: a full snapshot is taken early once the deltas since the newest one
    /// cover this many revisions, so a restore replays at most about that many (0: never; the
    /// daily full snapshot alone bounds the chain).
    pub compaction_revisions_threshold: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GarbageCollectionPolicy {
    Exponential,
    LimitBased,
}

impl Default for EtcdBackupSettings {
    fn default() -> Self {
        Self {
            delta_snapshot_period_seconds: 20,
            garbage_collection_policy: GarbageCollectionPolicy::Exponential,
            max_backups: 7,
            failure_threshold_seconds: 600,
            compaction_revisions_threshold: 10_000,
        }
    }
}

impl EtcdBackupSettings {
    /// The first problem, as `(field, problem)`.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if !(1..=3600).contains(&self.delta_snapshot_period_seconds) {
            return Some((
                "etcdBackup.deltaSnapshotPeriodSeconds",
                format!("must be between 1 and 3600, is {}", self.delta_snapshot_period_seconds),
            ));
        }
        if self.max_backups == 0 {
            return Some(("etcdBackup.maxBackups", "must be at least 1".to_string()));
        }
        None
    }
}

/// The shoot's backup: where, how, and when full snapshots are taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdBackup {
    /// The backup entry's directory on the seed host.
    pub dir: String,
    pub settings: EtcdBackupSettings,
    pub full_snapshot_schedule: String,
}

/// The daily full snapshot at the beginning of the shoot's maintenance window, as Gardener
/// schedules it (`begin` in seconds of the UTC day); midnight UTC without a window.
pub fn full_snapshot_schedule(maintenance_begin: Option<i64>) -> String {
    let begin = maintenance_begin.unwrap_or(0).rem_euclid(86_400);
    format!("{} {} * * *", (begin / 60) % 60, begin / 3600)
}

/// etcd's defragmentation: every third day when the shoot's maintenance window begins, as
/// Gardener schedules it (`%d %d */3 * *`); midnight UTC without a window. Defragmenting
/// blocks etcd's writes for its duration, which the window is for.
pub fn defragmentation_schedule(maintenance_begin: Option<i64>) -> String {
    let begin = maintenance_begin.unwrap_or(0).rem_euclid(86_400);
    format!("{} {} */3 * *", (begin / 60) % 60, begin / 3600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_snapshots_are_taken_daily_when_the_maintenance_window_begins() {
        assert_eq!(full_snapshot_schedule(None), "0 0 * * *");
        assert_eq!(full_snapshot_schedule(Some(22 * 3600 + 30 * 60 + 15)), "30 22 * * *");
        assert_eq!(full_snapshot_schedule(Some(-3600)), "0 23 * * *");
    }

    #[test]
    fn etcd_is_defragmented_every_third_day_when_the_maintenance_window_begins() {
        assert_eq!(defragmentation_schedule(None), "0 0 */3 * *");
        assert_eq!(defragmentation_schedule(Some(22 * 3600 + 30 * 60)), "30 22 */3 * *");
    }

    #[test]
    fn settings_outside_their_range_are_named() {
        assert_eq!(EtcdBackupSettings::default().problem(), None);
        let bad = EtcdBackupSettings { delta_snapshot_period_seconds: 0, ..Default::default() };
        assert_eq!(bad.problem().map(|p| p.0), Some("etcdBackup.deltaSnapshotPeriodSeconds"));
        let bad = EtcdBackupSettings { max_backups: 0, ..Default::default() };
        assert_eq!(bad.problem().map(|p| p.0), Some("etcdBackup.maxBackups"));
    }
}
