//! The gardenlet binary as an operator runs it: `--help`, and the errors for a missing or
//! invalid configuration file, printed for people (message and causes, no `Debug` dump), with
//! a non-zero exit code.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::process::{Command, Output};

fn gardenlet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gardenlet")).args(args).output().expect("gardenlet runs")
}

#[test]
fn help_lists_the_shared_flags() {
    let out = gardenlet(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in ["--config", "--kubeconfig", "--metrics-bind-address", "--log-level", "--log-format"] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
}

#[test]
fn a_missing_configuration_file_is_named_with_its_cause() {
    let out = gardenlet(&["--config", "/nonexistent/gardenlet.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error: reading gardenlet configuration /nonexistent/gardenlet.yaml"), "{err}");
    assert!(err.contains("caused by: No such file or directory"), "{err}");
    assert!(!err.contains("Os {") && !err.contains("Read {"), "no Debug output: {err}");
}

#[test]
fn an_invalid_field_is_named_with_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gardenlet.yaml");
    let config = "seed:\n  name: local\n  capacityShoots: -1\n  spec:\n    provider: {type: local, region: local}\n    networks: {pods: 10.1.0.0/16, services: 10.2.0.0/16}\n";
    std::fs::write(&path, config).unwrap();
    let out = gardenlet(&["--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(path.to_str().unwrap()) && err.contains("seed.capacityShoots"), "{err}");
}

#[test]
fn a_parse_error_names_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gardenlet.yaml");
    std::fs::write(&path, "seed:\n  name: local\n  spec: {}\n").unwrap();
    let out = gardenlet(&["--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(path.to_str().unwrap()) && err.contains("seed.spec: missing field `networks`"), "{err}");
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    let out = gardenlet(&["--config", "x", "--metrics-addr", "127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--metrics-addr"));
}
