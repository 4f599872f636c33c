//! The routes: which TLS server name (SNI) goes to which address. Pure functions only.
//!
//! gardenlet keeps them in one ConfigMap (the entry point's namespace, [`ROUTES_CONFIGMAP`]):
//! one data key per shoot (its technical ID), whose value lists that shoot's host names with the
//! address of its kube-apiserver Service, one `host address` pair per line:
//!
//! ```text
//! api.a.dev.internal.local 10.96.14.3
//! api.a.example.com 10.96.14.3
//! ```
//!
//! The sync beside haproxy turns the whole ConfigMap into haproxy's map file (`host address`
//! lines, what haproxy's `map()` converter reads) and into Runtime API commands that change the
//! running map without a reload.

use std::collections::BTreeMap;
use std::net::IpAddr;

/// The ConfigMap with every shoot's routes (in the entry point's namespace).
pub const ROUTES_CONFIGMAP: &str = "shoot-entry-routes";

/// Host name → address: what haproxy's map holds.
pub type Routes = BTreeMap<String, IpAddr>;

/// A line of the ConfigMap that is not used, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The data key (the shoot's technical ID) the line belongs to.
    pub key: String,
    pub line: String,
    pub reason: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "routes of {}: {:?}: {}", self.key, self.line, self.reason)
    }
}

/// One shoot's value in the ConfigMap: its `hosts`, each to `address`.
pub fn value(hosts: &[String], address: IpAddr) -> String {
    let mut hosts: Vec<String> = hosts.iter().map(|h| normalize(h)).collect();
    hosts.sort();
    hosts.dedup();
    hosts.iter().map(|h| format!("{h} {address}\n")).collect()
}

/// Lower case, no trailing dot: how names are compared (haproxy's frontend lower-cases the SNI).
pub fn normalize(host: &str) -> String {
    host.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Whether `host` is a DNS name haproxy can match exactly: labels of letters, digits and `-`,
/// neither starting nor ending with `-`, at most 63 characters each and 253 in all. Wildcards
/// and IP addresses are not names a TLS client sends as SNI.
pub fn valid_host(host: &str) -> bool {
    if host.is_empty() || host.len() > 253 || host.parse::<IpAddr>().is_ok() {
        return false;
    }
    host.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    })
}

/// The routes of a whole ConfigMap's data, and the lines left out. A host claimed by two keys
/// goes to neither (a shoot must not take over another's name; gardenlet refuses to write such
/// a claim, so this only meets hand-made data), and each claim is reported.
pub fn parse(data: &BTreeMap<String, String>) -> (Routes, Vec<Problem>) {
    let mut claims: BTreeMap<String, Vec<(String, IpAddr)>> = BTreeMap::new();
    let mut problems = Vec::new();
    for (key, value) in data {
        for line in value.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let problem =
                |reason: &str| Problem { key: key.clone(), line: line.to_string(), reason: reason.to_string() };
            let mut fields = line.split_whitespace();
            let (Some(host), Some(address), None) = (fields.next(), fields.next(), fields.next()) else {
                problems.push(problem("not `host address`"));
                continue;
            };
            let host = normalize(host);
            if !valid_host(&host) {
                problems.push(problem("not a DNS name"));
                continue;
            }
            let Ok(address) = address.parse::<IpAddr>() else {
                problems.push(problem("not an IP address"));
                continue;
            };
            claims.entry(host).or_default().push((key.clone(), address));
        }
    }
    let mut routes = Routes::new();
    for (host, claimants) in claims {
        let keys: Vec<&str> = claimants.iter().map(|(k, _)| k.as_str()).collect();
        let mut distinct = keys.clone();
        distinct.dedup();
        match claimants.as_slice() {
            [(_, address)] => {
                routes.insert(host, *address);
            }
            [(_, first), rest @ ..] if distinct.len() == 1 && rest.iter().all(|(_, a)| a == first) => {
                routes.insert(host, *first);
            }
            _ => {
                for (key, address) in &claimants {
                    problems.push(Problem {
                        key: key.clone(),
                        line: format!("{host} {address}"),
                        reason: format!("{host} is claimed by {}; it is routed nowhere", keys.join(", ")),
                    });
                }
            }
        }
    }
    (routes, problems)
}

/// Who else already claims one of `hosts` in `data` (a key other than `own`): the host and
/// that key. gardenlet refuses to publish a shoot's routes while this is not empty.
pub fn conflicts(data: &BTreeMap<String, String>, own: &str, hosts: &[String]) -> Vec<(String, String)> {
    let wanted: Vec<String> = hosts.iter().map(|h| normalize(h)).collect();
    let mut found = Vec::new();
    for (key, value) in data.iter().filter(|(k, _)| k.as_str() != own) {
        for line in value.lines() {
            if let Some(host) = line.split_whitespace().next().map(normalize)
                && wanted.contains(&host)
            {
                found.push((host, key.clone()));
            }
        }
    }
    found
}

/// haproxy's map file for `routes`.
pub fn map_file(routes: &Routes) -> String {
    let mut out =
        String::from("# shoot-entry: SNI host name -> kube-apiserver address (written by shoot-entry sync)\n");
    for (host, address) in routes {
        out.push_str(&format!("{host} {address}\n"));
    }
    out
}

/// A change to haproxy's running map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Add(String, IpAddr),
    Set(String, IpAddr),
    Del(String),
}

impl Change {
    /// The Runtime API command for this change to the map `file`.
    pub fn command(&self, file: &str) -> String {
        match self {
            Change::Add(host, address) => format!("add map {file} {host} {address}"),
            Change::Set(host, address) => format!("set map {file} {host} {address}"),
            Change::Del(host) => format!("del map {file} {host}"),
        }
    }
}

/// What turns the running map `current` (as `show map` printed it: host → value) into `wanted`.
/// A value that is not an address, or a host that is there twice, is replaced.
pub fn changes(current: &[(String, String)], wanted: &Routes) -> Vec<Change> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (host, _) in current {
        *seen.entry(host.as_str()).or_default() += 1;
    }
    let mut out = Vec::new();
    for (host, count) in &seen {
        if !wanted.contains_key(*host) || *count > 1 {
            out.push(Change::Del((*host).to_string()));
        }
    }
    for (host, address) in wanted {
        let now: Vec<&str> = current.iter().filter(|(h, _)| h == host).map(|(_, v)| v.as_str()).collect();
        match now.as_slice() {
            [] => out.push(Change::Add(host.clone(), *address)),
            [one] if one.parse::<IpAddr>().ok() == Some(*address) => {}
            [_] => out.push(Change::Set(host.clone(), *address)),
            // More than one entry: deleted above (`del map` removes them all), then added.
            _ => out.push(Change::Add(host.clone(), *address)),
        }
    }
    out
}

/// Entries of `show map <file>` output: `<pointer> <key> <value>` per line.
pub fn parse_show_map(output: &str) -> Vec<(String, String)> {
    output
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_pointer, key, value) = (fields.next()?, fields.next()?, fields.next()?);
            Some((key.to_string(), value.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn value_is_sorted_normalized_lines() {
        let v = value(&["API.B.example.".into(), "api.a.example".into(), "api.a.example".into()], ip("10.96.0.9"));
        assert_eq!(v, "api.a.example 10.96.0.9\napi.b.example 10.96.0.9\n");
        let (routes, problems) = parse(&data(&[("shoot--p--s", &v)]));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(routes.len(), 2);
    }

    #[test]
    fn bad_lines_are_reported_and_the_rest_is_kept() {
        let (routes, problems) = parse(&data(&[(
            "shoot--p--s",
            "api.ok.example 10.0.0.1\nonly-one-field\n*.wild.example 10.0.0.1\napi.x.example not-an-ip\n10.0.0.2 10.0.0.1\n# comment\n",
        )]));
        assert_eq!(routes, Routes::from([("api.ok.example".to_string(), ip("10.0.0.1"))]));
        let reasons: Vec<&str> = problems.iter().map(|p| p.reason.as_str()).collect();
        assert_eq!(reasons, ["not `host address`", "not a DNS name", "not an IP address", "not a DNS name"]);
        assert!(problems[0].to_string().contains("shoot--p--s"));
    }

    #[test]
    fn a_host_claimed_by_two_shoots_goes_to_neither() {
        let (routes, problems) = parse(&data(&[
            ("shoot--a--x", "api.x.example 10.0.0.1\napi.shared.example 10.0.0.1\n"),
            ("shoot--b--y", "api.shared.example 10.0.0.2\n"),
        ]));
        assert_eq!(routes, Routes::from([("api.x.example".to_string(), ip("10.0.0.1"))]));
        assert_eq!(problems.len(), 2);
        assert!(problems[0].reason.contains("shoot--a--x, shoot--b--y"), "{}", problems[0]);
    }

    #[test]
    fn conflicts_name_the_other_shoot() {
        let d = data(&[("shoot--a--x", "api.x.example 10.0.0.1\n"), ("shoot--b--y", "api.y.example 10.0.0.2\n")]);
        assert!(conflicts(&d, "shoot--a--x", &["api.x.example".into()]).is_empty());
        assert_eq!(
            conflicts(&d, "shoot--c--z", &["API.Y.example.".into()]),
            [("api.y.example".to_string(), "shoot--b--y".to_string())]
        );
    }

    #[test]
    fn host_names() {
        for ok in ["api.a.example", "a", "x-1.y2"] {
            assert!(valid_host(ok), "{ok}");
        }
        for bad in ["", "-a.example", "a-.example", "a..b", "A.example", "a_b.example", "*.a", "10.0.0.1", "::1"] {
            assert!(!valid_host(bad), "{bad}");
        }
        assert!(!valid_host(&format!("{}.example", "a".repeat(64))));
    }

    #[test]
    fn changes_add_set_and_delete_only_what_differs() {
        let wanted = Routes::from([
            ("keep.example".to_string(), ip("10.0.0.1")),
            ("move.example".to_string(), ip("10.0.0.3")),
            ("new.example".to_string(), ip("10.0.0.4")),
        ]);
        let current =
            parse_show_map("0x1 keep.example 10.0.0.1\n0x2 move.example 10.0.0.2\n0x3 gone.example 10.0.0.9\n\n");
        assert_eq!(
            changes(&current, &wanted),
            [
                Change::Del("gone.example".into()),
                Change::Set("move.example".into(), ip("10.0.0.3")),
                Change::Add("new.example".into(), ip("10.0.0.4")),
            ]
        );
        // Applied, nothing is left to do.
        let after = parse_show_map("0x1 keep.example 10.0.0.1\n0x2 move.example 10.0.0.3\n0x4 new.example 10.0.0.4\n");
        assert!(changes(&after, &wanted).is_empty());
    }

    #[test]
    fn duplicates_in_the_running_map_are_replaced() {
        let wanted = Routes::from([("dup.example".to_string(), ip("10.0.0.1"))]);
        let current = parse_show_map("0x1 dup.example 10.0.0.1\n0x2 dup.example 10.0.0.2\n");
        assert_eq!(
            changes(&current, &wanted),
            [Change::Del("dup.example".into()), Change::Add("dup.example".into(), ip("10.0.0.1"))]
        );
    }

    #[test]
    fn commands_and_map_file() {
        assert_eq!(Change::Add("a.x".into(), ip("10.0.0.1")).command("/m"), "add map /m a.x 10.0.0.1");
        assert_eq!(Change::Set("a.x".into(), ip("10.0.0.1")).command("/m"), "set map /m a.x 10.0.0.1");
        assert_eq!(Change::Del("a.x".into()).command("/m"), "del map /m a.x");
        let file = map_file(&Routes::from([("a.x".to_string(), ip("10.0.0.1"))]));
        assert!(file.starts_with('#') && file.ends_with("a.x 10.0.0.1\n"), "{file}");
    }
}
