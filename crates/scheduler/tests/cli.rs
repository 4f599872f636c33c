//! The scheduler binary's command line: `--help`, and errors for people for a missing or
//! invalid configuration file.

use testenv::cli;

const BIN: &str = env!("CARGO_BIN_EXE_gardener-scheduler");

#[test]
fn help_lists_the_shared_flags() {
    cli::assert_help_lists(BIN, &[]);
}

#[test]
fn configuration_errors_name_the_file_and_cause() {
    cli::assert_missing_config_is_named(BIN);
    cli::config_error(BIN, "concurrentSyncs: 0\n", "concurrentSyncs");
}
