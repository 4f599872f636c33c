//! Timeout and retry helpers for flow tasks.

use std::fmt;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// Why a retried operation gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetryError<E: fmt::Display> {
    #[error("not done after {timeout:?}: {last}")]
    Timeout { timeout: Duration, last: String },
    #[error("{0}")]
    Severe(E),
}

/// Runs `f` until it returns `Ok(Some(value))`, sleeping `interval` after every `Ok(None)`
/// ("not yet"); an `Err` stops immediately. Gives up after `timeout`, reporting the last
/// "not yet" reason supplied through `reason`.
pub async fn retry_until_timeout<T, E, F, Fut>(
    interval: Duration,
    timeout: Duration,
    mut f: F,
) -> Result<T, RetryError<E>>
where
    E: fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Result<T, String>, E>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match f().await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(reason)) => reason,
            Err(e) => return Err(RetryError::Severe(e)),
        };
        if Instant::now() + interval > deadline {
            return Err(RetryError::Timeout { timeout, last });
        }
        tokio::time::sleep(interval).await;
    }
}

/// Runs `fut`, failing with a message naming `what` when it takes longer than `timeout`.
pub async fn with_timeout<T>(what: &str, timeout: Duration, fut: impl Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(timeout, fut).await.map_err(|_| format!("{what} did not finish within {timeout:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test(start_paused = true)]
    async fn retry_returns_when_done() {
        let calls = AtomicU32::new(0);
        let got = retry_until_timeout(Duration::from_secs(1), Duration::from_secs(10), || async {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(if n < 3 { Err(format!("attempt {n}")) } else { Ok(n) })
        })
        .await;
        assert_eq!(got, Ok(3));
    }

    #[tokio::test(start_paused = true)]
    async fn retry_times_out_with_the_last_reason() {
        let got: Result<(), _> = retry_until_timeout(Duration::from_secs(1), Duration::from_secs(5), || async {
            Ok::<_, String>(Err("still waiting".to_string()))
        })
        .await;
        assert_eq!(got, Err(RetryError::Timeout { timeout: Duration::from_secs(5), last: "still waiting".into() }));
    }

    #[tokio::test(start_paused = true)]
    async fn retry_stops_on_severe_errors() {
        let calls = AtomicU32::new(0);
        let got: Result<(), _> = retry_until_timeout(Duration::from_secs(1), Duration::from_secs(5), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err::<Result<(), String>, _>("forbidden".to_string())
        })
        .await;
        assert_eq!(got, Err(RetryError::Severe("forbidden".to_string())));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_names_the_operation() {
        let err = with_timeout("waiting for etcd", Duration::from_secs(1), std::future::pending::<()>()).await;
        assert_eq!(err, Err("waiting for etcd did not finish within 1s".to_string()));
        assert_eq!(with_timeout("x", Duration::from_secs(1), async { 7 }).await, Ok(7));
    }
}
