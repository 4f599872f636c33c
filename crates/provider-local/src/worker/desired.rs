//! The pure part of Worker: which machine image a pool uses, the machine class (and its hash)
//! of a pool, and the roll-out limits.
//!
//! Machines are named `<pool>-<class hash>-<index>`. When a pool's machine spec changes, its
//! class hash changes and the machines are replaced step by step ([`super::rollout`]): new
//! machines at most `maxSurge` above the desired number (default 1), old ones drained and
//! removed while at least `desired - maxUnavailable` machines serve (default 0 unavailable).

use crate::common::sha256_hex;
use extension_sdk::api::extensions::worker::WorkerPool;
use extension_sdk::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use serde_json::json;

/// `providerConfig` of a pool or of its machine image: `{"image": "<container image>"}`, and
/// for a pool `"backupStore": true` (its machines host a seed, see [`PoolConfig::backup_store`]).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolConfig {
    pub image: Option<String>,
    /// The machines see the provider's backup store (`--backup-root`, at the same path), as a
    /// cloud VM with object-store credentials would: for pools of a shoot that is a seed
    /// (ManagedSeed), whose gardenlet and etcd restores read and write backup entries there.
    #[serde(default)]
    pub backup_store: bool,
}

/// `spec.providerConfig` of a Worker: images by machine image name and version.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerConfig {
    #[serde(default)]
    pub machine_images: Vec<MachineImageMapping>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineImageMapping {
    pub name: String,
    /// Absent matches every version.
    pub version: Option<String>,
    pub image: String,
}

/// `spec.providerConfig` of the CloudProfile (Gardener provider-local's `CloudProfileConfig`):
/// the container image of each machine image version the profile offers.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloudProfileConfig {
    #[serde(default)]
    pub machine_images: Vec<CloudProfileImage>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct CloudProfileImage {
    pub name: String,
    #[serde(default)]
    pub versions: Vec<CloudProfileImageVersion>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct CloudProfileImageVersion {
    pub version: String,
    pub image: String,
}

impl CloudProfileConfig {
    /// The profile's images as mappings, after the Worker's own ones.
    pub fn mappings(&self) -> impl Iterator<Item = MachineImageMapping> + '_ {
        self.machine_images.iter().flat_map(|m| {
            m.versions.iter().map(|v| MachineImageMapping {
                name: m.name.clone(),
                version: Some(v.version.clone()),
                image: v.image.clone(),
            })
        })
    }

    /// An error when the profile maps the pool's machine image but not its version: running
    /// another version's image instead would ignore the version the user chose.
    pub fn check(&self, pool: &WorkerPool) -> Result<(), String> {
        let image = &pool.machine_image;
        match self.machine_images.iter().find(|m| m.name == image.name) {
            Some(m) if !m.versions.iter().any(|v| v.version == image.version) => Err(format!(
                "the CloudProfile maps no container image to machine image {} version {:?} (it has {})",
                image.name,
                image.version,
                m.versions.iter().map(|v| v.version.as_str()).collect::<Vec<_>>().join(", ")
            )),
            _ => Ok(()),
        }
    }
}

/// The container image of a pool's machines: the pool's `providerConfig.image`, its machine
/// image's `providerConfig.image`, the Worker's `machineImages` mapping (which the actuator
/// extends with the CloudProfile's, [`CloudProfileConfig`]), or the default.
pub fn resolve_image(
    pool: &WorkerPool,
    pool_config: &PoolConfig,
    image_config: &PoolConfig,
    worker_config: &WorkerConfig,
    default: Option<&str>,
) -> Option<String> {
    pool_config
        .image
        .clone()
        .or_else(|| image_config.image.clone())
        .or_else(|| {
            worker_config
                .machine_images
                .iter()
                .find(|m| {
                    m.name == pool.machine_image.name
                        && m.version.as_ref().is_none_or(|v| *v == pool.machine_image.version)
                })
                .map(|m| m.image.clone())
        })
        .or_else(|| default.map(str::to_string))
}

/// Length of the class hash in machine names.
pub const HASH_LEN: usize = 10;

/// The hash of everything that defines a pool's machines. Scaling bounds, roll-out settings and
/// the Nodes' labels, annotations and taints are left out: changing them must not replace
/// machines (the Nodes get the metadata in place, see `nodes::metadata_patch`). The operating system config counts
/// through `nodeAgentSecretName` when gardenlet sets it (it leaves out the bootstrap token, so a
/// new token only updates the machine class for machines still to come), else through the
/// user data itself.
pub fn class_hash(pool: &WorkerPool, image: &str) -> String {
    let config = match &pool.node_agent_secret_name {
        Some(name) => json!({"nodeAgentSecretName": name}),
        None => json!({"userData": pool.user_data}),
    };
    let spec = json!({
        "image": image,
        "machineType": pool.machine_type,
        "machineImage": {"name": pool.machine_image.name, "version": pool.machine_image.version},
        "operatingSystemConfig": config,
        "kubernetesVersion": pool.kubernetes_version,
        "volume": pool.volume,
        "dataVolumes": pool.data_volumes,
        "architecture": pool.architecture,
    });
    let mut hash = sha256_hex(spec.to_string().as_bytes());
    hash.truncate(HASH_LEN);
    hash
}

/// A machine's name.
pub fn machine_name(pool: &str, hash: &str, index: u32) -> String {
    format!("{pool}-{hash}-{index}")
}

fn resolve(value: Option<&IntOrString>, desired: u32, default: u32, round_up: bool) -> u32 {
    match value {
        None => default,
        Some(IntOrString::Int(i)) => (*i).max(0) as u32,
        Some(IntOrString::String(s)) => {
            let percent: u32 = s.trim().trim_end_matches('%').trim().parse().unwrap_or(0);
            let scaled = u64::from(desired) * u64::from(percent);
            let v = if round_up { scaled.div_ceil(100) } else { scaled / 100 };
            u32::try_from(v).unwrap_or(u32::MAX)
        }
    }
}

/// `(maxSurge, maxUnavailable)` for `desired` machines; never both zero.
pub fn rollout_limits(pool: &WorkerPool, desired: u32) -> (u32, u32) {
    let surge = resolve(pool.max_surge.as_ref(), desired, 1, true);
    let unavailable = resolve(pool.max_unavailable.as_ref(), desired, 0, false);
    if surge == 0 && unavailable == 0 { (1, 0) } else { (surge, unavailable) }
}

#[cfg(test)]
mod tests;
