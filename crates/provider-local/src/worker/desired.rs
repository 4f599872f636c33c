//! The pure part of Worker: which machine image a pool uses, the machine class (and its hash)
//! of a pool, and the rollout from the machines that exist to the ones that should.
//!
//! Machines are named `<pool>-<class hash>-<index>`. When a pool's machine spec changes, its
//! class hash changes and the machines are replaced step by step: each step first creates new
//! machines (at most `maxSurge` above the desired number, default 1), then removes old ones
//! while keeping at least `desired - maxUnavailable` machines (default 0 unavailable). Pods
//! never report readiness here (there is no kubelet behind them), so a machine counts as
//! available as soon as it exists; the steps are therefore run one after the other in a
//! single reconcile, each one only after the previous one's writes succeeded.

use crate::common::sha256_hex;
use extension_sdk::api::extensions::worker::WorkerPool;
use extension_sdk::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeSet;

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

/// The container image of a pool's machines: the pool's `providerConfig.image`, its machine
/// image's `providerConfig.image`, the Worker's `machineImages` mapping, or the default.
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

/// The hash of everything that defines a pool's machines. Scaling bounds and rollout settings
/// are left out: changing them must not replace machines. The operating system config counts
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
        "labels": pool.labels,
        "annotations": pool.annotations,
        "taints": pool.taints,
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

/// An existing machine, as far as the rollout cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Existing {
    pub name: String,
    pub hash: String,
    pub index: u32,
}

/// One rollout step: machines to create (by index, of the new class), then machines to delete.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub create: Vec<u32>,
    pub delete: Vec<String>,
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

/// The next step from `existing` towards `desired` machines of class `hash`, or `None` when
/// there is nothing left to do.
pub fn next_step(desired: u32, hash: &str, existing: &[Existing], surge: u32, unavailable: u32) -> Option<Step> {
    let mut new: Vec<&Existing> = existing.iter().filter(|m| m.hash == hash).collect();
    let mut old: Vec<&Existing> = existing.iter().filter(|m| m.hash != hash).collect();
    new.sort_by_key(|m| m.index);
    old.sort_by_key(|m| std::cmp::Reverse(m.index));
    let (n_new, n_old) = (new.len() as u32, old.len() as u32);

    let step = if n_new >= desired {
        // Enough new machines: drop the surplus (highest indices) and every old one.
        let surplus = new.iter().skip(desired as usize).map(|m| m.name.clone());
        Step { create: Vec::new(), delete: surplus.chain(old.iter().map(|m| m.name.clone())).collect() }
    } else {
        let missing = desired - n_new;
        let create_count =
            if n_old == 0 { missing } else { missing.min((desired + surge).saturating_sub(n_new + n_old)) };
        let used: BTreeSet<u32> = new.iter().map(|m| m.index).collect();
        let create: Vec<u32> = (0..).filter(|i| !used.contains(i)).take(create_count as usize).collect();
        let total = n_new + n_old + create_count;
        let keep = desired.saturating_sub(unavailable);
        let delete_count = n_old.min(total.saturating_sub(keep));
        Step { create, delete: old.iter().take(delete_count as usize).map(|m| m.name.clone()).collect() }
    };
    (!step.create.is_empty() || !step.delete.is_empty()).then_some(step)
}

/// Every step of a rollout, simulated from `existing` (the actuator runs them in order).
pub fn rollout(desired: u32, pool: &str, hash: &str, existing: &[Existing], surge: u32, unavailable: u32) -> Vec<Step> {
    let mut machines = existing.to_vec();
    let mut steps = Vec::new();
    // Each step removes an old machine or adds a new one, so this bound is never reached.
    let bound = 2 * (desired as usize + existing.len()) + 2;
    while let Some(step) = next_step(desired, hash, &machines, surge, unavailable) {
        for &index in &step.create {
            machines.push(Existing { name: machine_name(pool, hash, index), hash: hash.to_string(), index });
        }
        machines.retain(|m| !step.delete.contains(&m.name));
        steps.push(step);
        if steps.len() >= bound {
            break;
        }
    }
    steps
}

#[cfg(test)]
mod tests;
