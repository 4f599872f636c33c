//! A binary's command line as an operator meets it: `--help` lists the shared flags, and a
//! missing or invalid configuration file is an error printed for people (the file, the field,
//! each cause on its own line, never a `Debug` dump) with exit code 1. The process tests of the
//! binaries (`crates/*/tests/cli.rs`) share these checks; a failed check panics with the output.

use std::process::{Command, Output};

/// The flags every binary has (`runtime::cli::CommonArgs`, plus `--config`).
pub const SHARED_FLAGS: [&str; 5] =
    ["--config", "--kubeconfig", "--metrics-bind-address", "--log-level", "--log-format"];

/// Runs the binary at `path` with `args` to completion.
pub fn run(path: &str, args: &[&str]) -> Output {
    Command::new(path).args(args).output().unwrap_or_else(|e| panic!("running {path}: {e}"))
}

/// `--help` succeeds and lists [`SHARED_FLAGS`] and `extra`.
pub fn assert_help_lists(path: &str, extra: &[&str]) {
    let out = run(path, &["--help"]);
    assert!(out.status.success(), "{path} --help: {out:?}");
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in SHARED_FLAGS.iter().chain(extra) {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
}

/// What the binary prints when it fails with exit code 1; asserts it holds no `Debug` form of
/// an error.
pub fn failure(path: &str, args: &[&str]) -> String {
    let out = run(path, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{path} {args:?}: {err}");
    for debug in ["Os {", "Read {", "Parse {", "Invalid {"] {
        assert!(!err.contains(debug), "no Debug output: {err}");
    }
    err
}

/// A configuration file that does not exist is named, with the cause.
pub fn assert_missing_config_is_named(path: &str) {
    let err = failure(path, &["--config", "/nonexistent/config.yaml"]);
    assert!(err.contains("error: reading the configuration file /nonexistent/config.yaml"), "{err}");
    assert!(err.contains("caused by: No such file or directory"), "{err}");
}

/// Starts the binary with a configuration file holding `yaml`; what it prints, after
/// asserting that it names the file and `field`.
pub fn config_error(path: &str, yaml: &str, field: &str) -> String {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
    let file = dir.path().join("config.yaml");
    std::fs::write(&file, yaml).unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
    let file = file.display().to_string();
    let err = failure(path, &["--config", &file]);
    assert!(err.contains(&file) && err.contains(field), "{yaml:?}: {err} does not name the file and {field}");
    err
}
