//! What the bench prints at the end: CPU and memory per phase, the garden API requests during
//! creation, in the steady state and after the restart, and the gardenlets' cache metrics.

use super::audit::{Counts, by_verb, fmt_top, is_gardenlet, rate_row, reads_writes, top, verb_header, verb_row};
use super::mib;
use super::phases::Phase;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Per-seed objects: gardenlet's own heartbeat, not per shoot.
const PER_SEED: [&str; 3] = ["leases", "seeds", "seeds/status"];

pub struct Report {
    pub seeds: usize,
    pub per_seed: usize,
    pub total: usize,
    pub care: u64,
    pub resync: u64,
    pub created_after: Duration,
    pub creation: Duration,
    pub finish: Vec<f64>,
    pub restart_resynced: usize,
    pub rss_after_start: Vec<u64>,
    pub rss_end: Vec<u64>,
    pub phases: Vec<Phase>,
    pub counts: Counts,
    pub cache_metrics: Vec<(String, Vec<String>)>,
    /// Conditions changed since the start of window A (see [`super::phases::condition_changes`]).
    pub care_changes: BTreeMap<String, usize>,
}

fn any(_: &str) -> bool {
    true
}

fn per_shoot(resource: &str) -> bool {
    !PER_SEED.contains(&resource)
}

fn per_seed(resource: &str) -> bool {
    PER_SEED.contains(&resource)
}

fn bench_user(user: &str) -> bool {
    user == "bench"
}

fn anyone_else(user: &str) -> bool {
    !is_gardenlet(user) && user != "bench"
}

fn mib_list(kib: &[u64]) -> String {
    kib.iter().map(|k| format!("{:.1}", mib(*k))).collect::<Vec<_>>().join(" ")
}

impl Report {
    pub fn print(&self) {
        self.creation_times();
        self.resources();
        self.creation_requests();
        self.steady_state();
        self.restart();
        self.per_gardenlet();
    }

    fn phase(&self, name: &str) -> usize {
        self.phases.iter().position(|p| p.name == name).unwrap()
    }

    fn creation_times(&self) {
        let quantile = |q: f64| self.finish[((self.finish.len() as f64 - 1.0) * q).round() as usize];
        println!();
        println!("== {} seed(s) x {} shoots = {} shoots ==", self.seeds, self.per_seed, self.total);
        println!(
            "creation: all created after {:.1} s; all Succeeded after {:.1} s (shoots done: p50 {:.0} s, p90 {:.0} s, max {:.0} s)",
            self.created_after.as_secs_f64(),
            self.creation.as_secs_f64(),
            quantile(0.5),
            quantile(0.9),
            quantile(1.0)
        );
    }

    fn resources(&self) {
        println!();
        println!("CPU seconds and gardenlet peak RSS per phase:");
        println!(
            "  {:<9} {:>7} {:>10} {:>10} {:>8} {:>8} {:>8} {:>9} {:>8}  {:<}",
            "phase",
            "secs",
            "gardenlet",
            "apiserver",
            "etcd",
            "kcm",
            "bench",
            "shoot-API",
            "g.share",
            "peak RSS MiB per gardenlet"
        );
        for p in &self.phases {
            let g: f64 = p.cpu.gardenlets.iter().sum();
            let share = 100.0 * g / (g + p.cpu.apiserver + p.cpu.etcd).max(1e-9);
            println!(
                "  {:<9} {:>7.1} {:>10.1} {:>10.1} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>7.0}%  {}",
                p.name,
                p.seconds,
                g,
                p.cpu.apiserver,
                p.cpu.etcd,
                p.cpu.kcm,
                p.cpu.bench,
                p.cpu.standin,
                share,
                mib_list(&p.peak_rss)
            );
        }
        println!(
            "  (g.share: gardenlet / (gardenlet + garden kube-apiserver + etcd); bench = actuators, simulator, relays, polling; shoot-API = the shared stand-in; restart: gardenlet CPU of the new processes)"
        );
        println!(
            "  gardenlet RSS: {} MiB 5 s after start (no shoots), {} MiB at the end",
            mib_list(&self.rss_after_start),
            mib_list(&self.rss_end)
        );
        println!(
            "  TLS connections to shoot APIs (relay): {}",
            self.phases.iter().map(|p| format!("{} {}", p.name, p.relay_connections)).collect::<Vec<_>>().join(", ")
        );
    }

    fn creation_requests(&self) {
        let (c, n, counts) = (self.phase("creation"), self.total as f64, &self.counts);
        println!();
        println!("garden API requests during creation, per shoot (audit log, all gardenlets):");
        println!("{}", verb_header());
        println!("{}", verb_row("gardenlet", &by_verb(counts, c, is_gardenlet, any), n));
        println!("{}", verb_row("  of which per-seed (leases, seeds)", &by_verb(counts, c, is_gardenlet, per_seed), n));
        println!("{}", verb_row("bench (actuators, simulator, polling)", &by_verb(counts, c, bench_user, any), n));
        println!("{}", verb_row("everyone else (KCM, apiserver)", &by_verb(counts, c, anyone_else, any), n));
        println!("  gardenlet's top requests (total): {}", fmt_top(&top(counts, c, true, 12)));
    }

    fn steady_state(&self) {
        let (n, counts) = (self.total as f64, &self.counts);
        let (a, b) = (self.phase("window A"), self.phase("window B"));
        let (wa, wb) = (self.phases[a].seconds, self.phases[b].seconds);
        let cycles_a = wa / self.care as f64;
        let resyncs_b = wb / self.resync as f64;
        println!();
        println!(
            "steady state (requests by gardenlets in the window, per shoot-related resources; leases/seeds apart):"
        );
        println!("{}", verb_header());
        let va = by_verb(counts, a, is_gardenlet, per_shoot);
        let vb = by_verb(counts, b, is_gardenlet, per_shoot);
        println!("{}", verb_row(&format!("A: per shoot per care cycle ({cycles_a:.1})"), &va, n * cycles_a));
        println!("{}", verb_row("A: per shoot per hour", &va, n * wa / 3600.0));
        println!("{}", verb_row("B: per shoot per hour", &vb, n * wb / 3600.0));
        let resync_part: Vec<f64> =
            va.iter().zip(&vb).map(|(x, y)| (*y as f64 - *x as f64 * wb / wa) / (n * resyncs_b)).collect();
        let care_part: Vec<f64> = va.iter().map(|x| *x as f64 / (n * cycles_a)).collect();
        println!("{}", rate_row(&format!("B-A: per shoot per resync ({resyncs_b:.1})"), &resync_part));
        let hour: Vec<f64> = care_part.iter().zip(&resync_part).map(|(c, s)| 60.0 * c + s).collect();
        println!("{}", rate_row("default settings: per shoot per hour", &hour));
        for (name, i, w) in [("A", a, wa), ("B", b, wb)] {
            let label = format!("{name}: per seed per hour (leases, seeds)");
            println!(
                "{}",
                verb_row(&label, &by_verb(counts, i, is_gardenlet, per_seed), self.seeds as f64 * w / 3600.0)
            );
        }
        let hours_a = n * wa / 3600.0;
        println!("{}", verb_row("A: bench, per shoot per hour", &by_verb(counts, a, bench_user, any), hours_a));
        println!("{}", verb_row("A: KCM etc., per shoot per hour", &by_verb(counts, a, anyone_else, any), hours_a));
        println!("  window A, gardenlet's top requests (total): {}", fmt_top(&top(counts, a, true, 10)));
        println!("  window B, gardenlet's top requests (total): {}", fmt_top(&top(counts, b, true, 10)));
        let changed: usize = self.care_changes.values().sum();
        println!("  conditions changed in window A (read after it): {changed}");
        for (what, n) in &self.care_changes {
            println!("    {n:>4} x {what}");
        }
    }

    fn restart(&self) {
        let (rs, n) = (self.phase("restart"), self.total as f64);
        let (reads, writes) = reads_writes(&by_verb(&self.counts, rs, is_gardenlet, any));
        println!(
            "  restart ({:.0} s, {}/{} shoots with a last operation newer than the restart): gardenlet per shoot {:.1} reads, {:.1} writes",
            self.phases[rs].seconds,
            self.restart_resynced,
            self.total,
            reads as f64 / n,
            writes as f64 / n
        );
        println!("  restart, gardenlet's top requests (total): {}", fmt_top(&top(&self.counts, rs, true, 10)));
    }

    fn per_gardenlet(&self) {
        let users: BTreeSet<&String> = self.counts.keys().map(|(_, u, _, _)| u).filter(|u| is_gardenlet(u)).collect();
        let sums = users.iter().map(|u| {
            let sum: u64 = self.counts.iter().filter(|((_, x, _, _), _)| x == *u).map(|(_, c)| c).sum();
            format!("{u} {sum}")
        });
        println!();
        println!("requests per gardenlet (all phases): {}", sums.collect::<Vec<_>>().join(", "));
        println!("cache metrics per gardenlet (/metrics lines naming `cache`):");
        for (seed, lines) in &self.cache_metrics {
            if lines.is_empty() {
                println!("  {seed}: n/a");
            }
            for l in lines {
                println!("  {seed}: {l}");
            }
        }
    }
}
