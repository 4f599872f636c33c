//! A component's binary under test: started with its real `main`, probed over plain HTTP
//! (`/readyz`, `/metrics`), stopped with SIGTERM, killed when dropped.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A free loopback address for `--metrics-bind-address`.
pub fn free_address() -> std::io::Result<SocketAddr> {
    TcpListener::bind("127.0.0.1:0")?.local_addr()
}

/// `GET path` over HTTP/1.0; the whole response (status line, headers, body), or `None` when
/// nothing answers.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// A running binary; killed on drop.
#[derive(Debug)]
pub struct Binary {
    child: Child,
    /// Its stderr, read as it is written (a full pipe would block the process on its next log
    /// line), until it exits.
    log: Option<std::thread::JoinHandle<String>>,
}

impl Binary {
    /// Starts `path` with `args`; stdout is discarded, stderr kept for [`Binary::stop`].
    pub fn spawn(path: &str, args: &[String]) -> std::io::Result<Self> {
        let mut child = Command::new(path).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?;
        let log = child.stderr.take().map(|mut stderr| {
            std::thread::spawn(move || {
                let mut out = Vec::new();
                let _ = stderr.read_to_end(&mut out);
                String::from_utf8_lossy(&out).into_owned()
            })
        });
        Ok(Self { child, log })
    }

    /// Waits until `GET /readyz` on `addr` answers 200; fails when the process exits first or
    /// `timeout` passes.
    pub async fn wait_ready(&mut self, addr: SocketAddr, timeout: Duration) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if http_get(addr, "/readyz").is_some_and(|r| r.split_whitespace().nth(1) == Some("200")) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited early ({status}): {}", self.stderr()));
            }
            if start.elapsed() > timeout {
                return Err(format!("/readyz did not answer 200 within {timeout:?}"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Sends SIGTERM and waits up to `timeout` for the exit; returns the status and stderr.
    pub async fn stop(&mut self, timeout: Duration) -> Result<(ExitStatus, String), String> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().map_err(|e| e.to_string())?;
        if !sent.success() {
            return Err(format!("kill -TERM {pid} failed"));
        }
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Ok((status, self.stderr()));
            }
            if start.elapsed() > timeout {
                // Killed, so that its log (what it was still waiting for) is complete.
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!("SIGTERM did not stop it within {timeout:?}; its log:\n{}", self.stderr()));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Everything it wrote to stderr; call once it has exited.
    fn stderr(&mut self) -> String {
        self.log.take().and_then(|log| log.join().ok()).unwrap_or_default()
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (at most 60 s) until the Lease `namespace/name` has a holder, and returns it. A
/// binary is ready before it leads (a standby is ready too), so its leader Lease may come a
/// moment after `/readyz` answers 200.
pub async fn lease_holder(client: &kube::Client, namespace: &str, name: &str) -> String {
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> = kube::Api::namespaced(client.clone(), namespace);
    crate::poll::until(
        &format!("the Lease {namespace}/{name} to be held"),
        Duration::from_secs(60),
        Duration::from_millis(200),
        || async {
            let lease = leases.get_opt(name).await.map_err(|e| e.to_string())?.ok_or("no Lease yet".to_string())?;
            let holder = lease.spec.and_then(|s| s.holder_identity).unwrap_or_default();
            if holder.is_empty() { Err("no holder yet".to_string()) } else { Ok(holder) }
        },
    )
    .await
}
