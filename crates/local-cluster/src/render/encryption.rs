//! kube-apiserver's `EncryptionConfiguration` (apiserver.config.k8s.io/v1): encryption at rest
//! in etcd for the resources that hold key material, serialized from typed structs with serde
//! (YAML).
//!
//! Every resource of [`ENCRYPTED_RESOURCES`] gets the providers `secretbox` (XSalsa20-Poly1305
//! with 32-byte keys; the first key encrypts, every key decrypts) and then `identity`, so objects
//! written before encryption was switched on stay readable until they are rewritten.
//!
//! The keys never appear in `Debug` output or errors: [`KeySecret`] prints as `<redacted>`, and
//! a file that does not parse is reported without serde's message (which may quote its text).

use crate::error::{Error, Result};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};

/// The resources kube-apiserver encrypts, as `<plural>.<group>` (core resources without a
/// group). Secrets; the garden's CRDs that carry key material (`ShootState`: gardenlet's CA and
/// other secrets and the extensions' state; `InternalSecret`: Secret-like data); and, since the
/// local cluster is the seed as well, the extension CRDs whose spec carries the shoot's
/// bootstrap token (`Worker.spec.pools[].userData`, `OperatingSystemConfig` inline files with
/// the bootstrap kubeconfig).
pub const ENCRYPTED_RESOURCES: [&str; 5] = [
    "secrets",
    "shootstates.core.gardener.cloud",
    "internalsecrets.core.gardener.cloud",
    "workers.extensions.gardener.cloud",
    "operatingsystemconfigs.extensions.gardener.cloud",
];

/// The length secretbox requires of a key.
pub const KEY_LEN: usize = 32;

/// The fields of `EncryptionConfiguration` the local cluster sets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionConfiguration {
    pub api_version: String,
    pub kind: String,
    pub resources: Vec<ResourceConfiguration>,
}

/// Resources and their providers, in order: the first encrypts, all decrypt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceConfiguration {
    pub resources: Vec<String>,
    pub providers: Vec<Provider>,
}

/// One provider; exactly one field is set. Other kinds (`aescbc`, `kms`, ...) are not
/// modelled: a file with them does not parse, and `up` leaves such a file alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provider {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secretbox: Option<Keys>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Empty>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    pub keys: Vec<Key>,
}

/// `identity: {}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// A named secretbox key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Key {
    pub name: String,
    pub secret: KeySecret,
}

/// A key's base64 text; `Debug` does not show it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct KeySecret(String);

impl std::fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl KeySecret {
    /// The base64 text of `bytes`.
    pub fn from_bytes(bytes: &[u8; KEY_LEN]) -> Self {
        Self(B64.encode(bytes))
    }

    /// Whether the text is base64 of exactly [`KEY_LEN`] bytes (kube-apiserver refuses to start
    /// otherwise).
    pub fn is_valid(&self) -> bool {
        B64.decode(&self.0).is_ok_and(|bytes| bytes.len() == KEY_LEN)
    }
}

impl Key {
    pub fn new(name: impl Into<String>, bytes: &[u8; KEY_LEN]) -> Self {
        Self { name: name.into(), secret: KeySecret::from_bytes(bytes) }
    }
}

/// The configuration for `keys` (the first one encrypts; rotation puts a new key first).
pub fn config(keys: &[Key]) -> EncryptionConfiguration {
    EncryptionConfiguration {
        api_version: "apiserver.config.k8s.io/v1".into(),
        kind: "EncryptionConfiguration".into(),
        resources: vec![ResourceConfiguration {
            resources: ENCRYPTED_RESOURCES.iter().map(|r| r.to_string()).collect(),
            providers: vec![
                Provider { secretbox: Some(Keys { keys: keys.to_vec() }), identity: None },
                Provider { secretbox: None, identity: Some(Empty {}) },
            ],
        }],
    }
}

/// [`config`] as YAML; at least one key, each valid and with a distinct name.
pub fn encryption_config(keys: &[Key]) -> Result<String> {
    check_keys(keys)?;
    serde_yaml::to_string(&config(keys))
        .map_err(|_| Error::Encryption("encoding the encryption configuration failed".into()))
}

fn check_keys(keys: &[Key]) -> Result<()> {
    if keys.is_empty() {
        return Err(Error::Encryption("no secretbox key".into()));
    }
    for (i, key) in keys.iter().enumerate() {
        if key.name.is_empty() || keys[..i].iter().any(|k| k.name == key.name) {
            return Err(Error::Encryption(format!("the key name {:?} is empty or not unique", key.name)));
        }
        if !key.secret.is_valid() {
            return Err(Error::Encryption(format!("the key {:?} is not base64 of {KEY_LEN} bytes", key.name)));
        }
    }
    Ok(())
}

/// The secretbox keys of a configuration this module wrote (possibly edited for a rotation),
/// in order; `None` when the text is not such a configuration (other providers, other resource
/// groups, invalid keys), which `up` then leaves as it is.
pub fn keys_of(text: &str) -> Option<Vec<Key>> {
    let parsed: EncryptionConfiguration = serde_yaml::from_str(text).ok()?;
    let [resources] = parsed.resources.as_slice() else { return None };
    let keys = match resources.providers.as_slice() {
        [Provider { secretbox: Some(keys), identity: None }, Provider { secretbox: None, identity: Some(_) }] => {
            keys.keys.clone()
        }
        _ => return None,
    };
    check_keys(&keys).ok()?;
    Some(keys)
}

/// `key-<yyyymmdd>` for the UTC day of `unix_seconds`.
pub fn key_name(unix_seconds: u64) -> String {
    let (y, m, d) = civil_from_days(unix_seconds / 86_400);
    format!("key-{y:04}{m:02}{d:02}")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's
/// `civil_from_days`, for days ≥ 0).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, byte: u8) -> Key {
        Key::new(name, &[byte; KEY_LEN])
    }

    #[test]
    fn the_config_lists_our_resources_with_secretbox_first_and_identity_last() {
        let keys = [key("key-20240102", 7)];
        let text = encryption_config(&keys).unwrap();
        let back: EncryptionConfiguration = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back, config(&keys));
        let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(yaml["apiVersion"].as_str(), Some("apiserver.config.k8s.io/v1"));
        assert_eq!(yaml["kind"].as_str(), Some("EncryptionConfiguration"));
        let resources = &yaml["resources"][0];
        let names: Vec<&str> =
            resources["resources"].as_sequence().unwrap().iter().filter_map(|v| v.as_str()).collect();
        for name in ["secrets", "shootstates.core.gardener.cloud", "internalsecrets.core.gardener.cloud"] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        let providers = resources["providers"].as_sequence().unwrap();
        assert_eq!(providers.len(), 2);
        assert_eq!(providers[0]["secretbox"]["keys"][0]["name"].as_str(), Some("key-20240102"));
        assert_eq!(providers[0]["secretbox"]["keys"][0]["secret"].as_str(), Some(B64.encode([7u8; 32]).as_str()));
        assert!(providers[0].get("identity").is_none());
        assert_eq!(providers[1]["identity"], serde_yaml::Value::Mapping(Default::default()));
        assert!(providers[1].get("secretbox").is_none());
    }

    #[test]
    fn keys_survive_a_round_trip_in_order_and_a_rotation_keeps_both() {
        let rotated = [key("key-20250101", 2), key("key-20240101", 1)];
        let text = encryption_config(&rotated).unwrap();
        assert_eq!(keys_of(&text), Some(rotated.to_vec()));
        // `up` rewrites the file from its keys only when the rendering differs: it does not.
        assert_eq!(encryption_config(&keys_of(&text).unwrap()).unwrap(), text);
    }

    #[test]
    fn files_we_do_not_understand_are_not_ours_to_rewrite() {
        assert_eq!(keys_of("not: [yaml"), None);
        let aescbc = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{name: k, secret: c2VjcmV0}]\n  - identity: {}\n";
        assert_eq!(keys_of(aescbc), None);
        let short_key = encryption_config(&[key("k", 1)]).unwrap().replace(&B64.encode([1u8; 32]), "c2hvcnQ=");
        assert_eq!(keys_of(&short_key), None);
    }

    #[test]
    fn invalid_key_sets_are_refused_without_showing_a_key() {
        assert!(encryption_config(&[]).is_err());
        assert!(encryption_config(&[key("a", 1), key("a", 2)]).is_err());
        let bad = Key { name: "bad".into(), secret: KeySecret("c2hvcnQ=".into()) };
        let error = encryption_config(&[bad]).unwrap_err().to_string();
        assert!(error.contains("bad") && !error.contains("c2hvcnQ="), "{error}");
    }

    #[test]
    fn debug_output_never_shows_a_key() {
        let keys = [key("key-1", 9)];
        let secret = B64.encode([9u8; 32]);
        for text in [format!("{keys:?}"), format!("{:?}", config(&keys)), format!("{:#?}", config(&keys))] {
            assert!(!text.contains(&secret), "{text}");
            assert!(text.contains("<redacted>") && text.contains("key-1"), "{text}");
        }
    }

    #[test]
    fn key_names_carry_the_utc_day() {
        assert_eq!(key_name(0), "key-19700101");
        assert_eq!(key_name(951_782_400), "key-20000229"); // leap day of a century leap year
        assert_eq!(key_name(1_709_251_199), "key-20240229"); // its last second
        assert_eq!(key_name(1_709_251_200), "key-20240301");
        assert_eq!(key_name(1_735_689_599), "key-20241231");
    }
}
