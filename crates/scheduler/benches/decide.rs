//! Benchmark of the pure scheduling decision at 1,000 seeds with 10,000 shoots already placed.
//!
//! `cargo bench -p scheduler` prints median, p90 and p99 per decision for three scenarios:
//! every seed passing every filter (the most work per seed), a mixed fleet under
//! `MinimalDistance`, and a full fleet that ends in a refusal (the grouping of reasons).
//!
//! Under `cargo test` / `cargo nextest` (no `--bench` argument) it runs each scenario a few
//! times as a smoke test and checks the outcomes, so the benchmark cannot silently rot.

use api::core::{CloudProfile, Seed, SeedSelector, Shoot, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use scheduler::decide::fixtures;
use scheduler::{Config, decide};
use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::time::{Duration, Instant};

const SEEDS: usize = 1_000;
const PLACED_SHOOTS: usize = 10_000;
const REGIONS: [&str; 8] =
    ["eu-west-1", "eu-west-2", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1", "ap-east-1", "sa-east-1"];

fn seed(i: usize, region: &str, allocatable: u32, tainted: bool) -> Seed {
    let mut s = fixtures::seed(&format!("seed-{i:04}"));
    s = fixtures::labelled(s, &[("env", "prod"), ("seed.gardener.cloud/provider", "aws")]);
    s = fixtures::in_region(fixtures::of_type(s, "aws"), region);
    // Every seed its own node network, so no two seeds look alike to the network check.
    s.spec.networks.nodes = Some(format!("172.{}.{}.0/24", 16 + i / 256, i % 256));
    if tainted {
        s = fixtures::tainted(s, "dedicated", Some("team-a"));
    }
    fixtures::allocatable(s, &allocatable.to_string())
}

/// The decision's `local` shoot, on `aws`, tolerating `dedicated` and selecting `env=prod` seeds.
fn shoot() -> Shoot {
    let mut s = fixtures::shoot("bench");
    s.spec.cloud_profile_name = Some("aws".into());
    s.spec.provider.type_ = "aws".into();
    s.spec.tolerations = vec![Toleration { key: "dedicated".into(), value: None }];
    s.spec.seed_selector = Some(SeedSelector {
        label_selector: LabelSelector {
            match_labels: Some(BTreeMap::from([("env".to_string(), "prod".to_string())])),
            ..Default::default()
        },
        provider_types: vec![],
    });
    s
}

fn profile() -> CloudProfile {
    let mut p = CloudProfile::new("aws", Default::default());
    p.spec.type_ = "aws".into();
    p.spec.seed_selector = Some(SeedSelector {
        label_selector: LabelSelector {
            match_labels: Some(BTreeMap::from([("seed.gardener.cloud/provider".to_string(), "aws".to_string())])),
            ..Default::default()
        },
        provider_types: vec!["aws".into()],
    });
    p
}

/// 10,000 shoots spread at random over the seeds, as the controller's per-seed counts.
fn counts(seeds: &[Seed], rng: &mut fastrand::Rng) -> HashMap<String, u32> {
    let mut counts = HashMap::new();
    for _ in 0..PLACED_SHOOTS {
        let s = &seeds[rng.usize(..seeds.len())];
        *counts.entry(s.metadata.name.clone().unwrap_or_default()).or_insert(0) += 1;
    }
    counts
}

struct Scenario {
    name: &'static str,
    seeds: Vec<Seed>,
    counts: HashMap<String, u32>,
    config: Config,
    expect_seed: bool,
}

fn scenarios() -> Vec<Scenario> {
    let mut rng = fastrand::Rng::with_seed(42);
    // Every seed in the shoot's region, tainted but tolerated, roomy: all filters run on all seeds.
    let all_pass: Vec<Seed> = (0..SEEDS).map(|i| seed(i, "eu-west-1", 100, i % 3 == 0)).collect();
    let all_pass_counts = counts(&all_pass, &mut rng);
    // Seeds spread over regions; the shoot's region is full, so the nearest other region wins.
    let mixed: Vec<Seed> = (0..SEEDS)
        .map(|i| seed(i, REGIONS[i % REGIONS.len()], if i % REGIONS.len() == 0 { 0 } else { 50 }, false))
        .collect();
    let mixed_counts = counts(&mixed, &mut rng);
    // Every seed full: a refusal that accounts for all 1,000 seeds.
    let full: Vec<Seed> = (0..SEEDS).map(|i| seed(i, REGIONS[i % 2], 10, i % 5 == 0)).collect();
    let full_counts: HashMap<String, u32> =
        full.iter().map(|s| (s.metadata.name.clone().unwrap_or_default(), 10)).collect();
    let minimal = Config::from_yaml(
        "strategy: MinimalDistance\nregionDistances: {eu-west-1: {eu-central-1: 10, eu-west-2: 5, us-east-1: 80}}",
    )
    .unwrap_or_default();
    vec![
        Scenario {
            name: "SameRegion, all 1000 seeds pass every filter",
            seeds: all_pass,
            counts: all_pass_counts,
            config: Config::default(),
            expect_seed: true,
        },
        Scenario {
            name: "MinimalDistance, 8 regions, home region full",
            seeds: mixed,
            counts: mixed_counts,
            config: minimal,
            expect_seed: true,
        },
        Scenario {
            name: "SameRegion, every seed full (refusal)",
            seeds: full,
            counts: full_counts,
            config: Config::default(),
            expect_seed: false,
        },
    ]
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn run(scenario: &Scenario, shoot: &Shoot, profile: &CloudProfile, warmup: usize, runs: usize) -> Vec<Duration> {
    for _ in 0..warmup {
        black_box(
            decide(black_box(shoot), &scenario.seeds, &scenario.counts, &profile.spec, None, &scenario.config).ok(),
        );
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let result = decide(black_box(shoot), &scenario.seeds, &scenario.counts, &profile.spec, None, &scenario.config);
        times.push(start.elapsed());
        black_box(result.ok());
    }
    times.sort();
    times
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    // cargo-nextest asks for the list of tests first: one smoke test, no ignored ones.
    if has("--list") {
        if !has("--ignored") {
            println!("smoke: test");
        }
        return;
    }
    let bench = has("--bench");
    let (shoot, profile) = (shoot(), profile());
    for scenario in scenarios() {
        let outcome = decide(&shoot, &scenario.seeds, &scenario.counts, &profile.spec, None, &scenario.config);
        assert_eq!(outcome.is_ok(), scenario.expect_seed, "{}: unexpected outcome {outcome:?}", scenario.name);
        if !bench {
            run(&scenario, &shoot, &profile, 0, 3);
            continue;
        }
        let times = run(&scenario, &shoot, &profile, 200, 2_000);
        println!(
            "{:<50} median {:>8.1} µs   p90 {:>8.1} µs   p99 {:>8.1} µs   ({} runs; {})",
            scenario.name,
            percentile(&times, 0.5).as_secs_f64() * 1e6,
            percentile(&times, 0.9).as_secs_f64() * 1e6,
            percentile(&times, 0.99).as_secs_f64() * 1e6,
            times.len(),
            match &outcome {
                Ok(seed) => format!("-> {seed}"),
                Err(refusal) => refusal.to_string(),
            }
        );
    }
}
