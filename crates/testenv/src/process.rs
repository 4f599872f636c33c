//! A child process that is killed when its guard is dropped (also while a test unwinds from a
//! panic), with its output captured to a log file for diagnosis.
//!
//! Public as [`crate::Process`] for tests that start control-plane binaries with their own
//! flags (e.g. with a PKI under test) but want the same process handling.

use crate::Error;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running child process, killed on drop; stdout and stderr go to `<dir>/<name>.log`.
#[derive(Debug)]
pub struct ProcessGuard {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl ProcessGuard {
    /// Starts `binary` with `args` in `dir`, logging to `<dir>/<name>.log` (truncated first).
    pub fn spawn(name: &'static str, binary: &Path, args: &[String], dir: &Path) -> Result<Self, Error> {
        let log = dir.join(format!("{name}.log"));
        let out =
            File::create(&log).map_err(|source| Error::Io { what: format!("creating {}", log.display()), source })?;
        let err = out.try_clone().map_err(|source| Error::Io { what: format!("cloning {}", log.display()), source })?;
        let child = Command::new(binary)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|source| Error::Io { what: format!("starting {}", binary.display()), source })?;
        Ok(Self { name, child, log })
    }

    /// Fails with the tail of the log when the process has already exited.
    pub fn check_alive(&mut self) -> Result<(), Error> {
        match self.child.try_wait() {
            Ok(Some(status)) => {
                Err(Error::Exited { name: self.name, status: status.to_string(), log_tail: self.log_tail() })
            }
            _ => Ok(()),
        }
    }

    /// The last 20 lines of the process's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process and waits for it (also done on drop).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
