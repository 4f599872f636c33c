//! The garden's BackupEntries (GEP-2, gardenlet's part): one per shoot, in the shoot's project
//! namespace, naming the seed's BackupBucket; the seed's extension BackupEntry of the same name
//! holds the data.
//!
//! * The shoot flows write the entry ([`apply::apply`]) before the extension entry, and its
//!   status ([`apply::write_status`]) from the extension entry once that is ready.
//! * This controller keeps deleted entries: a shoot's deletion deletes its entry, the
//!   `gardener` finalizer holds it for the deletion grace period
//!   (`controllers.backupEntryDeletionGracePeriodSeconds`), during which the backups can still
//!   be restored from; then it deletes the extension entry (the provider deletes the data) and
//!   releases the finalizer once that is gone.
//!
//! Watches every garden BackupEntry (acts on those whose `spec.seedName` is this seed); a kept
//! entry is looked at again when its grace period ends, a deletion in progress every few
//! seconds.

pub mod apply;
pub mod decide;
pub mod reconcile;

use api::core::BackupEntry;
use kube::Client;
use kube::runtime::watcher;
use runtime::wiring::Wiring;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub struct Context {
    pub seed_name: String,
    pub garden: Client,
    pub seed: Client,
    /// How long a deleted entry's data is kept.
    pub grace: Duration,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("seed_name", &self.seed_name)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

/// Runs the controller until `stop`; `ready` turns true once the entry cache is filled.
pub async fn run(
    ctx: Context,
    concurrency: u16,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    ready: Arc<AtomicBool>,
) {
    let mut wiring = Wiring::new("backupentry", ctx.garden.clone(), stop, ready).concurrency(concurrency);
    let entries = wiring.controller("backupentries", wiring.all::<BackupEntry>(), watcher::Config::default());
    wiring.run(entries, reconcile::reconcile, reconcile::error_policy, Arc::new(ctx)).await;
}
