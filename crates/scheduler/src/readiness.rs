//! Which of the scheduler's caches (Shoots, Seeds, CloudProfiles, NamespacedCloudProfiles,
//! ExposureClasses) have synced: decisions wait for all of them, so that they see the whole
//! fleet, and `/readyz` reports ready only then.

use runtime::cache::SyncFlags;

/// The caches' names: their readiness flags, and what [`Readiness::pending`] lists.
pub const SHOOTS: &str = "shoots";
pub const SEEDS: &str = "seeds";
pub const CLOUD_PROFILES: &str = "cloudprofiles";
pub const NAMESPACED_CLOUD_PROFILES: &str = "namespacedcloudprofiles";
pub const EXPOSURE_CLASSES: &str = "exposureclasses";

/// Which caches have synced: one flag per cache, declared up front (so that all five are
/// pending before the watches start), set by the controller's wiring. Cloned handles share the
/// flags.
#[derive(Clone, Debug)]
pub struct Readiness(SyncFlags);

impl Default for Readiness {
    fn default() -> Self {
        let mut flags = SyncFlags::new();
        for cache in [SHOOTS, SEEDS, CLOUD_PROFILES, NAMESPACED_CLOUD_PROFILES, EXPOSURE_CLASSES] {
            flags.flag(cache);
        }
        Self(flags)
    }
}

impl Readiness {
    /// The caches that have not synced yet, by resource name.
    pub fn pending(&self) -> Vec<&'static str> {
        self.0.pending()
    }

    pub fn is_ready(&self) -> bool {
        self.0.synced()
    }

    /// The flags, for the wiring whose caches set them.
    pub fn flags(&self) -> SyncFlags {
        self.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn every_cache_is_pending_until_its_flag_is_set() {
        let readiness = Readiness::default();
        assert_eq!(readiness.pending(), [SHOOTS, SEEDS, CLOUD_PROFILES, NAMESPACED_CLOUD_PROFILES, EXPOSURE_CLASSES]);
        let mut flags = readiness.flags();
        for cache in [SHOOTS, SEEDS, CLOUD_PROFILES, NAMESPACED_CLOUD_PROFILES] {
            flags.flag(cache).store(true, Ordering::Release);
        }
        assert_eq!(readiness.pending(), [EXPOSURE_CLASSES]);
        assert!(!readiness.is_ready());
        flags.flag(EXPOSURE_CLASSES).store(true, Ordering::Release);
        assert!(readiness.is_ready());
    }
}
