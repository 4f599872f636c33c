//! Which of the scheduler's caches (Shoots, Seeds, CloudProfiles, NamespacedCloudProfiles,
//! ExposureClasses) have synced: decisions wait for all of them, so that they see the whole
//! fleet, and `/readyz` reports ready only then.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Which caches have synced. Cloned handles share the flags.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    pub shoots: Arc<AtomicBool>,
    pub seeds: Arc<AtomicBool>,
    pub cloud_profiles: Arc<AtomicBool>,
    pub namespaced_cloud_profiles: Arc<AtomicBool>,
    pub exposure_classes: Arc<AtomicBool>,
}

impl Readiness {
    /// The caches that have not synced yet, by resource name.
    pub fn pending(&self) -> Vec<&'static str> {
        [
            ("shoots", &self.shoots),
            ("seeds", &self.seeds),
            ("cloudprofiles", &self.cloud_profiles),
            ("namespacedcloudprofiles", &self.namespaced_cloud_profiles),
            ("exposureclasses", &self.exposure_classes),
        ]
        .into_iter()
        .filter(|(_, flag)| !flag.load(Ordering::Acquire))
        .map(|(name, _)| name)
        .collect()
    }

    pub fn is_ready(&self) -> bool {
        self.pending().is_empty()
    }
}
