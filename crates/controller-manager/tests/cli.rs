//! The binary's command line: `--help`, and errors for people naming the file and the field for
//! a missing or invalid configuration file.

use testenv::cli;

const BIN: &str = env!("CARGO_BIN_EXE_gardener-controller-manager");

#[test]
fn help_lists_the_shared_flags() {
    cli::assert_help_lists(BIN, &["--leader-election"]);
}

#[test]
fn configuration_errors_name_the_file_and_the_field() {
    cli::assert_missing_config_is_named(BIN);
    for (yaml, field) in [
        (
            "controllers:\n  seedLifecycle:\n    gardenletGracePeriodSeconds: 0\n",
            "controllers.seedLifecycle.gardenletGracePeriodSeconds",
        ),
        ("controllers:\n  bastion:\n    maxLifetime: 10\n", "maxLifetime"),
    ] {
        cli::config_error(BIN, yaml, field);
    }
}
