//! The scheduler binary's command line: `--help`, and errors for people for a missing or
//! invalid configuration file.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::process::{Command, Output};

fn scheduler(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gardener-scheduler")).args(args).output().expect("the scheduler runs")
}

#[test]
fn help_lists_the_shared_flags() {
    let out = scheduler(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in ["--config", "--kubeconfig", "--metrics-bind-address", "--log-level", "--log-format"] {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
}

#[test]
fn configuration_errors_name_the_file_and_cause() {
    let out = scheduler(&["--config", "/nonexistent/scheduler.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/scheduler.yaml") && err.contains("caused by: No such file"), "{err}");
    assert!(!err.contains("Os {"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scheduler.yaml");
    std::fs::write(&path, "concurrentSyncs: 0\n").unwrap();
    let out = scheduler(&["--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(path.to_str().unwrap()) && err.contains("concurrentSyncs"), "{err}");
}
