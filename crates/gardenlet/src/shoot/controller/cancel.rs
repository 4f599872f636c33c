//! Cancelling a running operation when its shoot asks for a stronger one: the controller runs
//! one operation per shoot at a time, so without this a deletion waits until the reconcile's
//! flow ends (at worst each of its waits' timeouts), and a force-deletion until the deletion's
//! flow ends (which may never happen: the force-deletion exists for deletions that hang). The
//! watch sees the change as it happens and cancels the running operation if it gives way
//! ([`gives_way`]); the operation drops its flow (the running tasks are aborted, as if
//! gardenlet had restarted) and the stronger one runs next.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The operations that can be cancelled, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Reconcile,
    Delete,
    ForceDelete,
}

/// Whether the running operation `running` stops for `wanted`, the operation the shoot asks
/// for now: a reconcile for a deletion of either kind, a deletion for a force-deletion.
pub fn gives_way(running: Operation, wanted: Operation) -> bool {
    use Operation::*;
    matches!((running, wanted), (Reconcile, Delete | ForceDelete) | (Delete, ForceDelete))
}

/// A one-way cancellation signal.
#[derive(Clone, Debug)]
pub struct Cancel(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Cancel {
    fn default() -> Self {
        Self(Arc::new(tokio::sync::watch::Sender::new(false)))
    }
}

impl Cancel {
    /// Signals every waiter, now and later.
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once [`Self::cancel`] was called.
    pub async fn cancelled(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`, so the channel cannot close while this waits.
        let _ = rx.wait_for(|c| *c).await;
    }
}

/// The cancellable operations running now, by shoot key (`backoff_key`).
#[derive(Clone, Debug, Default)]
pub struct Running(Arc<Mutex<HashMap<String, (Operation, Cancel)>>>);

/// Removes its entry from [`Running`] when the reconcile ends (also on panic or drop).
#[derive(Debug)]
pub struct Registered {
    running: Running,
    key: String,
    pub cancel: Cancel,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut map = self.running.0.lock().unwrap_or_else(|e| e.into_inner());
        // Only our own entry: a later registration under the same key is not ours to remove.
        if map.get(&self.key).is_some_and(|(_, c)| Arc::ptr_eq(&c.0, &self.cancel.0)) {
            map.remove(&self.key);
        }
    }
}

impl Running {
    /// Registers an `operation` of the shoot `key`; cancelled by [`Self::cancel`] until dropped.
    pub fn register(&self, key: String, operation: Operation) -> Registered {
        let cancel = Cancel::default();
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), (operation, cancel.clone()));
        Registered { running: self.clone(), key, cancel }
    }

    /// Cancels the running operation of the shoot `key` if it gives way to `wanted`. Returns
    /// whether it did.
    pub fn cancel(&self, key: &str, wanted: Operation) -> bool {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(key) {
            Some((running, c)) if !c.is_cancelled() && gives_way(*running, wanted) => {
                c.cancel();
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancel_reaches_the_registered_operation_only_while_it_runs() {
        use Operation::*;
        let running = Running::default();
        assert!(!running.cancel("a", Delete), "nothing runs");
        let first = running.register("a".into(), Reconcile);
        let waiter = tokio::spawn({
            let cancel = first.cancel.clone();
            async move { cancel.cancelled().await }
        });
        assert!(!running.cancel("b", Delete), "another shoot");
        assert!(!running.cancel("a", Reconcile), "a reconcile does not stop for a reconcile");
        assert!(running.cancel("a", Delete));
        assert!(!running.cancel("a", ForceDelete), "already cancelled");
        waiter.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(first.cancel.is_cancelled());
        drop(first);
        assert!(!running.cancel("a", Delete), "ended");
        // A newer registration survives the end of an older one under the same key.
        let older = running.register("a".into(), Reconcile);
        let newer = running.register("a".into(), Reconcile);
        drop(older);
        assert!(running.cancel("a", ForceDelete));
        assert!(newer.cancel.is_cancelled());
    }

    #[test]
    fn a_deletion_stops_only_for_a_force_deletion() {
        use Operation::*;
        let running = Running::default();
        let deletion = running.register("a".into(), Delete);
        assert!(!running.cancel("a", Delete), "the deletion itself");
        assert!(!running.cancel("a", Reconcile));
        assert!(running.cancel("a", ForceDelete));
        assert!(deletion.cancel.is_cancelled());
        let forced = running.register("a".into(), ForceDelete);
        assert!(!running.cancel("a", ForceDelete), "nothing is stronger than a force-deletion");
        assert!(!forced.cancel.is_cancelled());
    }
}
