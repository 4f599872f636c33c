//! Authoritative zones besides the cluster domain: the zones provider-local keeps for its
//! DNSRecords. Each zone is a ConfigMap in [`ZONE_NAMESPACE`] labelled [`ZONE_LABEL`]`=<zone>`
//! whose values are records in master-file syntax, each headed by an owner comment:
//!
//! ```text
//! ; owner=shoot--dev--a/a-external technical-id=shoot--dev--a
//! api.a.dev.local.gardener.cloud. 120 IN A 10.96.14.3
//! ```
//!
//! Parsing is pure and forgiving per line: a line that cannot be served is reported and
//! skipped, the rest of the zone is still served. Only names inside the labelled zone are
//! accepted, and no zone may be (or lie inside) the cluster domain, so a ConfigMap can never
//! shadow a Service's name. Only this one namespace is read, and the add-ons user may read
//! nothing else there (see `manifests`), so writing a zone needs write access to it.

use super::records::{Data, Records};
use k8s_openapi::api::core::v1::ConfigMap;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The namespace holding the zone ConfigMaps (provider-local's default DNS namespace).
pub const ZONE_NAMESPACE: &str = "provider-local-dns";
/// The label naming a ConfigMap's zone.
pub const ZONE_LABEL: &str = "dns.provider-local.gardener.cloud/zone";

/// Zone origin (lower case, no trailing dot) → its records.
pub type Zones = BTreeMap<String, Records>;

fn normalize(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'*')
        })
}

fn within(name: &str, zone: &str) -> bool {
    name == zone || name.ends_with(&format!(".{zone}"))
}

/// Unquotes a TXT value written as `"..."` with `\"` and `\\` escapes.
fn unquote(rdata: &str) -> Option<String> {
    let inner = rdata.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '"' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// One record line, `<name>. <ttl> IN <TYPE> <rdata>`, of zone `zone`. `Ok(None)` for blank
/// lines and comments.
pub fn parse_line(zone: &str, line: &str) -> Result<Option<(String, Data)>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with(';') {
        return Ok(None);
    }
    // Four whitespace-separated fields, then the record data (which may hold spaces: TXT).
    let mut rest = line;
    let mut fields = [""; 4];
    for field in &mut fields {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        (*field, rest) = rest.split_at(end);
    }
    let [owner, ttl, class, kind] = fields;
    let rdata = rest.trim();
    if kind.is_empty() || rdata.is_empty() || ttl.parse::<u32>().is_err() || !class.eq_ignore_ascii_case("IN") {
        return Err(format!("{line:?} is not `<name> <ttl> IN <type> <value>`"));
    }
    let name = normalize(owner);
    if !is_dns_name(&name) {
        return Err(format!("{owner:?} is not a DNS name"));
    }
    if !within(&name, zone) {
        return Err(format!("{name} is not in zone {zone}"));
    }
    let data = match kind.to_ascii_uppercase().as_str() {
        "A" => Data::A(rdata.parse::<Ipv4Addr>().map_err(|e| format!("{rdata:?} is not an IPv4 address: {e}"))?),
        "AAAA" => Data::Aaaa(rdata.parse::<Ipv6Addr>().map_err(|e| format!("{rdata:?} is not an IPv6 address: {e}"))?),
        "CNAME" => {
            let target = normalize(rdata);
            if !is_dns_name(&target) {
                return Err(format!("{rdata:?} is not a DNS name"));
            }
            Data::Cname(target)
        }
        "TXT" => Data::Txt(unquote(rdata).ok_or_else(|| format!("{rdata:?} is not one quoted string"))?),
        other => return Err(format!("record type {other} is not served")),
    };
    Ok(Some((name, data)))
}

/// The zones in `config_maps` (those labelled [`ZONE_LABEL`]), and a description of every line
/// or ConfigMap that was skipped. Zones of several ConfigMaps with the same label are merged.
pub fn from_config_maps(config_maps: &[ConfigMap], cluster_domain: &str) -> (Zones, Vec<String>) {
    let mut zones = Zones::new();
    let mut problems = Vec::new();
    let cluster_domain = normalize(cluster_domain);
    for cm in config_maps {
        let cm_name = format!(
            "ConfigMap {}/{}",
            cm.metadata.namespace.as_deref().unwrap_or_default(),
            cm.metadata.name.as_deref().unwrap_or_default()
        );
        let Some(zone) = cm.metadata.labels.as_ref().and_then(|l| l.get(ZONE_LABEL)).map(|z| normalize(z)) else {
            continue;
        };
        if !is_dns_name(&zone) || zone.contains('*') {
            problems.push(format!("{cm_name}: label {ZONE_LABEL}={zone:?} is not a DNS name"));
            continue;
        }
        if within(&zone, &cluster_domain) || within(&cluster_domain, &zone) {
            problems.push(format!("{cm_name}: zone {zone} overlaps the cluster domain {cluster_domain}"));
            continue;
        }
        let records = zones.entry(zone.clone()).or_default();
        for (key, value) in cm.data.iter().flatten() {
            for line in value.lines() {
                match parse_line(&zone, line) {
                    Ok(Some((name, data))) => records.entry(name).or_default().push(data),
                    Ok(None) => {}
                    Err(e) => problems.push(format!("{cm_name} key {key}: {e}")),
                }
            }
        }
    }
    for records in zones.values_mut() {
        for data in records.values_mut() {
            data.sort();
            data.dedup();
        }
        // A CNAME cannot share its name with other data (RFC 1034 3.6.2): keep the other data.
        records.retain(|name, data| {
            let cname = data.iter().any(|d| matches!(d, Data::Cname(_)));
            if cname && data.len() > 1 {
                problems.push(format!("{name}: a CNAME next to other records is not served"));
                data.retain(|d| !matches!(d, Data::Cname(_)));
            }
            !data.is_empty()
        });
    }
    (zones, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(name: &str, zone: &str, data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ZONE_NAMESPACE.into()),
                labels: Some(BTreeMap::from([(ZONE_LABEL.to_string(), zone.to_string())])),
                ..Default::default()
            },
            data: Some(data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            ..Default::default()
        }
    }

    #[test]
    fn lines_of_every_served_type() {
        let z = "local.gardener.cloud";
        assert_eq!(
            parse_line(z, "api.a.dev.local.gardener.cloud. 120 IN A 10.96.0.7").unwrap(),
            Some(("api.a.dev.local.gardener.cloud".into(), Data::A(Ipv4Addr::new(10, 96, 0, 7))))
        );
        assert_eq!(
            parse_line(z, "spaced.local.gardener.cloud.\t 60  IN   A   10.96.0.8").unwrap(),
            Some(("spaced.local.gardener.cloud".into(), Data::A(Ipv4Addr::new(10, 96, 0, 8)))),
            "any run of blanks separates fields"
        );
        assert_eq!(
            parse_line(z, "V6.Local.Gardener.Cloud. 60 in AAAA fd00::1").unwrap(),
            Some(("v6.local.gardener.cloud".into(), Data::Aaaa("fd00::1".parse().unwrap())))
        );
        assert_eq!(
            parse_line(z, "www.local.gardener.cloud. 60 IN CNAME api.a.dev.local.gardener.cloud.").unwrap(),
            Some(("www.local.gardener.cloud".into(), Data::Cname("api.a.dev.local.gardener.cloud".into())))
        );
        assert_eq!(
            parse_line(z, r#"owner.local.gardener.cloud. 60 IN TXT "say \"hi\" \\ there""#).unwrap(),
            Some(("owner.local.gardener.cloud".into(), Data::Txt(r#"say "hi" \ there"#.into())))
        );
        assert_eq!(parse_line(z, "; owner=ns/name technical-id=ns").unwrap(), None);
        assert_eq!(parse_line(z, "   ").unwrap(), None);
    }

    #[test]
    fn bad_lines_say_why() {
        let z = "local.gardener.cloud";
        for (line, says) in [
            ("api.other.zone. 60 IN A 10.0.0.1", "not in zone local.gardener.cloud"),
            ("api.local.gardener.cloud. 60 IN A 10.0.0.300", "not an IPv4 address"),
            ("api.local.gardener.cloud. sixty IN A 10.0.0.1", "is not `<name>"),
            ("api.local.gardener.cloud. 60 CH A 10.0.0.1", "is not `<name>"),
            ("api.local.gardener.cloud. 60 IN MX 10 mail", "record type MX is not served"),
            ("api.local.gardener.cloud. 60 IN A", "is not `<name>"),
            ("bad..name.local.gardener.cloud. 60 IN A 10.0.0.1", "is not a DNS name"),
            ("t.local.gardener.cloud. 60 IN TXT unquoted", "one quoted string"),
        ] {
            let err = parse_line(z, line).unwrap_err();
            assert!(err.contains(says), "{line}: {err}");
        }
    }

    #[test]
    fn config_maps_merge_by_zone_and_skip_what_cannot_be_served() {
        let a = cm(
            "zone-local.gardener.cloud",
            "local.gardener.cloud",
            &[
                ("api.a.local.gardener.cloud.A", "; owner=x/a\napi.a.local.gardener.cloud. 120 IN A 10.96.0.7\n"),
                (
                    "api.b.local.gardener.cloud.A",
                    "; owner=x/b\napi.b.local.gardener.cloud. 120 IN A 10.96.0.8\nevil.example.com. 1 IN A 1.2.3.4\n",
                ),
                ("c.local.gardener.cloud.CNAME", "c.local.gardener.cloud. 1 IN CNAME api.a.local.gardener.cloud.\n"),
                ("c.local.gardener.cloud.A", "c.local.gardener.cloud. 1 IN A 10.96.0.9\n"),
            ],
        );
        let b = cm(
            "zone-2",
            "local.gardener.cloud",
            &[("api.a.local.gardener.cloud.A", "api.a.local.gardener.cloud. 1 IN A 10.96.0.7")],
        );
        let shadow =
            cm("zone-cluster", "svc.cluster.local", &[("k.A", "kubernetes.default.svc.cluster.local. 1 IN A 1.1.1.1")]);
        let parent = cm("zone-parent", "local", &[]);
        let mut unlabelled = cm("other", "x", &[]);
        unlabelled.metadata.labels = None;
        let (zones, problems) = from_config_maps(&[a, b, shadow, parent, unlabelled], "cluster.local");
        assert_eq!(zones.keys().collect::<Vec<_>>(), vec!["local.gardener.cloud"]);
        let records = &zones["local.gardener.cloud"];
        assert_eq!(records["api.a.local.gardener.cloud"], vec![Data::A(Ipv4Addr::new(10, 96, 0, 7))]);
        assert_eq!(records["api.b.local.gardener.cloud"], vec![Data::A(Ipv4Addr::new(10, 96, 0, 8))]);
        assert_eq!(records["c.local.gardener.cloud"], vec![Data::A(Ipv4Addr::new(10, 96, 0, 9))]);
        assert_eq!(records.len(), 3);
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert!(problems.iter().any(|p| p.contains("evil.example.com is not in zone")));
        assert!(problems.iter().any(|p| p.contains("zone svc.cluster.local overlaps the cluster domain")));
        assert!(problems.iter().any(|p| p.contains("zone local overlaps the cluster domain")));
        assert!(problems.iter().any(|p| p.contains("a CNAME next to other records")));
    }
}
