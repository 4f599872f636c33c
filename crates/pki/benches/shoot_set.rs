//! Time to generate a complete shoot set (5 CAs, 8 certificates, 3 kubeconfigs, the
//! service-account key and the bundles) from nothing: ECDSA P-256 versus RSA-2048.
//!
//! `cargo bench -p pki` runs it optimised and prints min, median and p90 per key type.
//! Runs per key type: `PKI_BENCH_ECDSA_RUNS` (default 200), `PKI_BENCH_RSA_RUNS` (default 21).
//! Under `cargo test`/`nextest` (no `--bench` argument) it does one ECDSA run as a smoke test,
//! and it lists no tests when asked to (`--list`).

use pki::shoot_set::{ShootInputs, shoot_set};
use pki::{KeyAlgorithm, SecretSet, manager};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant, SystemTime};

fn inputs(key: KeyAlgorithm) -> ShootInputs {
    let mut inputs = ShootInputs::new(
        "shoot--bench--set",
        "api.set.bench.internal.example.com",
        IpAddr::V4(Ipv4Addr::new(100, 64, 0, 1)),
    );
    inputs.external_domain = Some("api.set.bench.example.com".into());
    inputs.ca_key = key;
    inputs.leaf_key = key;
    inputs
}

fn one_set(key: KeyAlgorithm) -> Result<Duration, pki::Error> {
    let configs = shoot_set(&inputs(key));
    let started = Instant::now();
    let plan = manager::plan(&configs, &SecretSet::new(), SystemTime::now())?;
    let elapsed = started.elapsed();
    assert_eq!(plan.secrets.len(), 19, "a complete set has 14 secrets and 5 bundles");
    Ok(elapsed)
}

fn runs(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(default)
}

fn report(label: &str, key: KeyAlgorithm, n: usize) -> Result<Duration, pki::Error> {
    one_set(key)?; // warm-up
    let mut samples = (0..n).map(|_| one_set(key)).collect::<Result<Vec<_>, _>>()?;
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{label:<16} runs {n:>4}   min {:>9.2} ms   median {:>9.2} ms   p90 {:>9.2} ms",
        ms(samples[0]),
        ms(at(0.5)),
        ms(at(0.9))
    );
    Ok(at(0.5))
}

fn main() -> Result<(), pki::Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return Ok(());
    }
    if !args.iter().any(|a| a == "--bench") {
        let d = one_set(KeyAlgorithm::EcdsaP256)?;
        println!("shoot_set smoke run: one ECDSA set in {:.2} ms", d.as_secs_f64() * 1000.0);
        return Ok(());
    }
    println!("complete shoot set (5 CAs, 8 certificates incl. 3 kubeconfigs, SA key, 5 bundles)");
    let ecdsa = report("ECDSA P-256", KeyAlgorithm::EcdsaP256, runs("PKI_BENCH_ECDSA_RUNS", 200))?;
    let rsa = report("RSA-2048", KeyAlgorithm::Rsa2048, runs("PKI_BENCH_RSA_RUNS", 21))?;
    println!("RSA-2048 / ECDSA median: {:.0}x", rsa.as_secs_f64() / ecdsa.as_secs_f64());
    let goal = Duration::from_millis(50);
    println!("goal: ECDSA median under {} ms: {}", goal.as_millis(), if ecdsa < goal { "met" } else { "MISSED" });
    Ok(())
}
