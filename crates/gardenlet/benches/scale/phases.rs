//! The measured phases: creation, the quiet windows, the restart with a short resync. Each
//! records its time span (to attribute the audit log's requests), the CPU time of the
//! processes that matter, the gardenlets' peak memory and the relays' connections.

use super::setup::{Bench, seed_name};
use super::{Settings, log_tail, mib};
use crate::garden::{shoot, succeeded};
use crate::proc::{cpu_seconds, rss_kib};
use api::common::LastOperationState;
use api::core::Shoot;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// CPU seconds of the processes that matter, at one moment.
#[derive(Clone, Debug, Default)]
pub struct Cpu {
    pub gardenlets: Vec<f64>,
    pub apiserver: f64,
    pub etcd: f64,
    pub kcm: f64,
    pub bench: f64,
    pub standin: f64,
}

impl Cpu {
    fn now(bench: &Bench) -> Self {
        let pids = bench.garden.pids();
        Self {
            gardenlets: bench.gardenlets.iter().map(|g| cpu_seconds(g.pid())).collect(),
            etcd: cpu_seconds(pids[0]),
            apiserver: cpu_seconds(pids[1]),
            kcm: pids.get(2).map(|p| cpu_seconds(*p)).unwrap_or_default(),
            bench: cpu_seconds(std::process::id()),
            standin: bench.standin.pids().iter().map(|p| cpu_seconds(*p)).sum(),
        }
    }

    fn since(&self, earlier: &Cpu) -> Cpu {
        Cpu {
            gardenlets: self.gardenlets.iter().zip(&earlier.gardenlets).map(|(a, b)| a - b).collect(),
            apiserver: self.apiserver - earlier.apiserver,
            etcd: self.etcd - earlier.etcd,
            kcm: self.kcm - earlier.kcm,
            bench: self.bench - earlier.bench,
            standin: self.standin - earlier.standin,
        }
    }
}

pub struct Phase {
    pub name: &'static str,
    pub start: Timestamp,
    pub end: Timestamp,
    pub seconds: f64,
    pub cpu: Cpu,
    pub peak_rss: Vec<u64>,
    pub relay_connections: u64,
}

/// What a phase counts from: its start.
struct Meter {
    start: Timestamp,
    cpu: Cpu,
    connections: u64,
}

impl Meter {
    fn start(bench: &Bench) -> Self {
        let start = Timestamp::now();
        Self { start, cpu: Cpu::now(bench), connections: bench.simulator.upstream.connections() }
    }

    /// The phase from its start until now, `seconds` long.
    fn finish(self, name: &'static str, seconds: f64, bench: &Bench) -> Phase {
        Phase {
            name,
            start: self.start,
            end: Timestamp::now(),
            seconds,
            cpu: Cpu::now(bench).since(&self.cpu),
            peak_rss: bench.sampler.take(),
            relay_connections: bench.simulator.upstream.connections() - self.connections,
        }
    }
}

/// A phase that only waits `seconds`.
pub async fn window(name: &'static str, seconds: u64, bench: &Bench) -> Phase {
    let meter = Meter::start(bench);
    bench.sampler.take();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    meter.finish(name, seconds as f64, bench)
}

/// The creation phase and when its shoots were done.
pub struct Creation {
    pub phase: Phase,
    /// Until every Shoot was created.
    pub created_after: Duration,
    /// Until every shoot was `Succeeded`.
    pub creation: Duration,
    /// When each shoot was done, in seconds from the start, sorted.
    pub finish: Vec<f64>,
}

/// Phase 1: every shoot created (`CREATE_CONCURRENCY` at a time), until every one is
/// `Succeeded`.
pub async fn creation(bench: &Bench, s: &Settings) -> Creation {
    let meter = Meter::start(bench);
    let t0 = Instant::now();
    let names: Vec<(String, String)> =
        (0..s.seeds).flat_map(|i| (0..s.per_seed).map(move |n| (seed_name(i), format!("s{}-{n}", i + 1)))).collect();
    futures::stream::iter(names)
        .map(|(seed, name)| {
            let shoots = bench.shoots.clone();
            async move {
                shoots.create(&PostParams::default(), &shoot(&name, &seed)).await.unwrap();
            }
        })
        .buffer_unordered(s.concurrency)
        .count()
        .await;
    let created_after = t0.elapsed();
    let done_at = wait_succeeded(bench, s, t0).await;
    let creation = t0.elapsed();
    let phase = meter.finish("creation", creation.as_secs_f64(), bench);
    let mut finish: Vec<f64> = done_at.values().map(Duration::as_secs_f64).collect();
    finish.sort_by(f64::total_cmp);
    Creation { phase, created_after, creation, finish }
}

/// Polls until every shoot is `Succeeded` (when each was first seen so, from `t0`), reporting
/// progress every 30 s; panics after `TIMEOUT_MINUTES`.
async fn wait_succeeded(bench: &Bench, s: &Settings, t0: Instant) -> BTreeMap<String, Duration> {
    let total = s.total();
    let mut done_at: BTreeMap<String, Duration> = BTreeMap::new();
    let mut last_report = Instant::now();
    loop {
        let list = bench.shoots.list(&Default::default()).await.unwrap();
        let (errors, example) = tally(&list.items, t0, &mut done_at);
        if done_at.len() >= total {
            return done_at;
        }
        if last_report.elapsed() > Duration::from_secs(30) {
            last_report = Instant::now();
            eprintln!(
                "  t={:>5.0} s: {}/{total} Succeeded, {errors} with an error, gardenlet RSS {:?} MiB",
                t0.elapsed().as_secs_f64(),
                done_at.len(),
                bench.gardenlets.iter().map(|g| mib(rss_kib(g.pid())).round()).collect::<Vec<_>>()
            );
            if !example.is_empty() {
                eprintln!("    e.g. {example}");
            }
        }
        assert!(
            t0.elapsed() < s.timeout,
            "{}/{total} shoots Succeeded ({errors} with an error, e.g. {example}) after {:?}; gardenlet log tail:\n{}",
            done_at.len(),
            s.timeout,
            log_tail(&bench.work.path().join("gardenlet-local.log"))
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Records the shoots newly `Succeeded` in `done_at`; how many have an error, and one of them.
fn tally(shoots: &[Shoot], t0: Instant, done_at: &mut BTreeMap<String, Duration>) -> (usize, String) {
    let mut errors = 0;
    let mut example = String::new();
    for s in shoots {
        let last = s.status.as_ref().and_then(|st| st.last_operation.as_ref());
        if succeeded(s) {
            done_at.entry(s.name_any()).or_insert_with(|| t0.elapsed());
        } else if let Some(l) =
            last.filter(|l| matches!(l.state, LastOperationState::Error | LastOperationState::Failed))
        {
            errors += 1;
            example = format!("{}: {}", s.name_any(), l.description.chars().take(300).collect::<String>());
        }
    }
    (errors, example)
}

/// The conditions the care controller changed since `since`, counted by what they say now
/// (type, status, reason, the start of the message): in a quiet window there should be none.
pub async fn condition_changes(shoots: &Api<Shoot>, since: Timestamp) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let Ok(list) = shoots.list(&Default::default()).await else { return out };
    for shoot in &list.items {
        for c in shoot.status.iter().flat_map(|s| s.conditions.iter()) {
            if c.last_update_time.0 >= since {
                let message: String = c.message.chars().take(100).collect();
                let key = format!("{} {:?} {}: {message}", c.type_, c.status, c.reason);
                *out.entry(key).or_default() += 1;
            }
        }
    }
    out
}

/// Phase 4: every gardenlet restarted with the short resync; until one resync pass is done.
/// Returns the phase and how many shoots have a newer last operation.
pub async fn restart(bench: &mut Bench, s: &Settings) -> (Phase, usize) {
    let (meter, t_restart) = (Meter::start(bench), Instant::now());
    for g in &mut bench.gardenlets {
        g.restart(s.resync, s.care);
    }
    bench.sampler.watch(&bench.gardenlets);
    let mut resynced = 0;
    // A resync of an unchanged shoot need not write its last operation: wait until every
    // shoot's was updated, or RESTART_SECONDS (every shoot is due at once, so one resync pass).
    while t_restart.elapsed() < s.restart_limit {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let list = bench.shoots.list(&Default::default()).await.unwrap();
        resynced = list.items.iter().filter(|shoot| succeeded(shoot) && updated_since(shoot, meter.start)).count();
        if resynced >= s.total() {
            break;
        }
    }
    let seconds = t_restart.elapsed().as_secs_f64();
    let mut phase = meter.finish("restart", seconds, bench);
    // The new processes started from 0.
    phase.cpu.gardenlets = bench.gardenlets.iter().map(|g| cpu_seconds(g.pid())).collect();
    eprintln!(
        "  restart: {resynced}/{} shoots with a newer last operation after {seconds:.0} s; window B ({} s)",
        s.total(),
        s.steady
    );
    (phase, resynced)
}

fn updated_since(shoot: &Shoot, since: Timestamp) -> bool {
    shoot.status.as_ref().and_then(|st| st.last_operation.as_ref()).is_some_and(|l| l.last_update_time.0 >= since)
}
