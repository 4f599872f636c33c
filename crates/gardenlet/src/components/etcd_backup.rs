//! The backup side of the etcd pod (GEP-6, crates/etcd-backup): the `restore` init container
//! that rebuilds a missing data directory from the shoot's backup entry (the migration's final
//! snapshot when one is pending, otherwise the newest full snapshot and its deltas), and the
//! `backup` sidecar that stores full snapshots on the shoot's schedule and a delta of every
//! revision in between. Both exist only when the shoot has a backup entry with a directory;
//! without one the `maintenance` sidecar (the same binary without a store) only defragments etcd.

use super::common::{self, ControlPlaneValues, Images, file, secrets};
pub use super::etcd_backup_settings::{
    EtcdBackup, EtcdBackupSettings, GarbageCollectionPolicy, defragmentation_schedule, full_snapshot_schedule,
};
use super::security::{self, limits};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction, HostPathVolumeSource, ObjectFieldSelector, Probe,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Where the backup entry's directory is mounted.
pub const BACKUP_MOUNT: &str = "/var/etcd/backup";
/// The sidecar's `/readyz` and `/metrics`.
pub const BACKUP_PORT: i32 = 2382;
/// The init container that restores a missing data directory; its termination message says
/// what it restored from (the care controller reports it).
pub const RESTORE_CONTAINER: &str = "restore";

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

/// The restore init container (`peer`: the member's peer URL, with `$(POD_NAME)`), as [`security::NONROOT`], after the data-dir step). It reads the
/// store only; its outcome is its termination message (`kubectl get pod -o yaml` shows it).
pub fn restore(
    values: &ControlPlaneValues,
    data_mount: VolumeMount,
    data_dir: &str,
    final_snapshot: &str,
    peer: &str,
) -> Container {
    Container {
        name: RESTORE_CONTAINER.to_string(),
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

/// The init container that brings a member of a multi-member etcd into the cluster
/// (`etcd-backup join`, before the restore): the first member bootstraps when no other answers;
/// the others, and a member whose data is lost, join the running cluster as learners and are
/// promoted. It runs etcd itself while it joins, with `etcd_args` (the etcd container's flags,
/// `$(POD_NAME)` included) and the etcd container's mounts; `members` are every member's
/// `name=clientURL`.
pub fn join(
    values: &ControlPlaneValues,
    mounts: Vec<VolumeMount>,
    data_dir: &str,
    peer: &str,
    members: &[String],
    etcd_args: &[String],
) -> Container {
    let mut args = vec![
        format!("--data-dir={data_dir}"),
        "--name=$(POD_NAME)".to_string(),
        format!("--peer-url={peer}"),
        format!("--members={}", members.join(",")),
        format!("--cacert={}", file(secrets::CA_ETCD_BUNDLE, secrets::BUNDLE)),
        format!("--cert={}", file(secrets::ETCD_SERVER, secrets::TLS_CERT)),
        format!("--key={}", file(secrets::ETCD_SERVER, secrets::TLS_KEY)),
        "--etcd=etcd".to_string(),
        "--".to_string(),
    ];
    args.extend(etcd_args.iter().cloned());
    Container {
        name: JOIN_CONTAINER.to_string(),
        image: Some(image(values)),
        command: Some(vec!["etcd-backup".to_string(), "join".to_string()]),
        args: Some(args),
        env: Some(vec![pod_name_env()]),
        resources: Some(common::resources(values.requests_percent, 200, 300, limits::ETCD_MIB)),
        security_context: Some(security::container()),
        volume_mounts: Some(mounts),
        ..Default::default()
    }
}

/// The init container of [`join`]; its termination message says how the member joined.
pub const JOIN_CONTAINER: &str = "join";

/// The backup sidecar. It reaches etcd on loopback with the member's own certificate (a client
/// certificate too, already in the pod) and writes to the store; it also defragments etcd.
pub fn sidecar(values: &ControlPlaneValues, backup: &EtcdBackup, client_port: i32) -> Container {
    let s = &backup.settings;
    let mut args = etcd_access(values, client_port);
    args.extend([
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
        format!("--compaction-revisions-threshold={}", s.compaction_revisions_threshold),
    ]);
    let mut container = serving(values, "backup", args);
    container.volume_mounts.get_or_insert_with(Vec::new).push(backup_mount(false));
    container
}

/// The sidecar of an etcd without backups: the same binary without a store, which only
/// defragments etcd on the maintenance schedule (as etcd-druid's sidecar does without a store).
pub fn maintenance_sidecar(values: &ControlPlaneValues, client_port: i32) -> Container {
    serving(values, "maintenance", etcd_access(values, client_port))
}

/// The flags that reach etcd (on loopback, with the member's certificate) and schedule its
/// defragmentation.
fn etcd_access(values: &ControlPlaneValues, client_port: i32) -> Vec<String> {
    vec![
        format!("--endpoint=https://localhost:{client_port}"),
        "--server-name=localhost".to_string(),
        format!("--cacert={}", file(secrets::CA_ETCD_BUNDLE, secrets::BUNDLE)),
        format!("--cert={}", file(secrets::ETCD_SERVER, secrets::TLS_CERT)),
        format!("--key={}", file(secrets::ETCD_SERVER, secrets::TLS_KEY)),
        format!("--defragmentation-schedule={}", values.etcd_defragmentation_schedule),
        format!("--listen=0.0.0.0:{BACKUP_PORT}"),
    ]
}

/// `etcd-backup serve` with `args`: its metrics port, readiness probe, resources and the
/// certificates' mounts.
fn serving(values: &ControlPlaneValues, name: &str, args: Vec<String>) -> Container {
    // The pod template has both secrets' volumes already (the etcd container mounts them).
    let (_, cert_mount) = common::secret_volume(secrets::ETCD_SERVER);
    let (_, ca_mount) = common::secret_volume(secrets::CA_ETCD_BUNDLE);
    Container {
        name: name.to_string(),
        image: Some(image(values)),
        command: Some(vec!["etcd-backup".to_string(), "serve".to_string()]),
        args: Some(args),
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
        volume_mounts: Some(vec![ca_mount, cert_mount]),
        ..Default::default()
    }
}
