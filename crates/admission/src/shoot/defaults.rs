//! Shoot defaulting, as the reference system's `SetDefaults_Shoot` plus the defaults its shoot
//! admission plugin takes from the CloudProfile: the profile reference (`cloudProfile` and
//! `cloudProfileName` kept consistent, [`super::reference::sync`]), purpose, networks,
//! kube-proxy, maintenance, Kubernetes and machine image versions, worker pool rollout settings.
//! Pure: it changes the object it is given and nothing else; the webhook turns the difference
//! into a JSONPatch.

use super::profile;
use api::core::Shoot;
use api::core::cloudprofile::CloudProfileSpec;
use api::core::seed::SeedSpec;
use api::core::shoot::ShootPurpose;
use api::core::shoot::kubernetes::{KubeProxyConfig, ProxyMode};
use api::core::shoot::provider::{Cri, ShootMachineImage, Worker, WorkerSystemComponents};
use api::core::shoot::settings::{MaintenanceAutoUpdate, MaintenanceTimeWindow};
use api::core::shoot::{Maintenance, Networking, ShootSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

/// The pod network when neither the shoot nor its seed's `shootDefaults` name one.
pub const DEFAULT_POD_CIDR: &str = "100.96.0.0/11";
/// The service network when neither the shoot nor its seed's `shootDefaults` name one.
pub const DEFAULT_SERVICE_CIDR: &str = "100.64.0.0/13";
/// The node network when the shoot names none (the one provider-local assumes too).
pub const DEFAULT_NODE_CIDR: &str = "10.250.0.0/16";
/// The CPU architecture of a worker pool that names none.
pub const DEFAULT_ARCHITECTURE: &str = "amd64";

/// What defaulting may look at besides the shoot.
#[derive(Clone, Copy, Debug)]
pub struct DefaultingContext<'a> {
    pub profile: Option<&'a CloudProfileSpec>,
    /// The shoot's seed, when `spec.seedName` names a known one (its `shootDefaults` networks).
    pub seed: Option<&'a SeedSpec>,
    pub now: Timestamp,
}

/// Applies every default to `shoot`.
pub fn default_shoot(shoot: &mut Shoot, ctx: DefaultingContext<'_>) {
    let key = format!(
        "{}/{}",
        shoot.metadata.namespace.as_deref().unwrap_or(""),
        shoot.metadata.name.as_deref().unwrap_or("")
    );
    if shoot.metadata.deletion_timestamp.is_none() {
        // As Gardener: a shoot being deleted keeps its spec as it is.
        super::reference::sync(&mut shoot.spec);
    }
    let spec = &mut shoot.spec;
    spec.purpose.get_or_insert(ShootPurpose::Evaluation);
    default_networking(spec, ctx.seed);
    default_kubernetes(spec, ctx);
    default_maintenance(spec.maintenance.get_or_insert_with(Maintenance::default), &key);
    let has_profile = ctx.profile;
    for w in &mut spec.provider.workers {
        default_worker(w, has_profile, ctx.now);
    }
}

fn default_networking(spec: &mut ShootSpec, seed: Option<&SeedSpec>) {
    let shoot_defaults = seed.and_then(|s| s.networks.shoot_defaults.as_ref());
    let n = spec.networking.get_or_insert_with(Networking::default);
    if n.pods.is_none() {
        n.pods = Some(shoot_defaults.and_then(|d| d.pods.clone()).unwrap_or_else(|| DEFAULT_POD_CIDR.into()));
    }
    if n.services.is_none() {
        n.services =
            Some(shoot_defaults.and_then(|d| d.services.clone()).unwrap_or_else(|| DEFAULT_SERVICE_CIDR.into()));
    }
    if n.nodes.is_none() {
        n.nodes = Some(DEFAULT_NODE_CIDR.into());
    }
}

fn default_kubernetes(spec: &mut ShootSpec, ctx: DefaultingContext<'_>) {
    let k = &mut spec.kubernetes;
    let proxy = k.kube_proxy.get_or_insert_with(KubeProxyConfig::default);
    proxy.mode.get_or_insert(ProxyMode::IPTables);
    proxy.enabled.get_or_insert(true);
    if let Some(profile) = ctx.profile
        && !profile::is_full_version(&k.version)
        && let Some(v) = profile::default_version(&profile.kubernetes.versions, &k.version, ctx.now)
    {
        k.version = v;
    }
}

fn default_maintenance(m: &mut Maintenance, key: &str) {
    m.auto_update.get_or_insert(MaintenanceAutoUpdate { kubernetes_version: true, machine_image_version: Some(true) });
    if m.time_window.is_none() {
        m.time_window = Some(maintenance_window(key));
    }
}

/// A one-hour window starting on the full hour between 22:00 and 05:00 UTC, chosen by a hash
/// of `namespace/name`: the reference system picks it at random; deriving it makes defaulting a
/// pure function (a retried request gets the same window) while still spreading shoots.
pub fn maintenance_window(key: &str) -> MaintenanceTimeWindow {
    // FNV-1a: stable across processes and Rust versions, unlike std's hasher.
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let begin = (22 + hash % 8) % 24;
    let end = (begin + 1) % 24;
    MaintenanceTimeWindow { begin: format!("{begin:02}0000+0000"), end: format!("{end:02}0000+0000") }
}

fn default_worker(w: &mut Worker, profile: Option<&CloudProfileSpec>, now: Timestamp) {
    w.cri.get_or_insert_with(Cri::default);
    w.max_surge.get_or_insert(IntOrString::Int(1));
    w.max_unavailable.get_or_insert(IntOrString::Int(0));
    w.system_components.get_or_insert(WorkerSystemComponents { allow: true });
    w.machine.architecture.get_or_insert_with(|| DEFAULT_ARCHITECTURE.into());
    let Some(profile) = profile else { return };
    match &mut w.machine.image {
        None => {
            if let Some((name, version)) = profile::default_image(profile, now) {
                w.machine.image = Some(ShootMachineImage { name, version: Some(version), provider_config: None });
            }
        }
        Some(image) if image.version.as_deref().is_none_or(|v| !profile::is_full_version(v)) => {
            let wanted = image.version.clone().unwrap_or_default();
            let offered = profile.machine_images.iter().find(|i| i.name == image.name);
            if let Some(v) = offered.and_then(|i| profile::default_version(&profile::image_versions(i), &wanted, now)) {
                image.version = Some(v);
            }
        }
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests;
