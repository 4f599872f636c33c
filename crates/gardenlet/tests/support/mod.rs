//! Test-only stand-ins for what this environment lacks: no kubelet runs pods, no cloud
//! provides load balancers, and no provider extension is installed.

#![allow(dead_code)]

pub mod actuators;
pub mod approver;
pub mod chart;
pub mod shoots;
pub mod simulator;
pub mod standin;

/// gardenlet's BackupEntry controller of seed `seed_name`, without a deletion grace period.
pub fn backup_entries(garden: kube::Client, seed: kube::Client, seed_name: &str) -> tokio::task::JoinHandle<()> {
    let ctx = gardenlet::backupentry::Context {
        seed_name: seed_name.to_string(),
        garden,
        seed,
        grace: std::time::Duration::ZERO,
    };
    tokio::spawn(gardenlet::backupentry::run(ctx, 2, std::future::pending(), Default::default()))
}
