//! Seed validation: provider, networks (valid, disjoint, and disjoint from the shoot default
//! networks), taints, DNS names; networks and backup location immutable.

use crate::common::{cidr, disjoint, dns_label, dns_subdomain, immutable, immutable_str};
use crate::field::{ErrorList, FieldError, Path};
use api::core::Seed;
use std::collections::BTreeSet;

/// Every rule for a new or updated seed (`old` on update).
pub fn validate(seed: &Seed, old: Option<&Seed>) -> ErrorList {
    let mut errs = ErrorList::default();
    errs.0.extend(dns_label(&Path::new("metadata").child("name"), seed.metadata.name.as_deref().unwrap_or(""), 63));
    let sp = Path::new("spec");
    let spec = &seed.spec;
    if spec.provider.type_.is_empty() {
        errs.push(FieldError::required(sp.child("provider").child("type"), ""));
    }
    if spec.provider.region.is_empty() {
        errs.push(FieldError::required(sp.child("provider").child("region"), ""));
    }
    let np = sp.child("networks");
    let n = &spec.networks;
    let mut nets = Vec::new();
    for (field, value) in [("pods", Some(&n.pods)), ("services", Some(&n.services)), ("nodes", n.nodes.as_ref())] {
        match value {
            Some(v) if !v.is_empty() => match cidr(&np.child(field), v) {
                Ok(net) => nets.push((np.child(field), net)),
                Err(e) => errs.push(e),
            },
            Some(_) => errs.push(FieldError::required(np.child(field), "")),
            None => {}
        }
    }
    errs.extend(disjoint(&nets));
    if let Some(d) = &n.shoot_defaults {
        let dp = np.child("shootDefaults");
        let mut defaults = Vec::new();
        for (field, value) in [("pods", &d.pods), ("services", &d.services)] {
            if let Some(v) = value {
                match cidr(&dp.child(field), v) {
                    Ok(net) => defaults.push((dp.child(field), net)),
                    Err(e) => errs.push(e),
                }
            }
        }
        // Shoots get these networks; they must not collide with the seed's own.
        for (p, net) in &defaults {
            for (sp_, snet) in &nets {
                if crate::common::overlap(net, snet) {
                    errs.push(FieldError::invalid(
                        p.clone(),
                        &net.to_string(),
                        format!("must not overlap with {sp_} ({snet})"),
                    ));
                }
            }
        }
        errs.extend(disjoint(&defaults));
    }
    let mut keys = BTreeSet::new();
    for (i, t) in spec.taints.iter().enumerate() {
        let p = sp.child("taints").index(i).child("key");
        if t.key.is_empty() {
            errs.push(FieldError::required(p, ""));
        } else if !keys.insert(t.key.as_str()) {
            errs.push(FieldError::duplicate(p, &t.key));
        }
    }
    if let Some(d) = &spec.dns.ingress_domain {
        errs.0.extend(dns_subdomain(&sp.child("dns").child("ingressDomain"), d));
    }
    if let Some(i) = &spec.ingress {
        errs.0.extend(dns_subdomain(&sp.child("ingress").child("domain"), &i.domain));
    }
    if let Some(old) = old {
        let o = &old.spec.networks;
        errs.0.extend(immutable_str(&np.child("pods"), Some(&n.pods), Some(&o.pods)));
        errs.0.extend(immutable_str(&np.child("services"), Some(&n.services), Some(&o.services)));
        if o.nodes.is_some() {
            errs.0.extend(immutable_str(&np.child("nodes"), n.nodes.as_deref(), o.nodes.as_deref()));
        }
        if let Some(ob) = &old.spec.backup {
            let nb = spec.backup.clone().unwrap_or_default();
            errs.0.extend(immutable(&sp.child("backup").child("provider"), &nb.provider, &ob.provider));
            errs.0.extend(immutable(&sp.child("backup").child("region"), &nb.region, &ob.region));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::core::SeedSpec;
    use api::core::seed::{SeedNetworks, SeedProvider, SeedTaint, ShootNetworks};

    fn seed() -> Seed {
        Seed::new(
            "seed-a",
            SeedSpec {
                provider: SeedProvider { type_: "local".into(), region: "local".into(), ..Default::default() },
                networks: SeedNetworks {
                    pods: "10.1.0.0/16".into(),
                    services: "10.2.0.0/16".into(),
                    nodes: Some("10.3.0.0/16".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
    }

    type Mutation = fn(&mut Seed);

    #[test]
    fn rules() {
        let cases: Vec<(&str, Mutation, Option<&str>)> = vec![
            ("valid", |_| {}, None),
            ("no provider type", |s| s.spec.provider.type_ = String::new(), Some("spec.provider.type: Required value")),
            ("no region", |s| s.spec.provider.region = String::new(), Some("spec.provider.region: Required value")),
            ("bad pods", |s| s.spec.networks.pods = "x".into(), Some("spec.networks.pods: Invalid value: \"x\"")),
            (
                "no services",
                |s| s.spec.networks.services = String::new(),
                Some("spec.networks.services: Required value"),
            ),
            (
                "overlap",
                |s| s.spec.networks.services = "10.1.128.0/17".into(),
                Some(
                    "spec.networks.services: Invalid value: \"10.1.128.0/17\": must not overlap with spec.networks.pods",
                ),
            ),
            (
                "shoot defaults overlap",
                |s| {
                    s.spec.networks.shoot_defaults =
                        Some(ShootNetworks { pods: Some("10.0.0.0/8".into()), services: None })
                },
                Some(
                    "spec.networks.shootDefaults.pods: Invalid value: \"10.0.0.0/8\": must not overlap with spec.networks.pods",
                ),
            ),
            (
                "duplicate taint",
                |s| {
                    s.spec.taints =
                        vec![SeedTaint { key: "a".into(), value: None }, SeedTaint { key: "a".into(), value: None }]
                },
                Some("spec.taints[1].key: Duplicate value: \"a\""),
            ),
            (
                "bad ingress domain",
                |s| s.spec.dns.ingress_domain = Some("A.b".into()),
                Some("spec.dns.ingressDomain: Invalid value: \"A.b\""),
            ),
            ("bad name", |s| s.metadata.name = Some("Seed".into()), Some("metadata.name: Invalid value: \"Seed\"")),
        ];
        for (name, mutate, want) in cases {
            let mut s = seed();
            mutate(&mut s);
            let errs = validate(&s, None);
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs}"),
                Some(w) => assert!(errs.iter().any(|e| e.to_string().starts_with(w)), "{name}: want {w:?}, got {errs}"),
            }
        }
    }

    #[test]
    fn networks_are_immutable() {
        let old = seed();
        let mut new = seed();
        new.spec.networks.pods = "10.4.0.0/16".into();
        assert!(
            validate(&new, Some(&old))
                .to_string()
                .contains("spec.networks.pods: Invalid value: \"10.4.0.0/16\": field is immutable")
        );
        let mut new = seed();
        new.spec.taints.push(SeedTaint { key: "k".into(), value: None });
        assert!(validate(&new, Some(&old)).is_empty());
    }
}
