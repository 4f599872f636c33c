//! Well-known annotation, label and finalizer names and their values.

/// The operation annotation that drives Shoots and extension objects.
pub const ANNOTATION_OPERATION: &str = "gardener.cloud/operation";
/// Set alongside every operation request (RFC 3339) so that each request is a visible change.
pub const ANNOTATION_TIMESTAMP: &str = "gardener.cloud/timestamp";
/// Who created an object (Bastion).
pub const ANNOTATION_CREATED_BY: &str = "gardener.cloud/created-by";
/// Confirmation required before a Shoot may be deleted.
pub const ANNOTATION_CONFIRM_DELETION: &str = "confirmation.gardener.cloud/deletion";
/// Confirmation that a Shoot whose deletion is stuck may be deleted by force: its extension
/// objects are deleted without their cleanup and their finalizers removed (docs/operations.md).
/// The same annotation on an extension object tells its controller to skip the cleanup.
pub const ANNOTATION_FORCE_DELETION: &str = "confirmation.gardener.cloud/force-deletion";
/// `"true"` on a Shoot: gardenlet neither reconciles nor deletes it while it is set.
pub const ANNOTATION_IGNORE: &str = "shoot.gardener.cloud/ignore";

/// Values of [`ANNOTATION_OPERATION`].
pub mod operation {
    pub const RECONCILE: &str = "reconcile";
    pub const RETRY: &str = "retry";
    pub const MIGRATE: &str = "migrate";
    pub const RESTORE: &str = "restore";
    pub const WAIT_FOR_STATE: &str = "wait-for-state";
    pub const KEEPALIVE: &str = "keepalive";
    pub const ROTATE_CA_START: &str = "rotate-ca-start";
    pub const ROTATE_CA_COMPLETE: &str = "rotate-ca-complete";
    pub const ROTATE_SERVICE_ACCOUNT_KEY_START: &str = "rotate-serviceaccount-key-start";
    pub const ROTATE_SERVICE_ACCOUNT_KEY_COMPLETE: &str = "rotate-serviceaccount-key-complete";
    pub const ROTATE_ETCD_ENCRYPTION_KEY_START: &str = "rotate-etcd-encryption-key-start";
    pub const ROTATE_ETCD_ENCRYPTION_KEY_COMPLETE: &str = "rotate-etcd-encryption-key-complete";
    /// Every two-phase rotation's start, and the SSH key pair.
    pub const ROTATE_CREDENTIALS_START: &str = "rotate-credentials-start";
    /// Every two-phase rotation's completion.
    pub const ROTATE_CREDENTIALS_COMPLETE: &str = "rotate-credentials-complete";
    pub const ROTATE_SSH_KEYPAIR: &str = "rotate-ssh-keypair";
    /// Runs the shoot's maintenance now (gardener-controller-manager).
    pub const MAINTAIN: &str = "maintain";
    /// An operator takes over a shoot whose owning seed is gone.
    pub const FORCE_RESTORE: &str = "force-restore";
    /// Both phases of the etcd encryption key rotation in one operation.
    pub const ROTATE_ETCD_ENCRYPTION_KEY: &str = "rotate-etcd-encryption-key";
    /// Gardener's rotation of the monitoring and logging credentials.
    pub const ROTATE_OBSERVABILITY_CREDENTIALS: &str = "rotate-observability-credentials";
    /// Gardener's rotation of the static kubeconfig token (removed from Gardener).
    pub const ROTATE_KUBECONFIG_CREDENTIALS: &str = "rotate-kubeconfig-credentials";
    /// `rollout-workers=<pool>[,<pool>...]` (or `=*`): replace the machines of these pools.
    pub const ROLLOUT_WORKERS: &str = "rollout-workers";
    /// Separates several operations in one annotation value (`rotate-ca-start;rotate-serviceaccount-key-start`).
    pub const SEPARATOR: char = ';';
}

/// Finalizer gardener components put on garden objects they must clean up after.
pub const FINALIZER_GARDENER: &str = "gardener";
/// Finalizer prefix of extension objects; the full name is `<prefix>/<kind-lowercase>`.
pub const FINALIZER_EXTENSIONS_PREFIX: &str = "extensions.gardener.cloud";

/// Label naming the shoot an object in the garden belongs to.
pub const LABEL_SHOOT_NAME: &str = "shoot.gardener.cloud/name";
/// Label on seed objects naming the shoot's technical ID.
pub const LABEL_TECHNICAL_ID: &str = "shoot.gardener.cloud/technical-id";
/// Label on a Project's namespace naming the project.
pub const LABEL_PROJECT_NAME: &str = "project.gardener.cloud/name";
/// Label on a Project's namespace that marks it as a project namespace.
pub const LABEL_ROLE: &str = "gardener.cloud/role";
/// Value of [`LABEL_ROLE`] on project namespaces.
pub const ROLE_PROJECT: &str = "project";
/// Label naming a worker's pool: on the Nodes a kubelet registers and on the machines behind them.
pub const LABEL_WORKER_POOL: &str = "worker.gardener.cloud/pool";
/// Purpose label of extension objects (e.g. `ControlPlane` normal vs exposure).
pub const LABEL_PURPOSE: &str = "gardener.cloud/purpose";

/// Seed taints.
pub mod taints {
    /// Only shoots that tolerate this taint are scheduled onto the seed.
    pub const PROTECTED: &str = "seed.gardener.cloud/protected";
    /// The seed is not considered by the scheduler at all.
    pub const INVISIBLE: &str = "seed.gardener.cloud/invisible";
}

/// Condition types.
pub mod conditions {
    pub const GARDENLET_READY: &str = "GardenletReady";
    pub const BACKUP_BUCKETS_READY: &str = "BackupBucketsReady";
    pub const SEED_SYSTEM_COMPONENTS_HEALTHY: &str = "SeedSystemComponentsHealthy";
    pub const API_SERVER_AVAILABLE: &str = "APIServerAvailable";
    pub const CONTROL_PLANE_HEALTHY: &str = "ControlPlaneHealthy";
    pub const EVERY_NODE_READY: &str = "EveryNodeReady";
    pub const SYSTEM_COMPONENTS_HEALTHY: &str = "SystemComponentsHealthy";
    pub const BASTION_READY: &str = "BastionReady";
}

/// Prefix of the technical ID of a shoot and of its namespace in the seed.
pub const SHOOT_NAMESPACE_PREFIX: &str = "shoot";
/// Prefix of a project's namespace in the garden.
pub const PROJECT_NAMESPACE_PREFIX: &str = "garden-";
/// Namespace of the garden's own objects.
pub const GARDEN_NAMESPACE: &str = "garden";
