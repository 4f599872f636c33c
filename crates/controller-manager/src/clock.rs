//! Where the controllers get the time from. Production uses [`SystemClock`]; tests use a
//! [`ManualClock`] and move it: every move re-queues every object of every controller that was
//! given the clock, so time-driven behaviour (expiry, grace periods, cron ticks) is tested
//! without sleeping.

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::sync::{Arc, Mutex};

/// A source of the current time, and of a signal when time jumps (only manual clocks jump).
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    fn now(&self) -> Timestamp;
    /// One item per jump of the clock; controllers re-check every object on each.
    fn jumps(&self) -> BoxStream<'static, ()>;
}

/// The machine's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    fn jumps(&self) -> BoxStream<'static, ()> {
        futures::stream::pending().boxed()
    }
}

/// A clock that stands still until moved (tests). Cloned handles share the time.
#[derive(Clone, Debug)]
pub struct ManualClock {
    now: Arc<Mutex<Timestamp>>,
    jumped: Arc<tokio::sync::watch::Sender<u64>>,
}

impl ManualClock {
    pub fn new(now: Timestamp) -> Self {
        Self { now: Arc::new(Mutex::new(now)), jumped: Arc::new(tokio::sync::watch::Sender::new(0)) }
    }

    /// Moves the clock by `by` (which may be negative) and re-queues every object.
    pub fn advance(&self, by: SignedDuration) {
        {
            let mut now = self.now.lock().unwrap_or_else(|p| p.into_inner());
            *now = now.saturating_add(by).unwrap_or(*now);
        }
        self.jumped.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Sets the clock to `to` and re-queues every object.
    pub fn set(&self, to: Timestamp) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) = to;
        self.jumped.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.now.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn jumps(&self) -> BoxStream<'static, ()> {
        let rx = self.jumped.subscribe();
        futures::stream::unfold(rx, |mut rx| async move { rx.changed().await.ok().map(|()| ((), rx)) }).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_manual_clock_moves_only_when_told_and_signals_each_jump() {
        let start = Timestamp::from_second(1_000).unwrap_or_default();
        let clock = ManualClock::new(start);
        let mut jumps = clock.jumps();
        assert_eq!(clock.now(), start);
        clock.advance(SignedDuration::from_secs(90));
        assert_eq!(clock.now().as_second(), 1_090);
        let jumped = tokio::time::timeout(std::time::Duration::from_secs(1), jumps.next()).await;
        assert_eq!(jumped, Ok(Some(())));
        clock.set(start);
        assert_eq!(clock.now(), start);
    }
}
