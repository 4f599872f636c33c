//! What one shoot operation works with: clients, configuration, the shoot and its seed, the
//! derived values, and what earlier tasks found out (the Service address, the secrets, ...).

use crate::config::GardenletConfig;
use crate::flow::TaskError;
use crate::shoot::operation::values::ShootValues;
use api::Opaque;
use api::core::{Seed, Shoot};
use api::helpers::redact::Redactor;
use extension_sdk::deployer::Deployer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use pki::SecretSet;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

/// Results that later tasks of the same flow need.
#[derive(Debug, Default)]
pub struct Found {
    pub address: Option<String>,
    /// Owner of the control-plane objects: the shoot's `Cluster`.
    pub cluster_owner: Option<OwnerReference>,
    pub secrets: Option<SecretSet>,
    pub infrastructure_status: Option<Opaque>,
    /// Pool name → base64 user data.
    pub user_data: BTreeMap<String, String>,
    /// Pool name → the key that rolls its machines (`objects::extensions::node_agent_secret_name`).
    pub pool_keys: BTreeMap<String, String>,
    /// The health conditions computed at the end of the flow.
    pub conditions: Vec<crate::shoot::status::conditions::Check>,
    /// The backup entry's directory on the seed host (etcd restores from it).
    pub backup_dir: Option<String>,
    /// What etcd's restore said, when a Restore operation found etcd restored from backups or a
    /// final snapshot (`health::checks::restore_note`); its lastOperation names it.
    pub etcd_restore: Option<String>,
}

/// What a Restore operation restores extension objects from: their states as the source seed
/// left them in the ShootState.
#[derive(Debug, Clone, Default)]
pub struct RestoreSource {
    pub extensions: Vec<api::core::shootstate::ExtensionResourceState>,
}

impl RestoreSource {
    pub fn from_shoot_state(state: Option<&api::core::ShootState>) -> Self {
        Self { extensions: state.map(|s| s.spec.extensions.clone()).unwrap_or_default() }
    }

    /// The saved state of one extension object.
    pub fn entry(&self, kind: &str, name: &str) -> Option<&api::core::shootstate::ExtensionResourceState> {
        self.extensions.iter().find(|e| e.kind == kind && e.name.as_deref() == Some(name))
    }
}

/// A value of one of the shoot's secrets that an earlier task of the flow found.
pub fn secret_value(ctx: &OperationContext, name: &str, key: &str) -> Result<String, TaskError> {
    ctx.found().secrets.as_ref().and_then(|s| s.value(name, key)).map(str::to_string).ok_or_else(|| {
        TaskError::msg(format!("secret {name} (key {key}) of shoot {} is missing", ctx.values.technical_id))
    })
}

/// The context of one operation on one shoot.
pub struct OperationContext {
    pub garden: kube::Client,
    pub seed: kube::Client,
    pub config: Arc<GardenletConfig>,
    pub deployer: Deployer,
    pub shoot: Shoot,
    pub seed_object: Option<Seed>,
    /// The garden's ControllerRegistrations (they order the shoot's `Extension` objects).
    pub registrations: Vec<api::core::ControllerRegistration>,
    /// The shoot's CloudProfile from gardenlet's cache: `Some(None)` when the cache knows it does
    /// not exist; `None` when there is no cache or the shoot names a NamespacedCloudProfile
    /// (then it is read from the garden).
    pub cloud_profile: Option<Option<Arc<api::core::CloudProfile>>>,
    pub values: ShootValues,
    /// Redeploy extension objects even when unchanged (an explicit reconcile request).
    pub force_redeploy: bool,
    /// Bound of each wait for a workload or extension.
    pub wait_timeout: Duration,
    /// The record of a migration's final etcd snapshot (its bucket stays the shoot's bucket).
    pub snapshot_record: Option<crate::shoot::backup::SnapshotRecord>,
    /// Set for a Restore operation (after a migration, or a forced takeover).
    pub restore: Option<RestoreSource>,
    /// Where the shoot's credential rotations stand for this operation (a rotation requested
    /// now is already `Preparing` or `Completing` here); see [`crate::shoot::credentials::rotation`].
    pub rotation: Option<api::core::shoot::credentials::ShootCredentialsRotation>,
    found: Mutex<Found>,
    /// The secrets this operation has seen (the shoot's own, its provider credentials): task
    /// errors are redacted with them before they reach the Shoot, events or logs.
    redactor: Arc<RwLock<Redactor>>,
}

impl std::fmt::Debug for OperationContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperationContext").field("shoot", &self.values.technical_id).finish_non_exhaustive()
    }
}

impl OperationContext {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        garden: kube::Client,
        seed: kube::Client,
        config: Arc<GardenletConfig>,
        deployer: Deployer,
        shoot: Shoot,
        seed_object: Option<Seed>,
        values: ShootValues,
        force_redeploy: bool,
        wait_timeout: Duration,
    ) -> Self {
        Self {
            garden,
            seed,
            config,
            deployer,
            shoot,
            seed_object,
            registrations: Vec::new(),
            cloud_profile: None,
            values,
            force_redeploy,
            wait_timeout,
            snapshot_record: None,
            restore: None,
            rotation: None,
            found: Mutex::new(Found::default()),
            redactor: Arc::default(),
        }
    }

    /// Adds secret values to redact from task errors.
    pub fn add_secrets<I, S>(&self, values: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.redactor.write().unwrap_or_else(|e| e.into_inner()).add(values);
    }

    /// Redacts task errors with the secrets known when the error happens (and the shapes of
    /// secrets; see `api::helpers::redact`).
    pub fn redaction(&self) -> crate::flow::RedactFn {
        let redactor = self.redactor.clone();
        Arc::new(move |text: &str| redactor.read().unwrap_or_else(|e| e.into_inner()).redact(text))
    }

    /// Sets the shoot's CloudProfile as gardenlet's cache knows it (see [`Self::cloud_profile`]).
    pub fn with_cloud_profile(mut self, cached: Option<Option<Arc<api::core::CloudProfile>>>) -> Self {
        self.cloud_profile = cached;
        self
    }

    /// Sets where the credential rotations stand (see [`Self::rotation`]).
    pub fn with_rotation(mut self, rotation: Option<api::core::shoot::credentials::ShootCredentialsRotation>) -> Self {
        self.rotation = rotation;
        self
    }

    /// Sets the ControllerRegistrations the flows order extensions by.
    pub fn with_registrations(mut self, registrations: Vec<api::core::ControllerRegistration>) -> Self {
        self.registrations = registrations;
        self
    }

    /// Sets what the garden's ShootState says about backups, and makes the operation a
    /// Restore when `restore` is true.
    pub fn with_shoot_state(mut self, state: Option<&api::core::ShootState>, restore: bool) -> Self {
        self.snapshot_record = crate::shoot::backup::record(state);
        self.restore = restore.then(|| RestoreSource::from_shoot_state(state));
        self
    }

    /// What earlier tasks found (a poisoned lock only means a task panicked, which the flow
    /// already reports; the data is still usable).
    pub fn found(&self) -> MutexGuard<'_, Found> {
        self.found.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An owner reference to the Shoot (for objects in the garden such as the ShootState).
    pub fn shoot_owner(&self) -> Option<OwnerReference> {
        self.shoot.controller_owner_ref(&()).map(|mut o| {
            o.controller = Some(false);
            o.block_owner_deletion = Some(false);
            o
        })
    }
}
