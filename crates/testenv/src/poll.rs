//! Waiting in tests for something to come true: a probe asked again and again, bounded, and a
//! panic that names what was awaited and what the probe saw last (the failure report).

use std::future::Future;
use std::time::{Duration, Instant};

/// Asks `probe` every `every` until it returns `Ok`, for at most `timeout`; on timeout, panics
/// with `what` and the probe's last `Err`.
pub async fn until<T, Fut>(what: &str, timeout: Duration, every: Duration, mut probe: impl FnMut() -> Fut) -> T
where
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match probe().await {
            Ok(value) => return value,
            Err(observed) => observed,
        };
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}; last observed: {last}");
        }
        tokio::time::sleep(every).await;
    }
}

/// [`until`] for a probe that has nothing to say while it waits: `None` until it is done.
pub async fn until_some<T, Fut>(what: &str, timeout: Duration, every: Duration, mut probe: impl FnMut() -> Fut) -> T
where
    Fut: Future<Output = Option<T>>,
{
    until(what, timeout, every, || {
        let next = probe();
        async move { next.await.ok_or_else(|| "not yet".to_string()) }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_the_first_value_and_panics_with_the_last_observation() {
        let mut n = 0;
        let v = until("three", Duration::from_secs(5), Duration::from_millis(1), || {
            n += 1;
            let now = n;
            async move { if now >= 3 { Ok(now) } else { Err(format!("{now}")) } }
        })
        .await;
        assert_eq!(v, 3);
        let waited =
            tokio::spawn(until_some::<(), _>("never", Duration::from_millis(20), Duration::from_millis(5), || async {
                None
            }))
            .await;
        let panic = waited.expect_err("a probe that never succeeds panics").into_panic();
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("waiting for never; last observed: not yet"), "{message}");
    }
}
