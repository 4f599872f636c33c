//! The gardenlet binary as an operator runs it: `--help`, and the errors for a missing or
//! invalid configuration file, printed for people (message and causes, no `Debug` dump), with
//! a non-zero exit code.

use testenv::cli;

const BIN: &str = env!("CARGO_BIN_EXE_gardenlet");

#[test]
fn help_lists_the_shared_flags() {
    cli::assert_help_lists(BIN, &[]);
}

#[test]
fn a_missing_configuration_file_is_named_with_its_cause() {
    cli::assert_missing_config_is_named(BIN);
}

#[test]
fn an_invalid_field_is_named_with_the_file() {
    let config = "seed:\n  name: local\n  capacityShoots: -1\n  spec:\n    provider: {type: local, region: local}\n    networks: {pods: 10.1.0.0/16, services: 10.2.0.0/16}\n";
    cli::config_error(BIN, config, "seed.capacityShoots");
}

#[test]
fn a_parse_error_names_the_file_and_the_field() {
    cli::config_error(BIN, "seed:\n  name: local\n  spec: {}\n", "seed.spec: missing field `networks`");
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    let out = cli::run(BIN, &["--config", "x", "--metrics-addr", "127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--metrics-addr"));
}
