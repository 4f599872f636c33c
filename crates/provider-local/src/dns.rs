//! DNSRecord: A/AAAA/CNAME/TXT records in zones kept in the seed.
//!
//! A zone is the ConfigMap `zone-<zone>` in the DNS namespace (default `provider-local-dns`).
//! Each record is one data key `<name>.<TYPE>` whose value is the record in RFC 1035 master-file
//! syntax, headed by a comment naming the owning DNSRecord and its shoot:
//!
//! ```text
//! ; owner=shoot--dev--a/a-internal technical-id=shoot--dev--a
//! api.a.local.gardener.cloud. 120 IN A 10.0.0.1
//! ```
//!
//! Concatenating the values (after an SOA) gives a zone file a local DNS server can load. Every
//! write is a JSON merge patch of the record's own key, guarded by the ConfigMap's
//! resourceVersion, so records of different shoots in one zone never clobber each other, and a
//! delete removes only a key this DNSRecord owns.

use crate::common::{describe, ensure_namespace, technical_id};
use crate::error::{Error, is_conflict, is_not_found};
use extension_sdk::api::extensions::DNSRecord;
use extension_sdk::api::extensions::dnsrecord::DnsRecordType;
use extension_sdk::k8s_openapi::api::core::v1::ConfigMap;
use extension_sdk::kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use extension_sdk::kube::{Api, Client, ResourceExt};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use serde_json::json;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

const COMPONENT: &str = "dns";
/// Default namespace of the zone ConfigMaps.
pub const DEFAULT_DNS_NAMESPACE: &str = "provider-local-dns";
/// Label on zone ConfigMaps naming the zone.
pub const LABEL_ZONE: &str = "dns.provider-local.gardener.cloud/zone";
/// Attempts of a read-modify-write before giving up on concurrent writers.
const ATTEMPTS: usize = 8;

fn normalize(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// The zone of a record: `spec.zone`, else the last two labels of the name.
pub fn zone_of(record: &DNSRecord) -> Result<String, Error> {
    if let Some(zone) = record.spec.zone.as_deref().map(normalize).filter(|z| !z.is_empty()) {
        let name = normalize(&record.spec.name);
        if name != zone && !name.ends_with(&format!(".{zone}")) {
            return Err(Error::config(describe(record), "spec.zone", format!("{name} is not in zone {zone}")));
        }
        return Ok(zone);
    }
    let name = normalize(&record.spec.name);
    let labels: Vec<&str> = name.split('.').filter(|l| !l.is_empty()).collect();
    if labels.len() < 2 {
        return Err(Error::config(describe(record), "spec.name", format!("{name:?} has no parent zone")));
    }
    Ok(labels[labels.len() - 2..].join("."))
}

/// The ConfigMap holding a zone.
pub fn zone_config_map_name(zone: &str) -> String {
    format!("zone-{zone}")
}

fn type_str(t: DnsRecordType) -> &'static str {
    match t {
        DnsRecordType::A => "A",
        DnsRecordType::Aaaa => "AAAA",
        DnsRecordType::Cname => "CNAME",
        DnsRecordType::Txt => "TXT",
    }
}

/// The data key of a record: `<name>.<TYPE>`, with a wildcard label `*` spelled `_` (ConfigMap
/// keys allow only `[-._a-zA-Z0-9]`).
pub fn record_key(name: &str, record_type: DnsRecordType) -> String {
    format!("{}.{}", normalize(name).replace('*', "_"), type_str(record_type))
}

/// The owner comment of a record value.
pub fn owner_of(value: &str) -> Option<&str> {
    value.lines().next()?.strip_prefix("; owner=")?.split_whitespace().next()
}

/// Renders a record in master-file syntax, after validating its values.
pub fn render_record(record: &DNSRecord, owner: &str, technical_id: &str) -> Result<String, Error> {
    let object = describe(record);
    let spec = &record.spec;
    if spec.values.is_empty() {
        return Err(Error::config(object, "spec.values", "at least one value is required"));
    }
    let name = normalize(&spec.name);
    let ttl = spec.ttl.unwrap_or(120);
    let t = type_str(spec.record_type);
    let mut out = format!("; owner={owner} technical-id={technical_id}\n");
    for (i, value) in spec.values.iter().enumerate() {
        let field = format!("spec.values[{i}]");
        let rdata = match spec.record_type {
            DnsRecordType::A => value
                .parse::<Ipv4Addr>()
                .map(|ip| ip.to_string())
                .map_err(|e| Error::config(&object, &field, format!("{value:?} is not an IPv4 address: {e}")))?,
            DnsRecordType::Aaaa => value
                .parse::<Ipv6Addr>()
                .map(|ip| ip.to_string())
                .map_err(|e| Error::config(&object, &field, format!("{value:?} is not an IPv6 address: {e}")))?,
            DnsRecordType::Cname => {
                if spec.values.len() != 1 {
                    return Err(Error::config(&object, "spec.values", "a CNAME record has exactly one value"));
                }
                format!("{}.", normalize(value))
            }
            DnsRecordType::Txt => format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\"")),
        };
        out.push_str(&format!("{name}. {ttl} IN {t} {rdata}\n"));
    }
    Ok(out)
}

/// The DNSRecord actuator.
#[derive(Clone)]
pub struct LocalDnsRecord {
    client: Client,
    namespace: String,
}

crate::debug_without_client!(LocalDnsRecord);

impl LocalDnsRecord {
    /// Zones live in `namespace` (see [`DEFAULT_DNS_NAMESPACE`]).
    pub fn new(client: Client, namespace: impl Into<String>) -> Self {
        Self { client, namespace: namespace.into() }
    }

    fn zones(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn owner(record: &DNSRecord) -> String {
        format!("{}/{}", record.namespace().unwrap_or_default(), record.name_any())
    }

    /// Writes (`Some`) or removes (`None`) one key, only if it is unowned or ours.
    async fn edit(&self, record: &DNSRecord, zone: &str, key: &str, value: Option<&str>) -> Result<(), Error> {
        let cm_name = zone_config_map_name(zone);
        let owner = Self::owner(record);
        let what = format!("ConfigMap {}/{cm_name} key {key}", self.namespace);
        for _ in 0..ATTEMPTS {
            let current = self.zones().get_opt(&cm_name).await.map_err(Error::kube(format!("reading {what}")))?;
            let Some(current) = current else {
                let Some(value) = value else { return Ok(()) };
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(cm_name.clone()),
                        labels: Some(BTreeMap::from([(LABEL_ZONE.to_string(), zone.to_string())])),
                        ..Default::default()
                    },
                    data: Some(BTreeMap::from([(key.to_string(), value.to_string())])),
                    ..Default::default()
                };
                match self.zones().create(&PostParams::default(), &cm).await {
                    Ok(_) => return Ok(()),
                    Err(e) if is_conflict(&e) => continue,
                    Err(e) => return Err(Error::kube(format!("creating {what}"))(e)),
                }
            };
            let existing = current.data.as_ref().and_then(|d| d.get(key));
            match (existing, value) {
                (None, None) => return Ok(()),
                (Some(old), _) if owner_of(old) != Some(owner.as_str()) => {
                    if value.is_none() {
                        // Someone else's record under the same name: not ours to remove.
                        return Ok(());
                    }
                    return Err(Error::config(
                        describe(record),
                        "spec.name",
                        format!("{key} in zone {zone} is owned by {}", owner_of(old).unwrap_or("someone else")),
                    ));
                }
                (Some(old), Some(new)) if old == new => return Ok(()),
                _ => {}
            }
            let patch = json!({
                "metadata": {"resourceVersion": current.resource_version()},
                "data": {key: value},
            });
            match self.zones().patch(&cm_name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => return Ok(()),
                Err(e) if is_conflict(&e) || is_not_found(&e) => continue,
                Err(e) => return Err(Error::kube(format!("writing {what}"))(e)),
            }
        }
        Err(Error::dependency(describe(record), format!("{what}: too many concurrent writers")))
    }
}

impl Actuator<DNSRecord> for LocalDnsRecord {
    #[tracing::instrument(skip_all, fields(dnsrecord = %describe(record)))]
    async fn reconcile(&self, record: &DNSRecord, _: &ClusterContext) -> Result<Outcome<DNSRecord>, ActuatorError> {
        let id = technical_id(record)?;
        let zone = zone_of(record)?;
        let key = record_key(&record.spec.name, record.spec.record_type);
        let value = render_record(record, &Self::owner(record), &id)?;
        ensure_namespace(&self.client, &self.namespace, BTreeMap::new(), COMPONENT).await?;
        self.edit(record, &zone, &key, Some(&value)).await?;
        let provider_status =
            json!({"configMap": format!("{}/{}", self.namespace, zone_config_map_name(&zone)), "key": key});
        Ok(Outcome::done()
            .with_state(json!({"zone": zone, "key": key}))
            .with_provider_status(provider_status)
            .with_status(move |s: &mut extension_sdk::api::extensions::DNSRecordStatus| s.zone = Some(zone)))
    }

    #[tracing::instrument(skip_all, fields(dnsrecord = %describe(record)))]
    async fn delete(&self, record: &DNSRecord, _: &ClusterContext) -> Result<(), ActuatorError> {
        // The zone the record was written to, even if the spec changed since.
        let zone = match record.status.as_ref().and_then(|s| s.zone.clone()) {
            Some(z) => z,
            None => zone_of(record)?,
        };
        let key = record_key(&record.spec.name, record.spec.record_type);
        Ok(self.edit(record, &zone, &key, None).await?)
    }

    // migrate keeps the record (it is what clients resolve); restore = reconcile rewrites the
    // same key under the same owner.
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::api::extensions::DNSRecordSpec;

    fn record(name: &str, t: DnsRecordType, values: &[&str], zone: Option<&str>) -> DNSRecord {
        let mut r = DNSRecord::new(
            "r",
            DNSRecordSpec {
                name: name.into(),
                record_type: t,
                values: values.iter().map(|v| v.to_string()).collect(),
                zone: zone.map(str::to_string),
                ttl: Some(60),
                ..Default::default()
            },
        );
        r.metadata.namespace = Some("shoot--dev--a".into());
        r
    }

    #[test]
    fn zone_from_spec_or_name() {
        assert_eq!(
            zone_of(&record("api.a.Example.com.", DnsRecordType::A, &["1.2.3.4"], None)).ok().as_deref(),
            Some("example.com")
        );
        assert_eq!(
            zone_of(&record("api.a.local.example", DnsRecordType::A, &["1.2.3.4"], Some("a.local.example")))
                .ok()
                .as_deref(),
            Some("a.local.example")
        );
        assert!(zone_of(&record("api.other", DnsRecordType::A, &["1.2.3.4"], Some("example.com"))).is_err());
        assert!(zone_of(&record("localhost", DnsRecordType::A, &["1.2.3.4"], None)).is_err());
    }

    #[test]
    fn keys_are_valid_configmap_keys() {
        assert_eq!(record_key("*.Ingress.a.example.com.", DnsRecordType::Cname), "_.ingress.a.example.com.CNAME");
        assert_eq!(record_key("api.a.example.com", DnsRecordType::Aaaa), "api.a.example.com.AAAA");
    }

    #[test]
    fn renders_each_type_and_validates_values() {
        let cases: &[(DnsRecordType, &[&str], Option<&str>)] = &[
            (
                DnsRecordType::A,
                &["10.0.0.1", "10.0.0.2"],
                Some("api.example.com. 60 IN A 10.0.0.1\napi.example.com. 60 IN A 10.0.0.2\n"),
            ),
            (DnsRecordType::Aaaa, &["fd00::1"], Some("api.example.com. 60 IN AAAA fd00::1\n")),
            (DnsRecordType::Cname, &["LB.example.net"], Some("api.example.com. 60 IN CNAME lb.example.net.\n")),
            (DnsRecordType::Txt, &["say \"hi\""], Some("api.example.com. 60 IN TXT \"say \\\"hi\\\"\"\n")),
            (DnsRecordType::A, &["fd00::1"], None),
            (DnsRecordType::Aaaa, &["10.0.0.1"], None),
            (DnsRecordType::Cname, &["a.example", "b.example"], None),
            (DnsRecordType::A, &[], None),
        ];
        for (t, values, want) in cases {
            let r = record("api.example.com", *t, values, None);
            let got = render_record(&r, "shoot--dev--a/r", "shoot--dev--a");
            match want {
                Some(body) => {
                    let got = got.unwrap_or_default();
                    assert_eq!(got, format!("; owner=shoot--dev--a/r technical-id=shoot--dev--a\n{body}"));
                    assert_eq!(owner_of(&got), Some("shoot--dev--a/r"));
                }
                None => assert!(got.is_err(), "{t:?} {values:?}"),
            }
        }
    }
}
