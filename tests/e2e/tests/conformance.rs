//! The upstream Kubernetes conformance suite's CI subset against a two-node shoot of the local
//! garden: `hack/conformance.sh --ci` (docs/conformance.md, "A subset for CI") creates the shoot
//! `conf`, runs the subset's tests by exact name with the upstream `e2e.test` of the shoots'
//! version, and deletes the shoot. Checks someone else wrote: the suite's own assertions decide.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::*;
use std::process::Command;

#[test]
fn the_upstream_conformance_subset_passes_on_a_two_node_shoot() {
    let out = Command::new(repo_root().join("hack/conformance.sh"))
        .arg("--ci")
        .env("LOCAL_CLUSTER_STATE", state_dir())
        .current_dir(repo_root())
        .output()
        .expect("hack/conformance.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    let summary = stdout.lines().find(|l| l.starts_with("passed ")).unwrap_or_default();
    assert!(
        out.status.success(),
        "hack/conformance.sh --ci failed ({}): {summary}\n{stdout}\nits log:\n{stderr}",
        out.status
    );
    assert!(summary.contains(", failed 0,"), "the summary: {summary}\n{stdout}");
    let passed: usize =
        summary.split_whitespace().nth(1).and_then(|n| n.trim_end_matches(',').parse().ok()).unwrap_or(0);
    assert_eq!(passed, ci_subset().len(), "every test of the subset passed, none was left out: {summary}");
}

/// The names of the CI subset: the `CI_SUBSET=( ... )` list of hack/conformance.sh.
fn ci_subset() -> Vec<String> {
    let script = std::fs::read_to_string(repo_root().join("hack/conformance.sh")).unwrap();
    let list = script.split("\nCI_SUBSET=(\n").nth(1).and_then(|rest| rest.split("\n)").next()).unwrap_or_default();
    let names: Vec<String> =
        list.lines().map(str::trim).filter(|l| l.starts_with('"')).map(|l| l.trim_matches('"').to_string()).collect();
    assert!(!names.is_empty(), "hack/conformance.sh has no CI_SUBSET list");
    names
}
