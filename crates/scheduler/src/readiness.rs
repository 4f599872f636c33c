//! Which of the scheduler's caches (Shoots, Seeds, CloudProfiles) have synced: decisions wait
//! for all three, so that they see the whole fleet, and `/readyz` reports ready only then.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Which caches have synced. Cloned handles share the flags.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    pub shoots: Arc<AtomicBool>,
    pub seeds: Arc<AtomicBool>,
    pub cloud_profiles: Arc<AtomicBool>,
}

impl Readiness {
    /// The caches that have not synced yet, by resource name.
    pub fn pending(&self) -> Vec<&'static str> {
        [("shoots", &self.shoots), ("seeds", &self.seeds), ("cloudprofiles", &self.cloud_profiles)]
            .into_iter()
            .filter(|(_, flag)| !flag.load(Ordering::Acquire))
            .map(|(name, _)| name)
            .collect()
    }

    pub fn is_ready(&self) -> bool {
        self.pending().is_empty()
    }
}
