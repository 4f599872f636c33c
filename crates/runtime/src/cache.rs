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
