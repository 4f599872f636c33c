//! Readiness waits of the bring-up: each watches (or, for endpoints without a watch, asks at a
//! short interval) until its condition holds, fails early when the process it waits for died,
//! and reports what it last saw when the time is up.

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::process;
use std::future::Future;
use std::time::{Duration, Instant};

/// Calls `probe` every `interval` until it returns `Ok(true)`; `alive` names processes that must
/// keep running meanwhile.
pub async fn until<F, Fut>(
    what: &str,
    timeout: Duration,
    layout: &Layout,
    alive: &[&'static str],
    mut probe: F,
) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<bool, String>>,
{
    let start = Instant::now();
    let mut last = String::new();
    loop {
        for name in alive {
            process::check_alive(layout, name)?;
        }
        match probe().await {
            Ok(true) => return Ok(()),
            Ok(false) => last.clear(),
            Err(e) => last = e,
        }
        if start.elapsed() > timeout {
            let detail = if last.is_empty() { String::new() } else { format!(" (last: {last})") };
            return Err(Error::Timeout { what: what.to_string(), timeout, detail });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
