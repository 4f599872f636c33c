//! What the server and the agent both need around their read loops.

use std::sync::{Mutex, MutexGuard};
use tokio::sync::mpsc;

/// A poisoned map lock only means a panic elsewhere; the map itself is still consistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sends `item` without waiting in a read loop: queued when there is room, else from a task of
/// its own (a control packet must not stall the stream that carries every connection).
pub(crate) fn send_soon<T: Send + 'static>(tx: &mpsc::Sender<T>, item: T) {
    if let Err(mpsc::error::TrySendError::Full(item)) = tx.try_send(item) {
        let tx = tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(item).await;
        });
    }
}
