//! The API side of Worker: machine Pods and machine-class Secrets in the machine namespace,
//! all found by the shoot's technical-ID label.

use super::MachineRecord;
use super::desired::{HASH_LEN, machine_name};
use super::drain::{self, ANNOTATION_DRAIN_STARTED};
use super::rollout::Machine;
use crate::common::{apply_params, delete_if_exists, selector, shoot_labels};
use crate::error::{Error, is_conflict};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use extension_sdk::api::extensions::worker::WorkerPool;
use extension_sdk::k8s_openapi::ByteString;
use extension_sdk::k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, HostPathVolumeSource, Pod, PodSpec, Secret, SecretVolumeSource, SecurityContext,
    Volume, VolumeMount,
};
use extension_sdk::kube::api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use extension_sdk::kube::{Api, Client, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};

/// Label naming a machine's pool (the same label its Node carries).
pub use extension_sdk::api::helpers::constants::LABEL_WORKER_POOL as LABEL_POOL;
/// Label carrying a machine's class hash.
pub const LABEL_CLASS: &str = "machine.provider-local.gardener.cloud/class";
const COMPONENT: &str = "worker";
const USER_DATA_KEY: &str = "userData";
const USER_DATA_MOUNT: &str = "/etc/machine";

/// Labels of a pool's machines and machine-class Secrets.
pub fn machine_labels(technical_id: &str, pool: &str, hash: &str) -> BTreeMap<String, String> {
    let mut labels = shoot_labels(technical_id, COMPONENT);
    labels.insert(LABEL_POOL.into(), pool.into());
    labels.insert(LABEL_CLASS.into(), hash.into());
    labels
}

/// A shoot's machines.
pub(super) struct Machines {
    client: Client,
    pub namespace: String,
    pub technical_id: String,
}

impl Machines {
    pub fn new(client: Client, namespace: String, technical_id: String) -> Self {
        Self { client, namespace, technical_id }
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn selector(&self) -> String {
        selector(&shoot_labels(&self.technical_id, COMPONENT))
    }

    pub fn class_secret_name(&self, pool: &str, hash: &str) -> String {
        format!("machine-class-{pool}-{hash}")
    }

    async fn list(&self, extra: Option<String>) -> Result<Vec<Pod>, Error> {
        let selector = match extra {
            Some(e) => format!("{},{e}", self.selector()),
            None => self.selector(),
        };
        let pods = self
            .pods()
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(Error::kube(format!("listing machine Pods in {}", self.namespace)))?;
        Ok(pods.items)
    }

    /// A pool's machines that are not being deleted, with the time their drain began (not
    /// serving: the caller asks the shoot).
    pub async fn list_pool(&self, pool: &str) -> Result<Vec<Machine>, Error> {
        let pods = self.list(Some(format!("{LABEL_POOL}={pool}"))).await?;
        Ok(pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| {
                let name = p.name_any();
                let hash = p.labels().get(LABEL_CLASS)?.clone();
                let index = name.strip_prefix(&format!("{pool}-{hash}-"))?.parse().ok()?;
                let draining_since = p.annotations().get(ANNOTATION_DRAIN_STARTED).and_then(|t| drain::seconds(t));
                Some(Machine { name, hash, index, serves: false, draining_since })
            })
            .collect())
    }

    /// Records on a machine that its drain began at `since` (seconds since the epoch), so that
    /// a restart carries on with the drain and its timeout.
    pub async fn mark_draining(&self, name: &str, since: i64) -> Result<(), Error> {
        let patch = serde_json::json!({"metadata": {"annotations": {ANNOTATION_DRAIN_STARTED: drain::rfc3339(since)}}});
        self.pods()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(Error::kube(format!("marking Pod {}/{name} as draining", self.namespace)))?;
        Ok(())
    }

    /// Every machine Pod as it is now, from one list call.
    pub async fn snapshot(&self) -> Result<MachinePods, Error> {
        Ok(MachinePods(self.list(None).await?))
    }

    /// Every machine with its UID, sorted by name.
    pub async fn records(&self) -> Result<Vec<MachineRecord>, Error> {
        Ok(self.snapshot().await?.records())
    }

    /// Applies a pool's machine-class Secret with its user data (base64 as the API says; data
    /// that is not base64 is taken verbatim).
    pub async fn apply_class(&self, pool: &str, hash: &str, user_data: &str) -> Result<(), Error> {
        let name = self.class_secret_name(pool, hash);
        let data = STANDARD.decode(user_data.trim()).unwrap_or_else(|_| user_data.as_bytes().to_vec());
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(machine_labels(&self.technical_id, pool, hash)),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(USER_DATA_KEY.to_string(), ByteString(data))])),
            type_: Some("Opaque".into()),
            ..Default::default()
        };
        self.secrets()
            .patch(&name, &apply_params(COMPONENT), &Patch::Apply(&secret))
            .await
            .map_err(Error::kube(format!("applying Secret {}/{name}", self.namespace)))?;
        Ok(())
    }

    /// Creates a machine; one that exists already is adopted as it is.
    pub async fn create(
        &self,
        pool: &WorkerPool,
        hash: &str,
        index: u32,
        image: &str,
        backup_store: Option<&str>,
    ) -> Result<(), Error> {
        let name = machine_name(&pool.name, hash, index);
        let class = self.class_secret_name(&pool.name, hash);
        let mut pod = machine_pod(&self.technical_id, pool, hash, index, image, &class);
        if let Some(root) = backup_store {
            mount_backup_store(&mut pod, root);
        }
        match self.pods().create(&PostParams::default(), &pod).await {
            Ok(_) => {
                tracing::info!(machine = name, image, "created machine");
                Ok(())
            }
            Err(e) if is_conflict(&e) => Ok(()),
            Err(e) => Err(Error::kube(format!("creating Pod {}/{name}", self.namespace))(e)),
        }
    }

    pub async fn delete(&self, name: &str) -> Result<(), Error> {
        tracing::info!(machine = name, "deleting machine");
        delete_if_exists(&self.pods(), name, "Pod").await
    }

    /// Deletes the machines of pools no longer in the spec.
    pub async fn delete_other_pools(&self, pools: &BTreeSet<String>) -> Result<(), Error> {
        for pod in self.list(None).await? {
            if !pod.labels().get(LABEL_POOL).is_some_and(|p| pools.contains(p)) {
                self.delete(&pod.name_any()).await?;
            }
        }
        Ok(())
    }

    /// Deletes machine-class Secrets that are neither current nor used by a machine.
    pub async fn delete_unused_classes(&self, current: &BTreeSet<String>) -> Result<(), Error> {
        let used: BTreeSet<String> = self
            .list(None)
            .await?
            .iter()
            .filter_map(|p| Some(self.class_secret_name(p.labels().get(LABEL_POOL)?, p.labels().get(LABEL_CLASS)?)))
            .collect();
        let secrets = self
            .secrets()
            .list(&ListParams::default().labels(&self.selector()))
            .await
            .map_err(Error::kube(format!("listing machine classes in {}", self.namespace)))?;
        for s in secrets {
            let name = s.name_any();
            if !current.contains(&name) && !used.contains(&name) {
                delete_if_exists(&self.secrets(), &name, "Secret").await?;
            }
        }
        Ok(())
    }

    /// Deletes every machine and class; returns how many machines are still there.
    pub async fn delete_all(&self) -> Result<usize, Error> {
        for pod in self.list(None).await? {
            if pod.metadata.deletion_timestamp.is_none() {
                self.delete(&pod.name_any()).await?;
            }
        }
        self.delete_unused_classes(&BTreeSet::new()).await?;
        Ok(self.list(None).await?.len())
    }
}

/// A shoot's machine Pods at one moment; the questions a Worker reconcile asks of them.
pub(super) struct MachinePods(Vec<Pod>);

impl MachinePods {
    fn terminating(p: &Pod) -> bool {
        p.metadata.deletion_timestamp.is_some()
    }

    /// Every machine with its UID, sorted by name.
    pub fn records(&self) -> Vec<MachineRecord> {
        let mut records: Vec<MachineRecord> = self
            .0
            .iter()
            .map(|p| MachineRecord {
                name: p.name_any(),
                pool: p.labels().get(LABEL_POOL).cloned().unwrap_or_default(),
                class_hash: p.labels().get(LABEL_CLASS).cloned().unwrap_or_default(),
                uid: p.uid().unwrap_or_default(),
            })
            .collect();
        records.sort();
        records
    }

    /// Names of the machines that are not being deleted.
    pub fn live(&self) -> BTreeSet<String> {
        self.0.iter().filter(|p| !Self::terminating(p)).map(|p| p.name_any()).collect()
    }

    /// How many machines are being deleted.
    pub fn terminating_count(&self) -> usize {
        self.0.iter().filter(|p| Self::terminating(p)).count()
    }

    /// How many of a pool's `want` machines of class `hash` are not running yet: missing,
    /// starting, or blocked by a machine of the same name that is still terminating.
    pub fn not_running(&self, pool: &str, hash: &str, want: u32) -> u32 {
        let of_pool = || self.0.iter().filter(|p| p.labels().get(LABEL_POOL).is_some_and(|l| l == pool));
        let running = of_pool()
            .filter(|p| !Self::terminating(p))
            .filter(|p| p.labels().get(LABEL_CLASS).is_some_and(|h| h == hash))
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count() as u32;
        let terminating = of_pool().any(Self::terminating);
        want.saturating_sub(running).max(u32::from(terminating && running < want))
    }
}

/// Directories a machine's container runtime and kubelet keep on a real file system (an
/// emptyDir), not on the container's overlay root: containerd's snapshots cannot nest overlays.
const MACHINE_STATE: [(&str, &str); 2] = [("containerd", "/var/lib/containerd"), ("kubelet", "/var/lib/kubelet")];
/// Time for a machine to stop its kubelet and containers and remove its cgroups.
const MACHINE_GRACE_SECONDS: i64 = 60;

/// The Pod of one machine: a privileged container of the machine image with the class's user
/// data mounted at `/etc/machine/userData` and its runtime state on emptyDir volumes.
pub fn machine_pod(technical_id: &str, pool: &WorkerPool, hash: &str, index: u32, image: &str, class: &str) -> Pod {
    debug_assert!(hash.len() <= HASH_LEN);
    let name = machine_name(&pool.name, hash, index);
    Pod {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(machine_labels(technical_id, &pool.name, hash)),
            annotations: (!pool.annotations.is_empty()).then(|| pool.annotations.clone()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            hostname: Some(name),
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            containers: vec![Container {
                name: "node".into(),
                image: Some(image.into()),
                security_context: Some(SecurityContext { privileged: Some(true), ..Default::default() }),
                volume_mounts: Some(
                    std::iter::once(VolumeMount {
                        name: "user-data".into(),
                        mount_path: USER_DATA_MOUNT.into(),
                        read_only: Some(true),
                        ..Default::default()
                    })
                    .chain(MACHINE_STATE.iter().map(|(name, path)| VolumeMount {
                        name: (*name).into(),
                        mount_path: (*path).into(),
                        ..Default::default()
                    }))
                    .collect(),
                ),
                ..Default::default()
            }],
            termination_grace_period_seconds: Some(MACHINE_GRACE_SECONDS),
            volumes: Some(
                std::iter::once(Volume {
                    name: "user-data".into(),
                    secret: Some(SecretVolumeSource { secret_name: Some(class.into()), ..Default::default() }),
                    ..Default::default()
                })
                .chain(MACHINE_STATE.iter().map(|(name, _)| Volume {
                    name: (*name).into(),
                    empty_dir: Some(EmptyDirVolumeSource::default()),
                    ..Default::default()
                }))
                .collect(),
            ),
            ..Default::default()
        }),
        status: None,
    }
}

/// Mounts the seed host's backup store into a machine at the same path, so that what runs on
/// the machine (a seed's gardenlet, etcd's restore) finds backup entries where the provider
/// publishes them.
pub fn mount_backup_store(pod: &mut Pod, root: &str) {
    let Some(spec) = pod.spec.as_mut() else { return };
    spec.volumes.get_or_insert_with(Vec::new).push(Volume {
        name: BACKUP_STORE.into(),
        host_path: Some(HostPathVolumeSource { path: root.into(), type_: Some("DirectoryOrCreate".into()) }),
        ..Default::default()
    });
    for c in &mut spec.containers {
        c.volume_mounts.get_or_insert_with(Vec::new).push(VolumeMount {
            name: BACKUP_STORE.into(),
            mount_path: root.into(),
            ..Default::default()
        });
    }
}

const BACKUP_STORE: &str = "backup-store";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backup_store_is_mounted_at_its_own_path() {
        let pool = WorkerPool { name: "p".into(), ..Default::default() };
        let mut pod = machine_pod("shoot--garden--seed", &pool, "0123456789", 0, "img:1", "c");
        mount_backup_store(&mut pod, "/srv/backup");
        let spec = pod.spec.unwrap();
        let volume = spec.volumes.unwrap().into_iter().find(|v| v.name == BACKUP_STORE).unwrap();
        assert_eq!(volume.host_path.unwrap().path, "/srv/backup");
        let mount = spec.containers[0].volume_mounts.clone().unwrap().into_iter().find(|m| m.name == BACKUP_STORE);
        assert_eq!(mount.unwrap().mount_path, "/srv/backup", "the same path as on the seed host");
    }

    #[test]
    fn machine_pod_carries_labels_image_and_user_data() {
        let pool = WorkerPool { name: "p".into(), ..Default::default() };
        let pod = machine_pod("shoot--dev--a", &pool, "0123456789", 2, "img:1", "machine-class-p-0123456789");
        assert_eq!(pod.metadata.name.as_deref(), Some("p-0123456789-2"));
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("shoot.gardener.cloud/technical-id").map(String::as_str), Some("shoot--dev--a"));
        assert_eq!(labels.get(LABEL_POOL).map(String::as_str), Some("p"));
        assert_eq!(labels.get(LABEL_CLASS).map(String::as_str), Some("0123456789"));
        let spec = pod.spec.unwrap_or_default();
        assert_eq!(spec.containers[0].image.as_deref(), Some("img:1"));
        let volumes = spec.volumes.unwrap_or_default();
        let secret = volumes[0].secret.as_ref().and_then(|s| s.secret_name.as_deref());
        assert_eq!(secret, Some("machine-class-p-0123456789"));
        assert!(volumes[1..].iter().all(|v| v.empty_dir.is_some()), "runtime state on emptyDirs");
        let mounts: Vec<&str> =
            spec.containers[0].volume_mounts.iter().flatten().map(|m| m.mount_path.as_str()).collect();
        assert_eq!(mounts, vec!["/etc/machine", "/var/lib/containerd", "/var/lib/kubelet"]);
    }

    fn machine(name: &str, pool: &str, hash: &str, phase: &str, deleting: bool) -> Pod {
        let mut p =
            machine_pod("shoot--dev--a", &WorkerPool { name: pool.into(), ..Default::default() }, hash, 0, "i", "c");
        p.metadata.name = Some(name.into());
        p.status = Some(extension_sdk::k8s_openapi::api::core::v1::PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        });
        if deleting {
            p.metadata.deletion_timestamp =
                Some(extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()));
        }
        p
    }

    #[test]
    fn a_snapshot_answers_what_the_worker_waits_for() {
        let now = MachinePods(vec![
            machine("a-new-0", "a", "new", "Running", false),
            machine("a-new-1", "a", "new", "Pending", false),
            machine("a-old-0", "a", "old", "Running", true),
            machine("b-x-0", "b", "x", "Running", false),
        ]);
        assert_eq!(now.not_running("a", "new", 2), 1, "one of two runs");
        assert_eq!(now.not_running("a", "new", 1), 0, "enough run, the terminating one does not block");
        assert_eq!(now.not_running("b", "x", 1), 0);
        assert_eq!(now.not_running("b", "x", 2), 1);
        assert_eq!(now.not_running("c", "y", 0), 0);
        assert_eq!(now.terminating_count(), 1);
        assert_eq!(now.live(), BTreeSet::from(["a-new-0".into(), "a-new-1".into(), "b-x-0".into()]));
        let names: Vec<String> = now.records().into_iter().map(|r| r.name).collect();
        assert_eq!(names, vec!["a-new-0", "a-new-1", "a-old-0", "b-x-0"], "every machine, sorted");
    }
}
