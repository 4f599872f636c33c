//! The ShootState form (GEP-7): secrets as `{name, type, data}` entries, stored in the garden so
//! a shoot's control plane can move to another seed and keep its CAs.
//!
//! * `type` is the Kubernetes Secret type (`Opaque`, `kubernetes.io/tls`).
//! * `data` maps each data key to the **standard base64** of its value, exactly like a
//!   Kubernetes Secret's `data` and like Go's JSON encoding of `map[string][]byte`.
//! * Labels are not part of the form. The manager does not need them: it recognises imported
//!   certificates by parsing them, and keeps CAs, service-account keys and random values as
//!   they are.
//!
//! [`persistent`] picks what must survive a migration: the CAs (and, mid-rotation, the previous
//! CAs), the service-account keys and random values. Certificates and bundles are derived from
//! those and may be re-created on the destination seed; [`export`] takes any set, so gardenlet
//! can store more if it wants.

use crate::config::{SecretConfig, old_name};
use crate::error::{Error, kind};
use crate::secret::{Secret, SecretSet};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One secret in the ShootState. `Debug` shows names and keys only.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShootStateEntry {
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
    /// Data key → standard base64 of the value.
    pub data: BTreeMap<String, String>,
}

impl std::fmt::Debug for ShootStateEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShootStateEntry")
            .field("name", &self.name)
            .field("type", &self.type_)
            .field("keys", &self.data.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The secrets of `set` that cannot be re-created without disruption: the configured CAs,
/// service-account keys and random values, and (mid-rotation) their `-old` predecessors.
pub fn persistent(configs: &[SecretConfig], set: &SecretSet) -> SecretSet {
    persistent_names(configs).iter().filter_map(|n| set.get(n).cloned()).collect()
}

/// The names [`persistent`] may return for `configs`, whether they exist now or not: an entry of
/// one of these names that is no longer in the set (a previous CA after a completed rotation)
/// must leave the ShootState too.
pub fn persistent_names(configs: &[SecretConfig]) -> Vec<String> {
    let mut names = Vec::new();
    for config in configs {
        match config {
            SecretConfig::Ca(_)
            | SecretConfig::ServiceAccountKey(_)
            | SecretConfig::Random(_)
            | SecretConfig::SshKeypair(_) => {
                names.extend([config.name().to_string(), old_name(config.name())]);
            }
            SecretConfig::Certificate(_) => {}
        }
    }
    names
}

/// Entries for every secret in `set`, sorted by name.
pub fn export(set: &SecretSet) -> Vec<ShootStateEntry> {
    set.iter()
        .map(|s| ShootStateEntry {
            name: s.name.clone(),
            type_: s.type_.clone(),
            data: s.data.iter().map(|(k, v)| (k.clone(), B64.encode(v))).collect(),
        })
        .collect()
}

/// The secrets of `entries` (without labels). Errors name the entry and key; values are never
/// quoted.
pub fn import(entries: &[ShootStateEntry]) -> Result<SecretSet, Error> {
    let mut set = SecretSet::new();
    for entry in entries {
        if set.contains(&entry.name) {
            return Err(Error::invalid(kind::SHOOTSTATE, &entry.name, "appears twice"));
        }
        let mut secret = Secret::new(&entry.name, &entry.type_);
        for (key, value) in &entry.data {
            let bytes = B64
                .decode(value)
                .map_err(|_| Error::invalid(kind::SHOOTSTATE, &entry.name, format!("data {key:?} is not base64")))?;
            let text = String::from_utf8(bytes).map_err(|_| {
                Error::invalid(kind::SHOOTSTATE, &entry.name, format!("data {key:?} is not UTF-8 text"))
            })?;
            secret.data.insert(key.clone(), text);
        }
        set.insert(secret);
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manager::{Action, plan};
    use crate::shoot_set::{ShootInputs, names, shoot_set};
    use std::time::SystemTime;

    fn configs(namespace: &str) -> Vec<SecretConfig> {
        shoot_set(&ShootInputs::new(namespace, "api.internal", "10.0.0.1".parse().unwrap()))
    }

    #[test]
    fn migrated_shoot_keeps_its_cas_and_service_account_key() {
        let source = plan(&configs("shoot--p--s"), &SecretSet::new(), SystemTime::now()).unwrap().secrets;
        let entries = export(&persistent(&configs("shoot--p--s"), &source));
        let json = serde_json::to_string(&entries).unwrap();
        // The stored form is base64, like a Secret's data.
        assert!(!json.contains("BEGIN") && json.contains("\"type\":\"Opaque\""));

        let imported = import(&serde_json::from_str::<Vec<ShootStateEntry>>(&json).unwrap()).unwrap();
        let destination = plan(&configs("shoot--p--s"), &imported, SystemTime::now()).unwrap();
        for name in [
            names::CA,
            names::CA_CLIENT,
            names::CA_ETCD,
            names::CA_FRONT_PROXY,
            names::CA_KUBELET,
            names::SERVICE_ACCOUNT_KEY,
        ] {
            assert_eq!(destination.secrets.get(name).unwrap().data, source.get(name).unwrap().data, "{name}");
            assert_eq!(destination.actions[name], Action::Keep, "{name}");
        }
        // Certificates are issued anew on the destination, by the same CAs.
        assert_eq!(destination.actions[names::KUBE_APISERVER], Action::Create);
        let ca = crate::inspect::parse(source.value(names::CA, "ca.crt").unwrap()).unwrap();
        let leaf = crate::inspect::parse(destination.secrets.value(names::KUBE_APISERVER, "tls.crt").unwrap()).unwrap();
        assert!(crate::inspect::signed_by(&leaf, &ca));
    }

    #[test]
    fn full_export_round_trips_and_is_kept_without_labels() {
        let source = plan(&configs("shoot--p--s"), &SecretSet::new(), SystemTime::now()).unwrap().secrets;
        let imported = import(&export(&source)).unwrap();
        assert!(imported.iter().all(|s| s.labels.is_empty()));
        let again = plan(&configs("shoot--p--s"), &imported, SystemTime::now()).unwrap();
        assert!(again.changed().is_empty(), "{:?}", again.actions);
        assert_eq!(again.secrets, source);
    }

    #[test]
    fn import_errors_name_entry_and_key() {
        let entry = |value: &str| ShootStateEntry {
            name: "ca".into(),
            type_: "Opaque".into(),
            data: BTreeMap::from([("ca.key".to_string(), value.to_string())]),
        };
        assert_eq!(
            import(&[entry("!!!")]).unwrap_err().to_string(),
            "ShootState entry ca: data \"ca.key\" is not base64"
        );
        assert_eq!(
            import(&[entry("/w==")]).unwrap_err().to_string(),
            "ShootState entry ca: data \"ca.key\" is not UTF-8 text"
        );
        assert_eq!(import(&[entry(""), entry("")]).unwrap_err().to_string(), "ShootState entry ca: appears twice");
        assert!(!format!("{:?}", entry("secret-bytes")).contains("secret-bytes"));
    }
}
