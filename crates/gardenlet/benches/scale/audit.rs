//! The bench's account of requests: the garden API server's audit log, counted per phase, user,
//! verb and resource, and the rows the report prints of it.

use super::phases::Phase;
use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

const VERBS: [&str; 8] = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"];
const WRITES: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// Requests per phase: (phase, user, verb, resource) -> count.
pub type Counts = BTreeMap<(usize, String, String, String), u64>;

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuditEvent {
    stage: String,
    verb: String,
    user: AuditUser,
    user_agent: Option<String>,
    object_ref: Option<AuditObject>,
    request_received_timestamp: String,
}

#[derive(serde::Deserialize)]
struct AuditUser {
    username: String,
}

#[derive(serde::Deserialize)]
struct AuditObject {
    resource: Option<String>,
    subresource: Option<String>,
}

/// Every request once: the `ResponseComplete` (or `Panic`) event, for a watch the
/// `ResponseStarted` event (a watch completes only when it ends), by its received time; and how
/// many requests were received outside every phase.
pub fn read_audit(path: &Path, phases: &[Phase]) -> (Counts, u64) {
    let file = std::fs::File::open(path).unwrap();
    let mut counts = Counts::new();
    let mut outside = 0;
    for line in std::io::BufReader::new(file).lines() {
        let line = line.unwrap();
        let Ok(e) = serde_json::from_str::<AuditEvent>(&line) else { continue };
        if !counted(&e) {
            continue;
        }
        let Ok(at) = e.request_received_timestamp.parse::<Timestamp>() else { continue };
        let Some(phase) = phases.iter().position(|p| p.start <= at && at < p.end) else {
            outside += 1;
            continue;
        };
        let resource = resource(&e);
        *counts.entry((phase, user(&e), e.verb, resource)).or_default() += 1;
    }
    (counts, outside)
}

/// Whether the event is the one that counts its request.
fn counted(e: &AuditEvent) -> bool {
    match e.stage.as_str() {
        "ResponseStarted" => e.verb == "watch",
        "ResponseComplete" => e.verb != "watch",
        "Panic" => true,
        _ => false,
    }
}

fn resource(e: &AuditEvent) -> String {
    match &e.object_ref {
        Some(AuditObject { resource: Some(r), subresource: Some(s) }) => format!("{r}/{s}"),
        Some(AuditObject { resource: Some(r), subresource: None }) => r.clone(),
        _ => "(non-resource)".to_string(),
    }
}

/// Who sent the request: a gardenlet by its user, else kube-controller-manager by its user
/// agent (the bench process and kube-controller-manager share the admin certificate), else the
/// bench.
fn user(e: &AuditEvent) -> String {
    match e.user.username.as_str() {
        u if is_gardenlet(u) => e.user.username.clone(),
        _ if e.user_agent.as_deref().is_some_and(|a| a.starts_with("kube-controller-manager")) => {
            "kube-controller-manager".to_string()
        }
        "testenv-admin" => "bench".to_string(),
        _ => e.user.username.clone(),
    }
}

pub fn is_gardenlet(user: &str) -> bool {
    user.starts_with("gardenlet-")
}

/// Sums of the counts of one phase whose user and resource match.
pub fn by_verb(
    counts: &Counts,
    phase: usize,
    user: impl Fn(&str) -> bool,
    resource: impl Fn(&str) -> bool,
) -> Vec<u64> {
    VERBS
        .iter()
        .map(|v| {
            counts
                .iter()
                .filter(|((p, u, verb, r), _)| *p == phase && user(u) && verb == v && resource(r))
                .map(|(_, n)| n)
                .sum()
        })
        .collect()
}

pub fn reads_writes(v: &[u64]) -> (u64, u64) {
    let reads = VERBS.iter().zip(v).filter(|(verb, _)| !WRITES.contains(verb)).map(|(_, n)| n).sum();
    let writes = VERBS.iter().zip(v).filter(|(verb, _)| WRITES.contains(verb)).map(|(_, n)| n).sum();
    (reads, writes)
}

/// A row of the requests per verb in `v`, each divided by `divisor`, and the reads and writes.
pub fn verb_row(label: &str, v: &[u64], divisor: f64) -> String {
    let (r, w) = reads_writes(v);
    row(label, v.iter().map(|n| *n as f64 / divisor), r as f64 / divisor, w as f64 / divisor)
}

/// A row of the rates per verb in `v`, and the reads and writes.
pub fn rate_row(label: &str, v: &[f64]) -> String {
    let reads: f64 = VERBS.iter().zip(v).filter(|(verb, _)| !WRITES.contains(verb)).map(|(_, x)| x).sum();
    let writes: f64 = VERBS.iter().zip(v).filter(|(verb, _)| WRITES.contains(verb)).map(|(_, x)| x).sum();
    row(label, v.iter().copied(), reads, writes)
}

fn row(label: &str, cells: impl Iterator<Item = f64>, reads: f64, writes: f64) -> String {
    let mut row = format!("  {label:<34}");
    for x in cells {
        row += &format!(" {x:>8.2}");
    }
    row + &format!(" | {reads:>8.2} {writes:>8.2}")
}

pub fn verb_header() -> String {
    let mut row = format!("  {:<34}", "");
    for v in VERBS {
        row += &format!(" {:>8}", if v == "deletecollection" { "delcoll" } else { v });
    }
    row + &format!(" | {:>8} {:>8}", "reads", "writes")
}

/// The `top` (user class, verb, resource) of a phase, most requests first.
pub fn top(counts: &Counts, phase: usize, gardenlet: bool, n: usize) -> Vec<(u64, String, String)> {
    let mut sums: BTreeMap<(String, String), u64> = BTreeMap::new();
    for ((p, u, verb, r), c) in counts {
        if *p == phase && is_gardenlet(u) == gardenlet {
            *sums.entry((verb.clone(), r.clone())).or_default() += c;
        }
    }
    let mut v: Vec<_> = sums.into_iter().map(|((verb, r), c)| (c, verb, r)).collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.0));
    v.truncate(n);
    v
}

pub fn fmt_top(v: &[(u64, String, String)]) -> String {
    v.iter().map(|(c, verb, r)| format!("{verb} {r} {c}")).collect::<Vec<_>>().join(", ")
}
