//! The backup side of the etcd pod (GEP-6, crates/etcd-backup): the `restore` init container
//! that rebuilds a missing data directory from the shoot's backup entry (the migration's final
//! snapshot when one is pending, otherwise the newest full snapshot and its deltas), and the
//! `backup` sidecar that stores full snapshots on the shoot's schedule and a delta of every
//! revision in between. Both exist only when the shoot has a backup entry with a directory.

use super::common::{self, ControlPlaneValues, Images, file, secrets};
use super::security::{self, limits};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction, HostPathVolumeSource, ObjectFieldSelector, Probe,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

/// Where the backup entry's directory is mounted.
pub const BACKUP_MOUNT: &str = "/var/etcd/backup";
/// The sidecar's `/readyz` and `/metrics`.
pub const BACKUP_PORT: i32 = 2382;

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

fn image(values: &ControlPlaneValues) -> String {
    Images::resolve(&values.images.etcd_backup, &values.kubernetes_version)
}

fn backup_mount(read_only: bool) -> VolumeMount {
    VolumeMount {
        name: "backup".to_string(),
        mount_path: BACKUP_MOUNT.to_string(),
        read_only: Some(read_only),
        ..Default::default()
    }
}

/// The backup entry's directory as a volume.
pub fn volume(backup: &EtcdBackup) -> Volume {
    Volume {
        name: "backup".to_string(),
        host_path: Some(HostPathVolumeSource { path: backup.dir.clone(), type_: Some("Directory".to_string()) }),
        ..Default::default()
    }
}

pub(super) fn pod_name_env() -> EnvVar {
    EnvVar {
        name: "POD_NAME".to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector { field_path: "metadata.name".to_string(), ..Default::default() }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The restore init container (as [`security::NONROOT`], after the data-dir step). It reads the
/// store only; its outcome is its termination message (`kubectl get pod -o yaml` shows it).
pub fn restore(
    values: &ControlPlaneValues,
    data_mount: VolumeMount,
    data_dir: &str,
    final_snapshot: &str,
) -> Container {
    let peer = format!(
        "https://$(POD_NAME).{}.{}.svc:{}",
        super::etcd::PEER_SERVICE,
        values.namespace,
        super::etcd::PEER_PORT
    );
    Container {
        name: "restore".to_string(),
        image: Some(image(values)),
        command: Some(vec!["etcd-backup".to_string(), "restore".to_string()]),
        args: Some(vec![
            format!("--store={BACKUP_MOUNT}"),
            format!("--data-dir={data_dir}"),
            "--name=$(POD_NAME)".to_string(),
            format!("--initial-cluster=$(POD_NAME)={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--final-snapshot={final_snapshot}"),
        ]),
        env: Some(vec![pod_name_env()]),
        resources: Some(common::resources(values.requests_percent, 200, 300, limits::ETCD_RESTORE_MIB)),
        security_context: Some(security::container()),
        volume_mounts: Some(vec![data_mount, backup_mount(true)]),
        ..Default::default()
    }
}

/// The backup sidecar. It reaches etcd on loopback with the member's own certificate (a client
/// certificate too, already in the pod) and writes to the store.
pub fn sidecar(values: &ControlPlaneValues, backup: &EtcdBackup) -> Container {
    let s = &backup.settings;
    // The pod template has both secrets' volumes already (the etcd container mounts them).
    let (_, cert_mount) = common::secret_volume(secrets::ETCD_SERVER);
    let (_, ca_mount) = common::secret_volume(secrets::CA_ETCD_BUNDLE);
    Container {
        name: "backup".to_string(),
        image: Some(image(values)),
        command: Some(vec!["etcd-backup".to_string(), "serve".to_string()]),
        args: Some(vec![
            format!("--endpoint=https://localhost:{}", super::etcd::CLIENT_PORT),
            "--server-name=localhost".to_string(),
            format!("--cacert={}", file(secrets::CA_ETCD_BUNDLE, secrets::BUNDLE)),
            format!("--cert={}", file(secrets::ETCD_SERVER, secrets::TLS_CERT)),
            format!("--key={}", file(secrets::ETCD_SERVER, secrets::TLS_KEY)),
            format!("--store={BACKUP_MOUNT}"),
            format!("--full-snapshot-schedule={}", backup.full_snapshot_schedule),
            format!("--delta-snapshot-period-seconds={}", s.delta_snapshot_period_seconds),
            format!(
                "--garbage-collection-policy={}",
                match s.garbage_collection_policy {
                    GarbageCollectionPolicy::Exponential => "exponential",
                    GarbageCollectionPolicy::LimitBased => "limit-based",
                }
            ),
            format!("--max-backups={}", s.max_backups),
            format!("--failure-threshold-seconds={}", s.failure_threshold_seconds),
            format!("--listen=0.0.0.0:{BACKUP_PORT}"),
        ]),
        ports: Some(vec![ContainerPort {
            name: Some("backup".into()),
            container_port: BACKUP_PORT,
            ..Default::default()
        }]),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/readyz".to_string()),
                port: IntOrString::Int(BACKUP_PORT),
                scheme: Some("HTTP".to_string()),
                ..Default::default()
            }),
            period_seconds: Some(10),
            failure_threshold: Some(3),
            ..Default::default()
        }),
        resources: Some(common::resources(values.requests_percent, 20, 32, limits::ETCD_BACKUP_MIB)),
        security_context: Some(security::container()),
        volume_mounts: Some(vec![ca_mount, cert_mount, backup_mount(false)]),
        ..Default::default()
    }
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
    fn settings_outside_their_range_are_named() {
        assert_eq!(EtcdBackupSettings::default().problem(), None);
        let bad = EtcdBackupSettings { delta_snapshot_period_seconds: 0, ..Default::default() };
        assert_eq!(bad.problem().map(|p| p.0), Some("etcdBackup.deltaSnapshotPeriodSeconds"));
        let bad = EtcdBackupSettings { max_backups: 0, ..Default::default() };
        assert_eq!(bad.problem().map(|p| p.0), Some("etcdBackup.maxBackups"));
    }
}
