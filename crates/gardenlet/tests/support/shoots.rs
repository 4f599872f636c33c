//! Waiting for a Shoot to reach a state (test code only).

use api::core::Shoot;
use kube::Api;
use std::time::{Duration, Instant};

/// Polls the Shoot until `check` accepts it; panics with its status after `timeout`.
pub async fn wait_shoot(
    shoots: &Api<Shoot>,
    name: &str,
    what: &str,
    timeout: Duration,
    check: impl Fn(&Shoot) -> bool,
) -> Shoot {
    let started = Instant::now();
    loop {
        if let Some(s) = shoots.get_opt(name).await.unwrap()
            && check(&s)
        {
            return s;
        }
        if started.elapsed() > timeout {
            let s = shoots.get_opt(name).await.unwrap();
            panic!("{what} not reached within {timeout:?}; shoot status: {:#?}", s.and_then(|s| s.status));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
