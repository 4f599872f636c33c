//! etcd: a StatefulSet `etcd-main` with TLS for clients and peers (certificates from the
//! shoot's etcd CA), its client Service and its headless peer Service; with a backup entry, the
//! restore step and the backup sidecar of [`super::etcd_backup`].

use super::availability;
use super::common::{self, ControlPlaneValues, Images, component_labels, file, secrets};
use super::etcd_backup;
use super::security::{self, DATA_DIR_CAPABILITIES, NONROOT, limits};
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, HTTPGetAction, PersistentVolumeClaim, PersistentVolumeClaimSpec, Probe, Service,
    ServicePort, ServiceSpec, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

pub const NAME: &str = "etcd-main";
pub const CLIENT_SERVICE: &str = "etcd-main-client";
pub const PEER_SERVICE: &str = "etcd-main-peer";
pub const CLIENT_PORT: i32 = 2379;
pub const PEER_PORT: i32 = 2380;
pub const METRICS_PORT: i32 = 2381;
pub const APP: &str = "etcd-statefulset";
pub const ROLE: &str = "main";
/// Where the data volume is mounted.
const VOLUME: &str = "/var/etcd";
const DATA_DIR: &str = "/var/etcd/data";
/// The file a migration's final snapshot is stored as, in the backup entry's directory.
pub const FINAL_SNAPSHOT: &str = "final-snapshot.db";
/// What the final snapshot is renamed to once a restore from it succeeded, so that a later
/// loss of the data volume never silently brings back that old state.
pub const RESTORED_SNAPSHOT: &str = "final-snapshot.restored.db";

/// The ownership step before everything else in the pod (as root, see
/// [`DATA_DIR_CAPABILITIES`]): the data volume is a hostPath PersistentVolume, to which the
/// kubelet applies no `fsGroup`; it is created owned by root, and the volumes of shoots whose
/// etcd ran as root hold root's files. So the volume and everything in it is given to
/// `uid:gid` at every start (a few files: idempotent and quick), and the data directory gets
/// mode 0700, which etcd asks for (3.4 and 3.5 warn otherwise). Symbolic links are changed
/// themselves, never followed (`-h`; the directory is not followed either), so nothing a
/// compromised etcd put into its volume makes this root step touch files elsewhere. The restore
/// and etcd then run as `uid:gid`.
pub fn data_dir_script(uid: i64, gid: i64) -> String {
    format!(
        "set -eu\n\
         chown -R -h {uid}:{gid} {VOLUME}\n\
         if [ -d {DATA_DIR} ] && [ ! -L {DATA_DIR} ]; then chmod 0700 {DATA_DIR}; fi\n"
    )
}

fn data_mount() -> VolumeMount {
    VolumeMount { name: "data".to_string(), mount_path: VOLUME.to_string(), ..Default::default() }
}

/// The init container that hands the data volume to [`NONROOT`] ([`data_dir_script`]): the
/// one root process of the control plane, with only [`DATA_DIR_CAPABILITIES`]. It uses the
/// restore image (etcd's own 3.5 images have no shell). It mounts the data volume alone: the
/// backup store, which the restore mounts inside the volume's path, is never handed over.
fn data_dir(values: &ControlPlaneValues) -> Container {
    Container {
        name: "data-dir".to_string(),
        image: Some(Images::resolve(&values.images.etcd_restore, &values.kubernetes_version)),
        command: Some(vec!["sh".to_string(), "-c".to_string(), data_dir_script(NONROOT, NONROOT)]),
        resources: Some(common::resources(values.requests_percent, 10, 16, limits::ETCD_DATA_DIR_MIB)),
        security_context: Some(security::root_with(DATA_DIR_CAPABILITIES)),
        volume_mounts: Some(vec![data_mount()]),
        ..Default::default()
    }
}

fn labels() -> BTreeMap<String, String> {
    component_labels(APP, ROLE)
}

/// The etcd StatefulSet.
pub fn statefulset(values: &ControlPlaneValues) -> StatefulSet {
    let ns = &values.namespace;
    let own_url = |port: i32| member_url("$(POD_NAME)", ns, port);
    let args = vec![
        "--name=$(POD_NAME)".to_string(),
        format!("--data-dir={DATA_DIR}"),
        format!("--listen-client-urls=https://0.0.0.0:{CLIENT_PORT}"),
        format!("--advertise-client-urls={}", own_url(CLIENT_PORT)),
        format!("--listen-peer-urls=https://0.0.0.0:{PEER_PORT}"),
        format!("--initial-advertise-peer-urls={}", own_url(PEER_PORT)),
        // The first member bootstraps the cluster alone; the others join it as learners
        // ([`etcd_backup::join`]), after which etcd ignores this flag.
        format!("--initial-cluster={NAME}-0={}", member_url(&format!("{NAME}-0"), ns, PEER_PORT)),
        "--initial-cluster-state=new".to_string(),
        format!("--listen-metrics-urls=http://0.0.0.0:{METRICS_PORT}"),
        "--client-cert-auth=true".to_string(),
        format!("--trusted-ca-file={}", file(secrets::CA_ETCD_BUNDLE, secrets::BUNDLE)),
        format!("--cert-file={}", file(secrets::ETCD_SERVER, secrets::TLS_CERT)),
        format!("--key-file={}", file(secrets::ETCD_SERVER, secrets::TLS_KEY)),
        "--peer-client-cert-auth=true".to_string(),
        format!("--peer-trusted-ca-file={}", file(secrets::CA_ETCD_BUNDLE, secrets::BUNDLE)),
        format!("--peer-cert-file={}", file(secrets::ETCD_SERVER, secrets::TLS_CERT)),
        format!("--peer-key-file={}", file(secrets::ETCD_SERVER, secrets::TLS_KEY)),
        "--auto-compaction-mode=periodic".to_string(),
        "--auto-compaction-retention=30m".to_string(),
        "--quota-backend-bytes=8589934592".to_string(),
    ];
    let container = Container {
        name: "etcd".to_string(),
        image: Some(Images::resolve(&values.images.etcd, &values.kubernetes_version)),
        command: Some(vec!["etcd".to_string()]),
        args: Some(args.clone()),
        env: Some(vec![etcd_backup::pod_name_env()]),
        ports: Some(vec![
            ContainerPort { name: Some("client".into()), container_port: CLIENT_PORT, ..Default::default() },
            ContainerPort { name: Some("peer".into()), container_port: PEER_PORT, ..Default::default() },
            ContainerPort { name: Some("metrics".into()), container_port: METRICS_PORT, ..Default::default() },
        ]),
        readiness_probe: Some(http_probe("/health", READINESS_DELAY, READINESS_PERIOD)),
        liveness_probe: Some(http_probe("/health", 15, 5)),
        resources: Some(common::resources(values.requests_percent, 200, 300, limits::ETCD_MIB)),
        volume_mounts: Some(vec![data_mount()]),
        ..Default::default()
    };
    let mut template =
        common::pod_template(values, labels(), &[secrets::CA_ETCD_BUNDLE, secrets::ETCD_SERVER], container);
    if let Some(spec) = template.spec.as_mut() {
        let mut init = vec![data_dir(values)];
        let peer = own_url(PEER_PORT);
        if values.etcd_members() > 1 {
            // The join runs etcd with the etcd container's flags and mounts.
            let mounts = spec.containers[0].volume_mounts.clone().unwrap_or_default();
            let members = client_urls(ns, values.etcd_members());
            init.push(etcd_backup::join(values, mounts, DATA_DIR, &peer, &members, &args));
        }
        if let Some(backup) = values.etcd_backup.as_ref() {
            init.push(etcd_backup::restore(values, data_mount(), DATA_DIR, FINAL_SNAPSHOT, &peer));
            spec.containers.push(etcd_backup::sidecar(values, backup, CLIENT_PORT));
            spec.volumes.get_or_insert_with(Vec::new).push(etcd_backup::volume(backup));
        } else {
            spec.containers.push(etcd_backup::maintenance_sidecar(values, CLIENT_PORT));
        }
        spec.init_containers = Some(init);
        spec.topology_spread_constraints = availability::spread(values.failure_tolerance, &common::selector(APP, ROLE));
    }
    StatefulSet {
        metadata: common::metadata(NAME, values, labels()),
        spec: Some(StatefulSetSpec {
            replicas: Some(values.etcd_replicas),
            service_name: Some(PEER_SERVICE.to_string()),
            selector: common::selector(APP, ROLE),
            pod_management_policy: Some("Parallel".to_string()),
            template,
            volume_claim_templates: Some(vec![PersistentVolumeClaim {
                metadata: ObjectMeta { name: Some("data".to_string()), ..Default::default() },
                spec: Some(PersistentVolumeClaimSpec {
                    access_modes: Some(vec!["ReadWriteOnce".to_string()]),
                    resources: Some(VolumeResourceRequirements {
                        requests: Some(BTreeMap::from([("storage".to_string(), Quantity("10Gi".to_string()))])),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The URL of member `name` (a pod name, or `$(POD_NAME)`) on `port`, by its peer Service name.
fn member_url(name: &str, ns: &str, port: i32) -> String {
    format!("https://{name}.{PEER_SERVICE}.{ns}.svc:{port}")
}

/// Every member's `name=clientURL` (`etcd-main-0=https://etcd-main-0.etcd-main-peer.<ns>.svc:2379`),
/// the first one first: whom a joining member asks for the cluster.
pub fn client_urls(ns: &str, members: i32) -> Vec<String> {
    (0..members.max(1)).map(|i| format!("{NAME}-{i}={}", member_url(&format!("{NAME}-{i}"), ns, CLIENT_PORT))).collect()
}

/// etcd's PodDisruptionBudget when highly available (one member at a time: the quorum stays).
pub fn disruption_budget(values: &ControlPlaneValues) -> Option<serde_json::Value> {
    let metadata = common::metadata(NAME, values, labels());
    availability::disruption_budget(values.failure_tolerance, metadata, &common::selector(APP, ROLE))
}

/// etcd answers `/health` within a second of its start: the readiness probe asks early and often,
/// as every later step of a shoot's creation and wake-up waits for it (a first probe after 5 s
/// and then every 5 s made a 1-second start take 5 to 10 s). The liveness probe stays patient.
const READINESS_DELAY: i32 = 1;
const READINESS_PERIOD: i32 = 2;

fn http_probe(path: &str, initial_delay: i32, period: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port: IntOrString::Int(METRICS_PORT),
            scheme: Some("HTTP".to_string()),
            ..Default::default()
        }),
        initial_delay_seconds: Some(initial_delay),
        period_seconds: Some(period),
        failure_threshold: Some(5),
        ..Default::default()
    }
}

/// The client Service (`etcd-main-client:2379`) kube-apiserver connects to.
pub fn client_service(values: &ControlPlaneValues) -> Service {
    service(values, CLIENT_SERVICE, false, vec![port("client", CLIENT_PORT)])
}

/// The headless peer Service that gives each member a stable DNS name.
pub fn peer_service(values: &ControlPlaneValues) -> Service {
    service(values, PEER_SERVICE, true, vec![port("peer", PEER_PORT), port("client", CLIENT_PORT)])
}

fn port(name: &str, port: i32) -> ServicePort {
    ServicePort {
        name: Some(name.to_string()),
        port,
        target_port: Some(IntOrString::Int(port)),
        protocol: Some("TCP".to_string()),
        ..Default::default()
    }
}

fn service(values: &ControlPlaneValues, name: &str, headless: bool, ports: Vec<ServicePort>) -> Service {
    Service {
        metadata: common::metadata(name, values, labels()),
        spec: Some(ServiceSpec {
            selector: common::selector(APP, ROLE).match_labels,
            cluster_ip: headless.then(|| "None".to_string()),
            publish_not_ready_addresses: headless.then_some(true),
            ports: Some(ports),
            type_: Some("ClusterIP".to_string()),
            ..Default::default()
        }),
        ..Default::default()
    }
}
