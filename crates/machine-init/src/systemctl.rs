//! The `systemctl` a machine's user data calls: enough of systemd's command line for
//! provisioning scripts (`daemon-reload`, `enable`, `disable`, `start`, `restart`, `stop`,
//! `is-active`), backed by one supervisor process per started unit.

use crate::units::{self, Layout, alive};
use std::time::{Duration, Instant};

/// A parsed `systemctl` command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    pub verb: Verb,
    pub units: Vec<String>,
    /// `enable --now` / `disable --now`.
    pub now: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    DaemonReload,
    Enable,
    Disable,
    Start,
    Restart,
    Stop,
    IsActive,
}

/// Parses `systemctl` arguments; flags it does not need (`--no-block`, `-q`) are accepted.
pub fn parse(args: &[String]) -> Result<Invocation, String> {
    let mut now = false;
    let mut words = Vec::new();
    for a in args {
        match a.as_str() {
            "--now" => now = true,
            a if a.starts_with('-') => {}
            a => words.push(a.to_string()),
        }
    }
    let Some((verb, units)) = words.split_first() else { return Err("no command given".into()) };
    let verb = match verb.as_str() {
        "daemon-reload" => Verb::DaemonReload,
        "enable" | "reenable" => Verb::Enable,
        "disable" => Verb::Disable,
        "start" => Verb::Start,
        "restart" | "reload-or-restart" | "try-restart" => Verb::Restart,
        "stop" => Verb::Stop,
        "is-active" => Verb::IsActive,
        other => return Err(format!("unknown command {other:?}")),
    };
    if verb != Verb::DaemonReload && units.is_empty() {
        return Err(format!("{verb:?} needs a unit"));
    }
    let units = units.iter().map(|u| if u.contains('.') { u.clone() } else { format!("{u}.service") }).collect();
    Ok(Invocation { verb, units, now })
}

/// Runs an invocation; returns the exit code.
pub fn run(layout: &Layout, inv: &Invocation) -> Result<i32, units::Error> {
    let mut code = 0;
    for unit in &inv.units {
        match inv.verb {
            Verb::DaemonReload => {}
            Verb::Enable => {
                layout.enable(unit)?;
                if inv.now {
                    code = code.max(start(layout, unit)?);
                }
            }
            Verb::Disable => {
                layout.disable(unit)?;
                if inv.now {
                    stop(layout, unit);
                }
            }
            Verb::Start => code = code.max(start(layout, unit)?),
            Verb::Restart => {
                stop(layout, unit);
                code = code.max(start(layout, unit)?);
            }
            Verb::Stop => stop(layout, unit),
            Verb::IsActive => {
                let active = layout.running(unit).is_some();
                println!("{}", if active { "active" } else { "inactive" });
                code = code.max(if active { 0 } else { 3 });
            }
        }
    }
    Ok(code)
}

/// Starts a unit's supervisor unless it runs. A oneshot unit is waited for, as systemd does,
/// and its failure is the command's.
pub fn start(layout: &Layout, unit: &str) -> Result<i32, units::Error> {
    if layout.running(unit).is_some() {
        return Ok(0);
    }
    let service = layout.load(unit)?; // refuse a broken unit here, where the caller sees it
    std::fs::create_dir_all(&layout.state_dir).map_err(units::io("creating the state directory"))?;
    let exe = std::env::current_exe().map_err(units::io("finding machine-init"))?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("supervise")
        .arg(unit)
        .arg("--unit-dir")
        .arg(&layout.unit_dir)
        .arg("--state-dir")
        .arg(&layout.state_dir);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(units::io(format!("starting the supervisor of {unit}")))?;
    let pid = child.id();
    std::fs::write(layout.pid_file(unit), pid.to_string()).map_err(units::io(format!("recording {unit}")))?;
    eprintln!("machine-init: started {unit}");
    if service.kind == crate::unit::Kind::Oneshot {
        let status = child.wait().map_err(units::io(format!("waiting for {unit}")))?;
        return Ok(if status.success() { 0 } else { status.code().unwrap_or(1) });
    }
    Ok(0)
}

/// Stops a unit's supervisor (SIGTERM; it stops its process) and waits until it is gone.
pub fn stop(layout: &Layout, unit: &str) {
    let Some(pid) = layout.running(unit) else { return };
    let Some(p) = rustix::process::Pid::from_raw(pid) else { return };
    let _ = rustix::process::kill_process(p, rustix::process::Signal::TERM);
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if alive(pid) {
        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
    }
    let _ = std::fs::remove_file(layout.pid_file(unit));
    eprintln!("machine-init: stopped {unit}");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn provisioning_script_commands_parse() {
        assert_eq!(parse(&args("daemon-reload")).unwrap().verb, Verb::DaemonReload);
        let inv = parse(&args("enable --now kubelet")).unwrap();
        assert_eq!(inv, Invocation { verb: Verb::Enable, units: vec!["kubelet.service".into()], now: true });
        let inv = parse(&args("--no-block restart a.service")).unwrap();
        assert_eq!(inv.verb, Verb::Restart);
        assert!(parse(&args("start")).unwrap_err().contains("needs a unit"));
        assert!(parse(&args("mask x")).unwrap_err().contains("mask"));
        assert!(parse(&[]).is_err());
    }
}
