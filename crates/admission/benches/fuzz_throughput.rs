//! A million random and mutated objects through decoding, defaulting and validation (every
//! input as a create and as an update, through each endpoint that serves its resource),
//! checking the property of `admission::fuzz::check` on each; prints the throughput.
//!
//! `cargo bench -p admission --bench fuzz_throughput [-- <inputs>]`
//!
//! Under `cargo test`/`nextest` (no `--bench` argument) it is one smoke test of 10,000 inputs;
//! asked for its tests (`--list`) it names that one.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code: a panic is the failure report

#[path = "common/args.rs"]
#[allow(dead_code)] // `value` is for the latency bench's options
mod args;

#[path = "../tests/support/fuzz_admission.rs"]
mod fuzz_admission;

use admission::fuzz::{check, corpus, mutate};
use std::time::Instant;

fn main() {
    let Some(args) = args::Args::parse() else { return };
    let inputs: u64 = args.size(&[], 1_000_000, 10_000);
    let adm = fuzz_admission::admission();
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
