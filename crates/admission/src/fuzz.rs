//! Input generation and the property every input must satisfy, shared by the property test
//! (bounded, in every test run) and the throughput benchmark (a million inputs): take a valid
//! object's JSON, mutate it at random (values of the wrong type, out-of-range numbers, odd
//! strings, removed or added keys, duplicated list items), run decoding, defaulting and
//! validation, and check that nothing panics and every refusal is a field-path error.

use crate::identity::UserInfo;
use crate::review::{Admission, Endpoint, Request};
use kube::core::admission::Operation;
use serde_json::{Value, json};

/// A small deterministic PRNG (xorshift64*), so that a failing seed can be replayed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next_u64() % n as u64) as usize }
    }
}

const STRINGS: &[&str] = &[
    "",
    "local",
    "1.20",
    "1.20.2",
    "1.19.7",
    "v1.20.2",
    "1.2.3.4.5",
    "10.0.0.0/8",
    "100.96.0.0/11",
    "10.0.0.1/8",
    "fd00::/8",
    "::/0",
    "0.0.0.0/0",
    "-",
    "a--b",
    "UPPER",
    "é",
    "🦀",
    "IPTables",
    "IPVS",
    "evaluation",
    "infrastructure",
    "220000+0100",
    "250000+0000",
    "* * * * *",
    "0 0 * *",
    "50%",
    "101%",
    "-1",
    "true",
    "garden",
    "system:masters",
];

fn scalar(rng: &mut Rng) -> Value {
    match rng.below(9) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => json!(rng.next_u64() as i64),
        3 => json!(i64::from(rng.below(5) as i32 - 2)),
        4 => json!(i64::from(i32::MAX) + 1),
        5 => json!(f64::from(rng.below(1000) as u32) / 7.0),
        6 => Value::String("x".repeat(rng.below(300))),
        7 => json!({}),
        _ => Value::String(STRINGS[rng.below(STRINGS.len())].to_string()),
    }
}

/// Applies one random mutation somewhere in `v`.
fn mutate_once(v: &mut Value, rng: &mut Rng, depth: usize) {
    let descend = depth < 8 && rng.below(4) != 0;
    match v {
        Value::Object(map) if !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = &keys[rng.below(keys.len())];
            if descend && let Some(child) = map.get_mut(key) {
                return mutate_once(child, rng, depth + 1);
            }
            match rng.below(4) {
                0 => {
                    map.remove(key);
                }
                1 => {
                    map.insert(format!("{key}{}", rng.below(3)), scalar(rng));
                }
                _ => {
                    map.insert(key.clone(), scalar(rng));
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let i = rng.below(items.len());
            if descend {
                return mutate_once(&mut items[i], rng, depth + 1);
            }
            match rng.below(3) {
                0 => {
                    let dup = items[i].clone();
                    items.push(dup);
                }
                1 => {
                    items.remove(i);
                }
                _ => items[i] = scalar(rng),
            }
        }
        other => *other = scalar(rng),
    }
}

/// `base` with one to four random mutations.
pub fn mutate(base: &Value, seed: u64) -> Value {
    let mut rng = Rng::new(seed);
    let mut v = base.clone();
    for _ in 0..=rng.below(4) {
        mutate_once(&mut v, &mut rng, 0);
    }
    v
}

/// The property: for `object` as a new object and as an update of `old`, through the
/// mutating and the validating endpoint of `resource`, every refusal names a field path and
/// renders as `<path>: <reason>`. Returns a description of the first violation.
pub fn check(adm: &Admission, resource: &str, object: &Value, old: &Value) -> Result<usize, String> {
    let user = UserInfo::new("alice", &["system:authenticated"]);
    let mut refusals = 0;
    for (operation, old_object) in [(Operation::Create, None), (Operation::Update, Some(old.clone()))] {
        for endpoint in [Endpoint::Mutate, Endpoint::Validate] {
            let served = match endpoint {
                Endpoint::Mutate => crate::review::kinds::MUTATED,
                Endpoint::Validate => crate::review::kinds::VALIDATED,
            };
            if !served.contains(&resource) {
                continue;
            }
            let req = Request {
                operation: operation.clone(),
                namespace: Some("garden-dev"),
                user: user.clone(),
                object: Some(object.clone()),
                old_object: old_object.clone(),
            };
            let outcome = adm.decide(endpoint, resource, &req);
            for e in outcome.errors.iter() {
                let rendered = e.to_string();
                if e.path.as_str().is_empty() || !rendered.starts_with(&format!("{}: ", e.path)) {
                    return Err(format!("{endpoint:?} {operation:?}: not a field-path error: {rendered:?}"));
                }
            }
            refusals += usize::from(!outcome.errors.is_empty());
        }
    }
    Ok(refusals)
}

/// Valid starting points per resource: `(resource, object JSON)`.
pub fn corpus() -> Vec<(&'static str, Value)> {
    // The shoot as the validating webhook sees it: after the mutating one defaulted it.
    let mut shoot = crate::fixtures::shoot();
    let profile_spec = crate::fixtures::cloud_profile_spec();
    let ctx = crate::shoot::DefaultingContext { profile: Some(&profile_spec), seed: None, now: crate::fixtures::now() };
    crate::shoot::default_shoot(&mut shoot, ctx);
    let shoot = serde_json::to_value(shoot).unwrap_or(Value::Null);
    let profile = serde_json::to_value(crate::fixtures::cloud_profile()).unwrap_or(Value::Null);
    let mut out = vec![("shoots", shoot), ("cloudprofiles", profile)];
    out.push((
        "bastions",
        json!({"apiVersion": "operations.gardener.cloud/v1alpha1", "kind": "Bastion",
               "metadata": {"name": "b1", "namespace": "garden-dev", "annotations": {"gardener.cloud/created-by": "alice"}},
               "spec": {"shootRef": {"name": "demo"}, "sshPublicKey": "c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSU12UmpSMXpQWjBjTFVTMXBHRTRtRzRFL1pmWTRVcTBiazhyT2wzVEl3Q3ogdXNlckBob3N0", "ingress": [{"ipBlock": {"cidr": "1.2.3.4/32"}}]}}),
    ));
    out.push((
        "seeds",
        json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed", "metadata": {"name": "s"},
               "spec": {"provider": {"type": "local", "region": "local"}, "dns": {}, "taints": [{"key": "a"}],
                        "networks": {"pods": "10.1.0.0/16", "services": "10.2.0.0/16", "shootDefaults": {"pods": "10.3.0.0/16"}}}}),
    ));
    out.push((
        "projects",
        json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Project", "metadata": {"name": "dev"},
               "spec": {"namespace": "garden-dev", "members": [{"kind": "User", "name": "alice", "role": "admin", "roles": ["viewer"]}]}}),
    ));
    out.push((
        "secretbindings",
        json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "SecretBinding", "metadata": {"name": "b", "namespace": "garden-dev"},
               "secretRef": {"name": "creds"}, "provider": {"type": "local"}, "quotas": [{"name": "q"}]}),
    ));
    out.push((
        "managedseeds",
        json!({"apiVersion": "seedmanagement.gardener.cloud/v1alpha1", "kind": "ManagedSeed", "metadata": {"name": "m", "namespace": "garden"},
               "spec": {"shoot": {"name": "demo"}, "gardenlet": {}}}),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::RulesConfig;
    use std::sync::Arc;

    #[test]
    fn the_corpus_is_admitted_unchanged_apart_from_defaults() {
        let adm = Admission::new(Arc::new(crate::fixtures::garden_lookup()), RulesConfig::default())
            .with_clock(crate::fixtures::now);
        for (resource, v) in corpus() {
            let refusals = check(&adm, resource, &v, &v).unwrap();
            // Only the bastion and the managed seed are refused on create (their shoot is not in
            // the lookup); everything else is valid.
            assert_eq!(refusals, usize::from(matches!(resource, "bastions" | "managedseeds")), "{resource}");
        }
        assert_ne!(mutate(&corpus()[0].1, 1), corpus()[0].1);
        assert_eq!(mutate(&corpus()[0].1, 7), mutate(&corpus()[0].1, 7));
    }
}
