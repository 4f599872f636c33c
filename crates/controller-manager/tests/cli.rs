//! The binary's command line: `--help`, and errors for people naming the file and the field for
//! a missing or invalid configuration file.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::process::{Command, Output};

fn controller_manager(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gardener-controller-manager")).args(args).output().expect("the binary runs")
}

#[test]
fn help_lists_the_shared_flags() {
    let out = controller_manager(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in
        ["--config", "--kubeconfig", "--metrics-bind-address", "--log-level", "--log-format", "--leader-election"]
    {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
}

#[test]
fn configuration_errors_name_the_file_and_the_field() {
    let out = controller_manager(&["--config", "/nonexistent/cm.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/cm.yaml") && err.contains("caused by: No such file"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    for (yaml, field) in [
        (
            "controllers:\n  seedLifecycle:\n    gardenletGracePeriodSeconds: 0\n",
            "controllers.seedLifecycle.gardenletGracePeriodSeconds",
        ),
        ("controllers:\n  bastion:\n    maxLifetime: 10\n", "maxLifetime"),
    ] {
        let path = dir.path().join("cm.yaml");
        std::fs::write(&path, yaml).unwrap();
        let out = controller_manager(&["--config", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{yaml}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(path.to_str().unwrap()) && err.contains(field), "{yaml}: {err}");
        assert!(!err.contains("Invalid {"), "no Debug output: {err}");
    }
}
