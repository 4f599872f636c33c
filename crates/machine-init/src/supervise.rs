//! One unit's supervisor (`machine-init supervise <unit>`): runs its `ExecStart=` commands with
//! its environment, restarts them as `Restart=` says, and stops them on SIGTERM.

use crate::unit::{self, Command, Kind, Restart, Service};
use crate::units::{self, Layout};
use std::collections::BTreeMap;
use std::process::ExitStatus;
use std::time::Duration;
use tokio::signal::unix::{SignalKind, signal};

const DEFAULT_PATH: &str = "/opt/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// How long a stopped process gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(20);
/// The shortest pause between restarts, whatever `RestartSec=` says, so a crashing process
/// cannot take a machine's CPU.
const MIN_RESTART: Duration = Duration::from_secs(1);

/// The environment a unit's commands get.
pub fn environment(service: &Service) -> Result<BTreeMap<String, String>, units::Error> {
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    env.entry("PATH".into()).or_insert_with(|| DEFAULT_PATH.into());
    for (path, optional) in &service.environment_files {
        match std::fs::read_to_string(path) {
            Ok(text) => env.extend(unit::environment_file(&text)),
            Err(_) if *optional => {}
            Err(e) => return Err(units::io(format!("reading EnvironmentFile {path}"))(e)),
        }
    }
    env.extend(service.environment.clone());
    Ok(env)
}

/// Whether a process that ended with `success` is started again.
pub fn restarts(policy: Restart, success: bool) -> bool {
    match policy {
        Restart::No => false,
        Restart::Always => true,
        Restart::OnFailure => !success,
    }
}

enum Ended {
    Exited(ExitStatus),
    Stopped,
}

/// Runs the unit until it ends for good or SIGTERM arrives; the exit code is the last
/// command's (0 after a stop).
pub fn run(layout: &Layout, name: &str) -> i32 {
    let result = tokio::runtime::Builder::new_current_thread().enable_all().build().map(|rt| {
        rt.block_on(async {
            match supervise(layout, name).await {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("machine-init: {name}: {e}");
                    1
                }
            }
        })
    });
    let _ = std::fs::remove_file(layout.pid_file(name));
    result.unwrap_or_else(|e| {
        eprintln!("machine-init: {name}: cannot start a runtime: {e}");
        1
    })
}

async fn supervise(layout: &Layout, name: &str) -> Result<i32, units::Error> {
    let service = layout.load(name)?;
    let env = environment(&service)?;
    let mut term = signal(SignalKind::terminate()).map_err(units::io("installing a SIGTERM handler"))?;
    loop {
        let mut last = 0;
        for command in &service.exec_start {
            match run_one(name, command, &env, &mut term).await? {
                Ended::Stopped => return Ok(0),
                Ended::Exited(status) if !status.success() && !command.ignore_failure => {
                    last = status.code().unwrap_or(1);
                    eprintln!("machine-init: {name}: {} ended: {status}", command.words[0]);
                    break;
                }
                Ended::Exited(_) => {}
            }
        }
        if service.kind == Kind::Oneshot || !restarts(service.restart, last == 0) {
            return Ok(last);
        }
        let pause = service.restart_sec.max(MIN_RESTART);
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = term.recv() => return Ok(0),
        }
        eprintln!("machine-init: restarting {name}");
    }
}

async fn run_one(
    name: &str,
    command: &Command,
    env: &BTreeMap<String, String>,
    term: &mut tokio::signal::unix::Signal,
) -> Result<Ended, units::Error> {
    let words = unit::expand(&command.words, env);
    let (program, args) = words.split_first().unwrap_or((&command.words[0], &[]));
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env_clear()
        .envs(env)
        .spawn()
        .map_err(units::io(format!("{name}: starting {program}")))?;
    tokio::select! {
        status = child.wait() => Ok(Ended::Exited(status.map_err(units::io(format!("{name}: waiting for {program}")))?)),
        _ = term.recv() => {
            if let Some(pid) = child.id().and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            if tokio::time::timeout(STOP_GRACE, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
            Ok(Ended::Stopped)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_policies() {
        assert!(!restarts(Restart::No, false));
        assert!(restarts(Restart::Always, true));
        assert!(restarts(Restart::OnFailure, false));
        assert!(!restarts(Restart::OnFailure, true));
    }
}
