//! Host processes of the local cluster (etcd, the control plane, containerd, kubelet,
//! kube-proxy, the add-ons): started detached in their own session so they outlive `up`, with a
//! PID file and a log file each; found again by PID (checked against the binary, so a reused
//! PID is never mistaken for ours) and stopped by PID.

use crate::error::{Error, Result};
use crate::layout::Layout;
use std::fs::{File, OpenOptions};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How to start one component.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: &'static str,
    pub binary: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl Spec {
    pub fn new(name: &'static str, binary: impl Into<PathBuf>, args: Vec<String>) -> Self {
        Self { name, binary: binary.into(), args, env: Vec::new() }
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// The PID of `name` when it runs (its PID file names a live process of the same binary).
pub fn running(layout: &Layout, name: &str) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(layout.pid(name)).ok()?.trim().parse().ok()?;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let expected = std::fs::read_to_string(layout.pid(name).with_extension("exe")).ok()?;
    // A deleted-and-replaced binary shows as "<path> (deleted)"; still ours.
    let exe = exe.to_string_lossy();
    (exe.trim_end_matches(" (deleted)") == expected.trim() && !is_zombie(pid)).then_some(pid)
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

/// Starts `spec` detached unless it already runs; returns its PID and whether it was started.
pub fn ensure(layout: &Layout, spec: &Spec) -> Result<(i32, bool)> {
    if let Some(pid) = running(layout, spec.name) {
        return Ok((pid, false));
    }
    if !spec.binary.is_file() {
        return Err(Error::MissingBinary {
            binary: spec.name.to_string(),
            path: spec.binary.clone(),
            fix: "run `make local-up`, which provisions it".into(),
        });
    }
    let log_path = layout.log(spec.name);
    let log =
        OpenOptions::new().create(true).append(true).open(&log_path).map_err(Error::io("opening log", &log_path))?;
    let err = log.try_clone().map_err(Error::io("opening log", &log_path))?;
    let mut cmd = Command::new(&spec.binary);
    cmd.args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .current_dir(layout.root())
        .process_group(0);
    let child = cmd.spawn().map_err(|source| Error::Spawn { command: spec.binary.display().to_string(), source })?;
    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    // The child is not waited for: it belongs to its own session and outlives `up`; init reaps it.
    drop(child);
    let exe = std::fs::canonicalize(&spec.binary).unwrap_or_else(|_| spec.binary.clone());
    write(layout.pid(spec.name).with_extension("exe"), &exe.display().to_string())?;
    write(layout.pid(spec.name), &pid.to_string())?;
    Ok((pid, true))
}

fn write(path: PathBuf, text: &str) -> Result<()> {
    std::fs::write(&path, text).map_err(Error::io("writing", path))
}

/// Fails with the log's tail when `name` is not running.
pub fn check_alive(layout: &Layout, name: &'static str) -> Result<()> {
    match running(layout, name) {
        Some(_) => Ok(()),
        None => Err(Error::Exited { component: name, log: layout.log(name), tail: log_tail(&layout.log(name), 15) }),
    }
}

/// The last `lines` lines of a log file.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Stops `name` by PID: SIGTERM, then SIGKILL after `grace`. Removes its PID file.
pub fn stop(layout: &Layout, name: &str, grace: Duration) -> bool {
    let stopped = match running(layout, name) {
        Some(pid) => {
            terminate(pid, grace);
            true
        }
        None => false,
    };
    let _ = std::fs::remove_file(layout.pid(name));
    let _ = std::fs::remove_file(layout.pid(name).with_extension("exe"));
    stopped
}

/// SIGTERM, wait up to `grace`, then SIGKILL; waits until the process is gone.
pub fn terminate(pid: i32, grace: Duration) {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else { return };
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    let deadline = Instant::now() + grace;
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if alive(pid) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn alive(pid: rustix::process::Pid) -> bool {
    rustix::process::test_kill_process(pid).is_ok() && !is_zombie(pid.as_raw_nonzero().get())
}

/// Runs a command to completion; a non-zero exit is an error carrying its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String> {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| Error::Spawn { command: program.to_string(), source })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(Error::Command {
            command: format!("{program} {}", args.join(" ")),
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

/// Opens (creating) the lock file and takes an exclusive lock without waiting.
pub fn lock(path: &Path, operation: &str) -> Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(Error::io("opening the lock file", path))?;
    match file.try_lock() {
        Ok(()) => {
            use std::io::Write;
            let mut f = &file;
            let _ = f.set_len(0).and_then(|()| writeln!(f, "{operation} (pid {})", std::process::id()));
            Ok(file)
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(path).unwrap_or_default();
            Err(Error::Busy(holder.trim().to_string()))
        }
        Err(std::fs::TryLockError::Error(source)) => {
            Err(Error::Io { what: "locking the state directory", path: path.to_path_buf(), source })
        }
    }
}
