//! The gardenlet processes, one per seed, and the sampler of their peak memory.

use super::env_or;
use crate::garden::{gardenlet_config, spawn_gardenlet};
use crate::proc::rss_kib;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Gardenlet {
    pub seed: String,
    index: usize,
    port: u16,
    kubeconfig: PathBuf,
    dir: PathBuf,
    child: std::process::Child,
}

impl Gardenlet {
    /// The `index`-th seed's gardenlet, with `shootSyncPeriodSeconds` `resync` and
    /// `shootCarePeriodSeconds` `care`.
    pub fn start(seed: &str, index: usize, kubeconfig: &Path, dir: &Path, resync: u64, care: u64) -> Self {
        let port = testenv::free_port(Ipv4Addr::LOCALHOST.into()).unwrap();
        let (kubeconfig, dir) = (kubeconfig.to_path_buf(), dir.to_path_buf());
        let child = spawn(seed, index, &kubeconfig, &dir, port, (resync, care, env_or("SYNCS", 50)));
        Self { seed: seed.to_string(), index, port, kubeconfig, dir, child }
    }

    /// Stops the process and starts it again with other periods.
    pub fn restart(&mut self, resync: u64, care: u64) {
        self.stop();
        let syncs = env_or("RESTART_SYNCS", env_or("SYNCS", 50));
        self.child = spawn(&self.seed, self.index, &self.kubeconfig, &self.dir, self.port, (resync, care, syncs));
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The `/metrics` text (plain HTTP/1.0 on loopback).
    pub async fn metrics(&self) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let Ok(mut s) = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).await else {
            return String::new();
        };
        let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").await;
        let mut out = String::new();
        let _ = s.read_to_string(&mut out).await;
        out
    }

    /// The `/metrics` lines about caches.
    pub async fn cache_metrics(&self) -> Vec<String> {
        self.metrics()
            .await
            .lines()
            .filter(|l| !l.starts_with('#') && l.split(['{', ' ']).next().is_some_and(|n| n.contains("cache")))
            .map(str::to_string)
            .collect()
    }
}

/// Also when the bench panics: no gardenlet outlives it.
impl Drop for Gardenlet {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn(
    seed: &str,
    index: usize,
    kubeconfig: &Path,
    dir: &Path,
    port: u16,
    (resync, care, syncs): (u64, u64, u64),
) -> std::process::Child {
    let care_syncs: u64 = env_or("CARE_SYNCS", 5);
    let config = dir.join(format!("gardenlet-{seed}.yaml"));
    let controllers = [
        ("shootConcurrentSyncs", syncs),
        ("shootSyncPeriodSeconds", resync),
        ("shootCarePeriodSeconds", care),
        ("shootCareConcurrentSyncs", care_syncs),
    ];
    std::fs::write(&config, gardenlet_config(kubeconfig, seed, index, 1000, &controllers)).unwrap();
    spawn_gardenlet(&config, port, &dir.join(format!("gardenlet-{seed}.log")))
}

/// Peak RSS per gardenlet, sampled every 250 ms; `take` returns and resets the peaks.
#[derive(Clone, Default)]
pub struct RssSampler {
    pids: Arc<Mutex<Vec<u32>>>,
    peaks: Arc<Mutex<Vec<u64>>>,
}

impl RssSampler {
    pub fn spawn(&self) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                let pids = this.pids.lock().unwrap().clone();
                {
                    let mut peaks = this.peaks.lock().unwrap();
                    peaks.resize(pids.len(), 0);
                    for (peak, pid) in peaks.iter_mut().zip(&pids) {
                        *peak = (*peak).max(rss_kib(*pid));
                    }
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    }

    /// Samples the processes of `gardenlets` from now on.
    pub fn watch(&self, gardenlets: &[Gardenlet]) {
        *self.pids.lock().unwrap() = gardenlets.iter().map(Gardenlet::pid).collect();
    }

    pub fn take(&self) -> Vec<u64> {
        let mut peaks = self.peaks.lock().unwrap();
        let out = peaks.clone();
        peaks.iter_mut().for_each(|p| *p = 0);
        out
    }
}
