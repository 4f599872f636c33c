//! provider-local: the `local` provider for every extension kind, written against the extension
//! contract (`extension-sdk`, `api`) and the process runtime (`runtime`) as an outside provider
//! would be; the one other workspace crate it uses is `hostpath-provisioner`, the volume
//! provisioner its shoots run. It runs shoots without a cloud account, in the local garden (the
//! seed is the local cluster, machines are Pods that become nodes).
//!
//! One module per kind; each holds an actuator and the pure functions it is built from:
//!
//! | kind | actuator | what it makes |
//! |---|---|---|
//! | Infrastructure | [`LocalInfrastructure`] | machine namespace + isolating NetworkPolicy |
//! | DNSRecord | [`LocalDnsRecord`] | a key in the zone ConfigMap `zone-<zone>` |
//! | BackupBucket | [`LocalBackupBucket`] | `<root>/<bucket>/` + generated Secret |
//! | BackupEntry | [`LocalBackupEntry`] | `<root>/<bucket>/<entry>/` |
//! | OperatingSystemConfig | [`LocalOperatingSystemConfig`] | a provisioning script |
//! | Worker | [`LocalWorker`] | one Pod per machine |
//! | ControlPlane | [`LocalControlPlane`] | in the shoot: default StorageClass + volume provisioner |
//! | Network | [`LocalNetwork`] | in the shoot: the pod routes agent on every node ([`pod_routes`]) |
//! | Bastion | [`LocalBastion`] | sshd Pod + Service |
//! | Extension | [`LocalExtension`] | nothing; observes lifecycle ordering |
//!
//! [`shoot`] reaches a shoot's own API server; [`volume_provisioner`] is what the shoot's
//! provisioner pods run (`gardener-extension-provider-local volume-provisioner`).

/// `Debug` for an actuator holding a `kube::Client` (which has none): the type name only.
#[macro_export]
#[doc(hidden)]
macro_rules! debug_without_client {
    ($t:ty) => {
        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($t)).finish_non_exhaustive()
            }
        }
    };
}

pub mod backup;
pub mod bastion;
pub mod cli;
pub mod common;
pub mod controlplane;
pub mod dns;
pub mod error;
pub mod extension;
pub mod infrastructure;
pub mod network;
pub mod node_agent;
pub mod osc;
pub mod pod_routes;
pub mod registration;
pub mod registry;
pub mod shoot;
pub mod volume_provisioner;
pub mod worker;

pub use backup::{BackupConfig, LocalBackupBucket, LocalBackupEntry};
pub use bastion::{BastionConfig, LocalBastion};
pub use common::TYPE;
pub use controlplane::LocalControlPlane;
pub use dns::LocalDnsRecord;
pub use error::Error;
pub use extension::LocalExtension;
pub use infrastructure::LocalInfrastructure;
pub use network::LocalNetwork;
pub use osc::LocalOperatingSystemConfig;
pub use worker::LocalWorker;

use extension_sdk::kube::Client;
use extension_sdk::{Actuator, ControllerConfig, ExtensionController, ExtensionResource, Runner};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The controllers of this extension, by the name used in `--controllers`.
pub const CONTROLLERS: [&str; 10] = [
    "infrastructure",
    "dnsrecord",
    "backupbucket",
    "backupentry",
    "operatingsystemconfig",
    "worker",
    "controlplane",
    "network",
    "bastion",
    "extension",
];

/// Everything the actuators are configured with.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Which controllers run (names from [`CONTROLLERS`]).
    pub controllers: BTreeSet<String>,
    /// Objects reconciled at once per controller.
    pub concurrency: u16,
    pub backup: BackupConfig,
    /// Namespace of the DNS zone ConfigMaps.
    pub dns_namespace: String,
    /// Machine image for pools whose provider config names none.
    pub machine_image: Option<String>,
    pub bastion: BastionConfig,
    /// Where machines pull `gardener-rs.local/*` and `registry.k8s.io/*` from (none: they run
    /// only the images they carry).
    pub registry_mirror: Option<registry::RegistryMirror>,
    /// provider-local's own image, run in shoots by the volume provisioner the ControlPlane
    /// deploys and by the pod routes agent the Network deploys (none: neither deploys anything).
    pub volume_provisioner_image: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            controllers: CONTROLLERS.iter().map(|c| c.to_string()).collect(),
            concurrency: 5,
            backup: BackupConfig::new(PathBuf::from("/var/lib/provider-local/backup")),
            dns_namespace: dns::DEFAULT_DNS_NAMESPACE.into(),
            machine_image: None,
            bastion: BastionConfig::default(),
            registry_mirror: None,
            volume_provisioner_image: None,
        }
    }
}

fn add<K: ExtensionResource, A: Actuator<K>>(
    runner: &mut Runner,
    client: &Client,
    actuator: A,
    types: &[&str],
    concurrency: u16,
) {
    let config = ControllerConfig::new(types.iter().copied()).concurrency(concurrency);
    runner.add_controller(ExtensionController::new(client.clone(), actuator, config, runner.metrics()));
}

/// Adds the enabled controllers to `runner`.
pub fn register(runner: &mut Runner, client: &Client, settings: &Settings) {
    let c = settings.concurrency;
    let on = |name: &str| settings.controllers.contains(name);
    let local = [TYPE];
    if on("infrastructure") {
        add(runner, client, LocalInfrastructure::new(client.clone()), &local, c);
    }
    if on("dnsrecord") {
        add(runner, client, LocalDnsRecord::new(client.clone(), settings.dns_namespace.clone()), &local, c);
    }
    if on("backupbucket") {
        add(runner, client, LocalBackupBucket::new(client.clone(), settings.backup.clone()), &local, c);
    }
    if on("backupentry") {
        add(runner, client, LocalBackupEntry::new(settings.backup.clone()), &local, c);
    }
    if on("operatingsystemconfig") {
        add(
            runner,
            client,
            LocalOperatingSystemConfig::new(client.clone(), settings.registry_mirror.clone()),
            &local,
            c,
        );
    }
    if on("worker") {
        let mut worker = LocalWorker::new(client.clone(), settings.machine_image.clone());
        if on("backupentry") {
            worker = worker.with_backup_root(&settings.backup.root);
        }
        add(runner, client, worker, &local, c);
    }
    if on("controlplane") {
        let image = settings.volume_provisioner_image.clone();
        add(runner, client, LocalControlPlane::new(client.clone(), image), &local, c);
    }
    if on("network") {
        let image = settings.volume_provisioner_image.clone();
        add(runner, client, LocalNetwork::new(client.clone(), image), &local, c);
    }
    if on("bastion") {
        add(runner, client, LocalBastion::new(client.clone(), settings.bastion.clone()), &local, c);
    }
    if on("extension") {
        add(runner, client, LocalExtension::new(client.clone()), &extension::TYPES, c);
    }
}
