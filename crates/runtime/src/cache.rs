//! When a controller's watch cache has synced, for `/readyz`.

use kube::runtime::reflector::Store;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Sets `flag` once `store` has seen its initial list; abort the handle when the controller
/// stops. kube-runtime 5's `Store::wait_until_ready` does not wake a waiter that started
/// before the initial list completed, so the store is checked every 100 ms without waiting on it.
pub fn flag_when_synced<K>(store: Store<K>, flag: Arc<AtomicBool>) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
{
    tokio::spawn(async move {
        loop {
            if let Some(result) = futures::FutureExt::now_or_never(store.wait_until_ready()) {
                flag.store(result.is_ok(), Ordering::Release);
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}

/// The readiness flags of one controller's caches, each under a name (`"shoots"`,
/// `"seed controller"`), so that code names the cache it means instead of an index into a
/// list. The controller is synced when every flag is set.
#[derive(Clone, Debug, Default)]
pub struct SyncFlags(Vec<(&'static str, Arc<AtomicBool>)>);

impl SyncFlags {
    pub fn new() -> Self {
        Self::default()
    }

    /// The flag named `name`: a new one, unset, unless one of that name was made before (then
    /// that one, so that flags declared up front are the ones their caches set). The cache
    /// that owns it sets it once synced.
    pub fn flag(&mut self, name: &'static str) -> Arc<AtomicBool> {
        if let Some((_, flag)) = self.0.iter().find(|(n, _)| *n == name) {
            return flag.clone();
        }
        let flag = Arc::new(AtomicBool::new(false));
        self.0.push((name, flag.clone()));
        flag
    }

    /// Every flag, in the order they were named.
    pub fn all(&self) -> Vec<Arc<AtomicBool>> {
        self.0.iter().map(|(_, flag)| flag.clone()).collect()
    }

    /// Whether every flag is set.
    pub fn synced(&self) -> bool {
        self.0.iter().all(|(_, flag)| flag.load(Ordering::Acquire))
    }

    /// The names of the caches that have not synced yet.
    pub fn pending(&self) -> Vec<&'static str> {
        self.0.iter().filter(|(_, flag)| !flag.load(Ordering::Acquire)).map(|(name, _)| *name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_flags_name_what_is_pending() {
        let mut flags = SyncFlags::new();
        let shoots = flags.flag("shoots");
        let _seeds = flags.flag("seeds");
        assert_eq!(flags.all().len(), 2);
        assert_eq!(flags.pending(), vec!["shoots", "seeds"]);
        shoots.store(true, Ordering::Release);
        assert_eq!(flags.pending(), vec!["seeds"]);
        assert!(!flags.synced());
        // A name made before gives its flag again; clones share the flags made so far.
        let declared = flags.clone();
        flags.flag("seeds").store(true, Ordering::Release);
        assert_eq!(flags.all().len(), 2);
        assert!(flags.synced() && declared.synced());
    }
}
