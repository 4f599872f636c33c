//! gardener-controller-manager: the garden's own controllers.
//!
//! * [`project`]: a Project's namespace, its members' RoleBindings, its phase, and a deletion
//!   that waits for the project's shoots to be gone.
//! * [`seed_lifecycle`]: a Seed whose gardenlet stopped renewing its heartbeat Lease becomes
//!   `GardenletReady=Unknown`; later the conditions of the seed's shoots become `Unknown` too.
//! * [`bastion`]: Bastions expire after their maximum lifetime or when their keep-alive goes
//!   silent, and go away with their Shoot.
//! * [`adminkubeconfig`]: AdminKubeconfigRequests get a short-lived client certificate for the
//!   user's own public key, signed with the shoot's client CA from its `<shoot>.ca-client` InternalSecret, and go when
//!   it expires.
//! * [`hibernation`]: `spec.hibernation.schedules` set and clear `spec.hibernation.enabled`.
//! * [`maintenance`]: in the maintenance window (or when asked), expired Kubernetes versions
//!   are forced forward and patch versions auto-updated.
//! * [`namespacedcloudprofile`]: a NamespacedCloudProfile's `status.cloudProfileSpec` is its
//!   parent merged with its additions, kept current when either changes.
//! * [`shootseedlabels`]: every Shoot carries the `name.seed.gardener.cloud/<seed>` labels of
//!   its `spec.seedName` and `status.seedName`, which gardenlets select their shoots by.
//! * [`managedseedset`]: a ManagedSeedSet keeps its number of ManagedSeeds and their Shoots
//!   (GEP-13): one replica at a time, scale-in by GEP-13's priorities, in-place rolling updates.
//! * [`csr`]: CertificateSigningRequests for seed identities (`gardener.cloud:system:seed:<name>`)
//!   are approved when the requester is that seed or may bootstrap it, denied otherwise.
//! * [`protection`]: CloudProfiles, SecretBindings, their Secrets and Quotas carry a finalizer
//!   while anything uses them.
//!
//! Every controller reads, calls a pure decision (`decide`), and writes only what changed.
//! Time comes from a [`Clock`], so tests move time instead of sleeping. [`app`] adds the
//! controllers to the SDK's runner (health, readiness, metrics, leader election).

pub mod adminkubeconfig;
pub mod app;
pub mod bastion;

pub mod clock;
pub mod config;
pub mod csr;
pub mod hibernation;
pub mod installation;
pub mod maintenance;
pub mod managedseedset;
pub mod metrics;

pub mod namespacedcloudprofile;
pub mod project;
pub mod protection;
pub mod runtime;
pub mod seed_lifecycle;
pub mod shootseedlabels;

pub use clock::{Clock, ManualClock, SystemClock};
pub use config::Config;
