//! Cancelling a running reconcile when its shoot is being deleted: the controller runs one
//! operation per shoot at a time, so without this a deletion waits until the reconcile's flow
//! ends (at worst each of its waits' timeouts). The watch sees the deletion as it happens and
//! cancels the reconcile of that shoot; the reconcile drops its flow (the running tasks are
//! aborted, as if gardenlet had restarted) and the deletion runs next.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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

/// The cancellable reconciles running now, by shoot key (`backoff_key`).
#[derive(Clone, Debug, Default)]
pub struct Running(Arc<Mutex<HashMap<String, Cancel>>>);

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
        if map.get(&self.key).is_some_and(|c| Arc::ptr_eq(&c.0, &self.cancel.0)) {
            map.remove(&self.key);
        }
    }
}

impl Running {
    /// Registers a reconcile of the shoot `key`; cancelled by [`Self::cancel`] until dropped.
    pub fn register(&self, key: String) -> Registered {
        let cancel = Cancel::default();
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), cancel.clone());
        Registered { running: self.clone(), key, cancel }
    }

    /// Cancels the running reconcile of the shoot `key`, if there is one. Returns whether there was.
    pub fn cancel(&self, key: &str) -> bool {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(key) {
            Some(c) if !c.is_cancelled() => {
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
    async fn a_cancel_reaches_the_registered_reconcile_only_while_it_runs() {
        let running = Running::default();
        assert!(!running.cancel("a"), "nothing runs");
        let first = running.register("a".into());
        let waiter = tokio::spawn({
            let cancel = first.cancel.clone();
            async move { cancel.cancelled().await }
        });
        assert!(!running.cancel("b"), "another shoot");
        assert!(running.cancel("a"));
        assert!(!running.cancel("a"), "already cancelled");
        waiter.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(first.cancel.is_cancelled());
        drop(first);
        assert!(!running.cancel("a"), "ended");
        // A newer registration survives the end of an older one under the same key.
        let older = running.register("a".into());
        let newer = running.register("a".into());
        drop(older);
        assert!(running.cancel("a"));
        assert!(newer.cancel.is_cancelled());
    }
}
