//! machine-init's `systemctl` and unit supervisors with real processes: units in a temporary
//! unit directory, started, restarted after a crash, stopped; oneshot units and their failures;
//! the environment a unit's command gets.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

struct Machine {
    dir: tempfile::TempDir,
    systemctl: PathBuf,
}

impl Machine {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let systemctl = dir.path().join("systemctl");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_machine-init"), &systemctl).unwrap();
        std::fs::create_dir_all(dir.path().join("units")).unwrap();
        Self { dir, systemctl }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn unit(&self, name: &str, text: &str) {
        std::fs::write(self.path("units").join(name), text).unwrap();
    }

    fn systemctl(&self, args: &[&str]) -> i32 {
        let out = Command::new(&self.systemctl)
            .args([
                "--unit-dir",
                self.path("units").to_str().unwrap(),
                "--state-dir",
                self.path("state").to_str().unwrap(),
            ])
            .args(args)
            // Not piped: a started unit's supervisor inherits these and would hold a pipe open.
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        out.code().unwrap_or(-1)
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        // A unit a failed test left running.
        let _ = self.systemctl(&["stop", "sleeper.service"]);
    }
}

fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(start.elapsed() < Duration::from_secs(15), "{what}: not within 15 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

#[test]
fn a_service_runs_is_restarted_after_a_crash_and_stops() {
    let m = Machine::new();
    let pid_file = m.path("sleeper.pid");
    m.unit(
        "sleeper.service",
        &format!(
            "[Service]\nRestart=always\nRestartSec=0\nExecStart=/bin/sh -c 'echo $$ > {} && exec sleep 300'\n",
            pid_file.display()
        ),
    );
    assert_eq!(m.systemctl(&["is-active", "sleeper"]), 3, "inactive before the start");
    assert_eq!(m.systemctl(&["enable", "--now", "sleeper.service"]), 0);
    assert!(m.path("units/multi-user.target.wants/sleeper.service").exists(), "enabled");
    let first = eventually("the service writes its PID", || read_pid(&pid_file));
    assert!(alive(first));
    assert_eq!(m.systemctl(&["is-active", "sleeper.service"]), 0);
    assert_eq!(m.systemctl(&["start", "sleeper.service"]), 0, "starting a running unit is a no-op");
    assert_eq!(read_pid(&pid_file), Some(first));

    Command::new("kill").args(["-9", &first.to_string()]).status().unwrap();
    let second = eventually("the crashed service is started again", || read_pid(&pid_file).filter(|p| *p != first));
    assert!(alive(second));

    assert_eq!(m.systemctl(&["stop", "sleeper.service"]), 0);
    eventually("the service's process is gone", || (!alive(second)).then_some(()));
    assert_eq!(m.systemctl(&["is-active", "sleeper.service"]), 3, "inactive after the stop");
}

#[test]
fn oneshot_units_are_waited_for_and_report_their_failure() {
    let m = Machine::new();
    let out = m.path("out");
    m.unit(
        "apply.service",
        &format!(
            "[Service]\nType=oneshot\nEnvironmentFile={}\nEnvironmentFile=-/does/not/exist\nEnvironment=B=two\nExecStart=/bin/sh -c 'echo \"$A ${{B}}\" > {}'\nExecStart=-/bin/false\n",
            m.path("env").display(),
            out.display()
        ),
    );
    std::fs::write(m.path("env"), "# the machine's settings\nA=one\n").unwrap();
    assert_eq!(m.systemctl(&["start", "apply.service"]), 0, "a failing command with `-` does not fail the unit");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "one two\n", "written before start returned");

    m.unit("broken.service", "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'exit 7'\n");
    assert_eq!(m.systemctl(&["start", "broken.service"]), 7, "the unit's exit code");

    m.unit("missing-env.service", "[Service]\nType=oneshot\nEnvironmentFile=/does/not/exist\nExecStart=/bin/true\n");
    assert_ne!(m.systemctl(&["start", "missing-env.service"]), 0, "a required EnvironmentFile is missing");

    m.unit("bad.service", "[Service]\nExecStart=/bin/true 'unbalanced\n");
    assert_ne!(m.systemctl(&["start", "bad.service"]), 0, "a broken unit is refused");
    assert_eq!(m.systemctl(&["start", "nothing.service"]), 1, "a missing unit is refused");
    assert_eq!(m.systemctl(&["frobnicate", "x"]), 2, "an unknown command");
    assert_eq!(m.systemctl(&["daemon-reload"]), 0);
}
