//! `machine-init`: PID 1 of a provider-local machine, and the `systemctl` its user data calls
//! (the same binary, linked as `systemctl`). See docs/machines.md.
//!
//! * `machine-init [--user-data PATH] [--cgroup-root DIR]`: boot, then supervise until SIGTERM.
//! * `machine-init supervise UNIT`: run one unit (started by `systemctl start`).
//! * `systemctl VERB [UNIT...]`: as systemd's, for the verbs provisioning scripts use.

mod boot;
mod supervise;
mod systemctl;
mod unit;
mod units;

use std::path::PathBuf;

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let program = args.first().map(|a| a.rsplit('/').next().unwrap_or(a).to_string()).unwrap_or_default();
    args.remove(0);
    let mut layout = units::Layout::default();
    let mut user_data = PathBuf::from("/etc/machine/userData");
    let mut cgroup_root = None;
    let mut rest = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--unit-dir" => layout.unit_dir = it.next().unwrap_or_default().into(),
            "--state-dir" => layout.state_dir = it.next().unwrap_or_default().into(),
            "--user-data" => user_data = it.next().unwrap_or_default().into(),
            "--cgroup-root" => cgroup_root = it.next(),
            "--version" => {
                println!("machine-init {}", env!("CARGO_PKG_VERSION"));
                return;
            }
            _ => rest.push(a),
        }
    }
    let code = if program == "systemctl" {
        match systemctl::parse(&rest) {
            Ok(inv) => systemctl::run(&layout, &inv).unwrap_or_else(|e| {
                eprintln!("systemctl: {e}");
                1
            }),
            Err(e) => {
                eprintln!("systemctl: {e}");
                2
            }
        }
    } else {
        match rest.first().map(String::as_str) {
            Some("supervise") => match rest.get(1) {
                Some(unit) => supervise::run(&layout, unit),
                None => {
                    eprintln!("machine-init: supervise needs a unit");
                    2
                }
            },
            None | Some("boot") => boot::run(&boot::Options { layout, user_data, cgroup_root }),
            Some(other) => {
                eprintln!("machine-init: unknown command {other:?}");
                2
            }
        }
    };
    std::process::exit(code);
}
