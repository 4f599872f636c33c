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
}

impl Binary {
    /// Starts `path` with `args`; stdout is discarded, stderr kept for [`Binary::stop`].
    pub fn spawn(path: &str, args: &[String]) -> std::io::Result<Self> {
        let child = Command::new(path).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?;
        Ok(Self { child })
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
                return Err(format!("SIGTERM did not stop it within {timeout:?}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn stderr(&mut self) -> String {
        let mut out = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut out);
        }
        out
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
