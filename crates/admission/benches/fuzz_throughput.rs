//! A million random and mutated objects through decoding, defaulting and validation (every
//! input as a create and as an update, through each endpoint that serves its resource),
//! checking the property of `admission::fuzz::check` on each; prints the throughput.
//!
//! `cargo bench -p admission --bench fuzz_throughput [-- <inputs>]`
//!
//! Under `cargo test`/`nextest` (no `--bench` argument) it is one smoke test of 10,000 inputs;
//! asked for its tests (`--list`) it names that one.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code: a panic is the failure report

use admission::fuzz::{check, corpus, mutate};
use admission::review::{Admission, RulesConfig, StaticLookup};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--list") {
        if !has("--ignored") {
            println!("smoke: test");
        }
        return;
    }
    let default = if has("--bench") { 1_000_000 } else { 10_000 };
    let inputs: u64 = args.iter().skip(1).find_map(|a| a.parse().ok()).unwrap_or(default);
    let mut shoot = admission::fixtures::shoot();
    shoot.spec.seed_name = Some("seed-a".into());
    let lookup = StaticLookup {
        cloud_profiles: vec![Arc::new(admission::fixtures::cloud_profile())],
        shoots: vec![Arc::new(shoot)],
        controller_registrations: admission::fixtures::controller_registrations().into_iter().map(Arc::new).collect(),
        ..Default::default()
    };
    let adm = Admission::new(Arc::new(lookup), RulesConfig::default()).with_clock(admission::fixtures::now);
    let corpus = corpus();
    let start = Instant::now();
    let mut refused = 0usize;
    for i in 0..inputs {
        let (resource, base) = &corpus[(i % corpus.len() as u64) as usize];
        let input = mutate(base, i);
        match check(&adm, resource, &input, base) {
            Ok(r) => refused += usize::from(r > 0),
            Err(violation) => panic!("input {i} ({resource}): {violation}\n{input}"),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "fuzz_throughput: {inputs} inputs in {secs:.2} s = {:.0} inputs/s ({refused} refused at least once, 0 violations)",
        inputs as f64 / secs
    );
}
