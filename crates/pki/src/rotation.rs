//! The two phases of a CA rotation (GEP-18), as functions from the existing secrets to a
//! [`Plan`]. Every configured CA rotates together.
//!
//! * **Phase one** ([`start`]): each CA `X` moves to `X-old` and a new `X` is created (for the
//!   cluster this means a new `ca` and a new client CA `ca-client`). Bundles (`X-bundle`) now
//!   hold new and old, so everything that verifies peers trusts both. Client certificates are
//!   re-issued by the new CAs; serving certificates stay signed by the old ones, which every
//!   client still trusts.
//! * Between the phases a normal [`manager::plan`](crate::manager::plan) keeps this state: it
//!   is idempotent, so ordinary reconciliations do not disturb a rotation.
//! * **Phase two** ([`complete`]): `X-old` is dropped, serving certificates are re-issued by
//!   the new CAs, and every bundle holds only the new CA. Clients that still present a
//!   certificate from an old CA are refused from then on.
//!
//! Keys rotate the same way, one at a time ([`Steps::keys`]): a service-account key or a random
//! value (the etcd encryption key) `K` moves to `K-old` and a new `K` is generated; the manager
//! keeps `K-old` byte for byte until phase two drops it. Which of the two signs or encrypts,
//! and which only verifies or decrypts, is for the component that uses them to say.
//!
//! [`rotate`] takes any combination of steps at once (Gardener's `rotate-credentials-*`).

use crate::config::{self, SecretConfig, old_name};
use crate::error::{Error, kind};
use crate::manager::{Plan, plan_against};
use crate::secret::{SecretSet, labels};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// Where a credential stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// No rotation in progress: one CA (or key) each.
    Idle,
    /// Phase one done: old and new are both trusted; waiting for phase two.
    Prepared,
}

/// One phase of a rotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Phase one: the new credential next to the old one.
    Start,
    /// Phase two: the old one dropped.
    Complete,
}

/// The rotation steps one plan takes: all CAs together, and keys by secret name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Steps {
    pub cas: Option<Step>,
    pub keys: BTreeMap<String, Step>,
}

impl Steps {
    pub fn is_empty(&self) -> bool {
        self.cas.is_none() && self.keys.is_empty()
    }
}

/// The rotation phase of `set` for the CAs in `configs`; an error when only some CAs are
/// mid-rotation (the set was changed by hand).
pub fn phase(configs: &[SecretConfig], set: &SecretSet) -> Result<Phase, Error> {
    let states: Vec<(&str, bool)> =
        config::cas(configs).map(|c| (c.name.as_str(), set.contains(&c.old_name()))).collect();
    match (states.iter().all(|(_, old)| *old), states.iter().any(|(_, old)| *old)) {
        (true, true) => Ok(Phase::Prepared),
        (_, false) => Ok(Phase::Idle),
        (false, true) => {
            let idle: Vec<&str> = states.iter().filter(|(_, old)| !old).map(|(n, _)| *n).collect();
            Err(Error::invalid(
                kind::ROTATION,
                &idle.join(", "),
                "not in progress while other CAs are mid-rotation; the secret set is inconsistent",
            ))
        }
    }
}

/// The rotation phase of the key `name` in `set`.
pub fn key_phase(set: &SecretSet, name: &str) -> Phase {
    if set.contains(&old_name(name)) { Phase::Prepared } else { Phase::Idle }
}

/// Phase one of the CAs: new CAs next to the old ones, bundles with both, clients re-issued.
pub fn start(configs: &[SecretConfig], existing: &SecretSet, now: SystemTime) -> Result<Plan, Error> {
    rotate(configs, existing, &Steps { cas: Some(Step::Start), ..Default::default() }, now)
}

/// Phase two of the CAs: old CAs dropped, serving certificates re-issued, bundles with the new
/// CAs only.
pub fn complete(configs: &[SecretConfig], existing: &SecretSet, now: SystemTime) -> Result<Plan, Error> {
    rotate(configs, existing, &Steps { cas: Some(Step::Complete), ..Default::default() }, now)
}

/// Plans the secrets with every step of `steps` taken; an error names the credential whose step
/// does not fit the set (a start while in progress, a completion before a start, a key that
/// is not configured as one).
pub fn rotate(configs: &[SecretConfig], existing: &SecretSet, steps: &Steps, now: SystemTime) -> Result<Plan, Error> {
    config::validate(configs)?;
    let mut working = existing.clone();
    match steps.cas {
        Some(Step::Start) => start_cas(configs, existing, &mut working)?,
        Some(Step::Complete) => complete_cas(configs, &mut working)?,
        None => {}
    }
    for (name, step) in &steps.keys {
        let is_key = configs.iter().any(|c| {
            matches!(c, SecretConfig::ServiceAccountKey(_) | SecretConfig::Random(_)) && c.name() == name.as_str()
        });
        if !is_key {
            return Err(Error::invalid(kind::KEY_ROTATION, name, "is not a configured key or random value"));
        }
        let old = old_name(name);
        match step {
            Step::Start => {
                if existing.contains(&old) {
                    return Err(Error::invalid(
                        kind::KEY_ROTATION,
                        name,
                        format!("already in progress ({old} exists); complete it first"),
                    ));
                }
                let Some(mut current) = working.remove(name) else {
                    return Err(Error::invalid(kind::KEY_ROTATION, name, "there is no key to rotate yet"));
                };
                current.name = old;
                working.insert(current);
            }
            Step::Complete => {
                if working.remove(&old).is_none() {
                    return Err(Error::invalid(
                        kind::KEY_ROTATION,
                        name,
                        format!("is not in progress ({old} does not exist); start it first"),
                    ));
                }
            }
        }
    }
    plan_against(configs, &working, existing, now)
}

fn start_cas(configs: &[SecretConfig], existing: &SecretSet, working: &mut SecretSet) -> Result<(), Error> {
    for ca in config::cas(configs) {
        let old_name = ca.old_name();
        if existing.contains(&old_name) {
            return Err(Error::invalid(
                kind::ROTATION,
                &ca.name,
                format!("already in progress ({old_name} exists); complete it first"),
            ));
        }
        let Some(mut current) = working.remove(&ca.name) else {
            return Err(Error::invalid(kind::ROTATION, &ca.name, "there is no CA to rotate yet"));
        };
        current.name = old_name;
        current.labels.insert(labels::CA.to_string(), ca.name.clone());
        working.insert(current);
    }
    Ok(())
}

fn complete_cas(configs: &[SecretConfig], working: &mut SecretSet) -> Result<(), Error> {
    for ca in config::cas(configs) {
        let old_name = ca.old_name();
        if working.remove(&old_name).is_none() {
            return Err(Error::invalid(
                kind::ROTATION,
                &ca.name,
                format!("is not in progress ({old_name} does not exist); start it first"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::{self, CertInfo};
    use crate::manager::{Action, plan};
    use crate::secret::data_keys;
    use crate::shoot_set::{ShootInputs, names, shoot_set};

    fn configs() -> Vec<SecretConfig> {
        shoot_set(&ShootInputs::new("shoot--p--s", "api.internal", "10.0.0.1".parse().unwrap()))
    }

    fn cert(set: &SecretSet, name: &str) -> CertInfo {
        let pem = set.value(name, data_keys::TLS_CERT).or_else(|| set.value(name, data_keys::CA_CERT)).unwrap();
        inspect::parse(pem).unwrap()
    }

    fn bundle_len(set: &SecretSet, ca: &str) -> usize {
        inspect::certificate_ders(set.value(&format!("{ca}-bundle"), data_keys::BUNDLE).unwrap()).unwrap().len()
    }

    const CLIENTS: [&str; 6] = [
        names::ETCD_CLIENT,
        names::FRONT_PROXY_CLIENT,
        names::KUBE_APISERVER_KUBELET,
        names::KUBECONFIG_ADMIN,
        names::KUBECONFIG_KUBE_CONTROLLER_MANAGER,
        names::KUBECONFIG_KUBE_SCHEDULER,
    ];
    const SERVERS: [&str; 2] = [names::KUBE_APISERVER, names::ETCD_SERVER];

    #[test]
    fn two_phases() {
        let configs = configs();
        let before = plan(&configs, &SecretSet::new(), SystemTime::now()).unwrap().secrets;
        assert_eq!(phase(&configs, &before).unwrap(), Phase::Idle);

        // Phase one.
        let one = start(&configs, &before, SystemTime::now()).unwrap();
        let mid = &one.secrets;
        assert_eq!(phase(&configs, mid).unwrap(), Phase::Prepared);
        for ca in [names::CA, names::CA_CLIENT, names::CA_ETCD, names::CA_FRONT_PROXY, names::CA_KUBELET] {
            assert_eq!(mid.get(&format!("{ca}-old")).unwrap().data, before.get(ca).unwrap().data, "{ca}");
            assert_ne!(mid.get(ca).unwrap().data, before.get(ca).unwrap().data, "{ca}");
            assert_eq!(bundle_len(mid, ca), 2, "{ca}");
            assert_eq!(one.actions[&format!("{ca}-old")], Action::Create);
        }
        for name in CLIENTS {
            assert!(matches!(one.actions[name], Action::Reissue { .. }), "{name}: {:?}", one.actions[name]);
            let signer = mid.get(name).unwrap().labels["pki.gardener.cloud/ca"].clone();
            assert!(inspect::signed_by(&cert(mid, name), &cert(mid, &signer)), "{name}");
        }
        for name in SERVERS {
            assert_eq!(one.actions[name], Action::Keep, "{name}");
            let signer = mid.get(name).unwrap().labels["pki.gardener.cloud/ca"].clone();
            assert!(inspect::signed_by(&cert(mid, name), &cert(mid, &format!("{signer}-old"))), "{name}");
        }
        let admin = mid.value(names::KUBECONFIG_ADMIN, data_keys::KUBECONFIG).unwrap();
        let v: serde_yaml::Value = serde_yaml::from_str(admin).unwrap();
        let ca_data = v["clusters"][0]["cluster"]["certificate-authority-data"].as_str().unwrap();
        use base64::Engine;
        let ca_bundle = base64::engine::general_purpose::STANDARD.decode(ca_data).unwrap();
        assert_eq!(std::str::from_utf8(&ca_bundle).unwrap(), mid.value("ca-bundle", data_keys::BUNDLE).unwrap());

        // Reconciling between the phases changes nothing.
        let again = plan(&configs, mid, SystemTime::now()).unwrap();
        assert!(again.changed().is_empty(), "{:?}", again.actions);
        assert!(start(&configs, mid, SystemTime::now()).unwrap_err().to_string().contains("already in progress"));

        // Phase two.
        let two = complete(&configs, mid, SystemTime::now()).unwrap();
        let after = &two.secrets;
        assert_eq!(phase(&configs, after).unwrap(), Phase::Idle);
        for ca in [names::CA, names::CA_CLIENT, names::CA_ETCD, names::CA_FRONT_PROXY, names::CA_KUBELET] {
            assert!(!after.contains(&format!("{ca}-old")));
            assert!(two.obsolete.contains(&format!("{ca}-old")), "{ca}");
            assert_eq!(after.get(ca).unwrap().data, mid.get(ca).unwrap().data);
            assert_eq!(bundle_len(after, ca), 1);
        }
        for name in SERVERS {
            assert!(matches!(two.actions[name], Action::Reissue { .. }), "{name}");
            let signer = after.get(name).unwrap().labels["pki.gardener.cloud/ca"].clone();
            assert!(inspect::signed_by(&cert(after, name), &cert(after, &signer)), "{name}");
        }
        for name in [names::ETCD_CLIENT, names::FRONT_PROXY_CLIENT, names::KUBE_APISERVER_KUBELET] {
            assert_eq!(two.actions[name], Action::Keep, "{name}");
        }
        // Kubeconfigs keep their certificates and drop the old CA from their bundle.
        assert!(matches!(two.actions[names::KUBECONFIG_ADMIN], Action::Update { .. }));
        assert_eq!(
            after.value(names::KUBECONFIG_ADMIN, data_keys::TLS_CERT),
            mid.value(names::KUBECONFIG_ADMIN, data_keys::TLS_CERT)
        );
        assert!(complete(&configs, after, SystemTime::now()).unwrap_err().to_string().contains("not in progress"));
    }

    #[test]
    fn keys_rotate_one_by_one_and_survive_the_shootstate() {
        use crate::shoot_set::names::{ETCD_ENCRYPTION_KEY, SERVICE_ACCOUNT_KEY};
        let configs = configs();
        let before = plan(&configs, &SecretSet::new(), SystemTime::now()).unwrap().secrets;
        let steps = |step| Steps {
            cas: None,
            keys: [(SERVICE_ACCOUNT_KEY.to_string(), step), (ETCD_ENCRYPTION_KEY.to_string(), step)].into(),
        };
        let one = rotate(&configs, &before, &steps(Step::Start), SystemTime::now()).unwrap();
        let mid = &one.secrets;
        for name in [SERVICE_ACCOUNT_KEY, ETCD_ENCRYPTION_KEY] {
            assert_eq!(key_phase(mid, name), Phase::Prepared, "{name}");
            assert_eq!(mid.get(&format!("{name}-old")).unwrap().data, before.get(name).unwrap().data, "{name}");
            assert_ne!(mid.get(name).unwrap().data, before.get(name).unwrap().data, "{name}");
            assert!(matches!(one.actions[name], Action::Reissue { .. }), "{name}");
        }
        assert_eq!(phase(&configs, mid).unwrap(), Phase::Idle, "the CAs are untouched");
        assert!(one.changed().iter().all(|n| n.starts_with(SERVICE_ACCOUNT_KEY) || n.starts_with(ETCD_ENCRYPTION_KEY)));

        // Between the phases, and after a restore from the ShootState, nothing changes.
        assert!(plan(&configs, mid, SystemTime::now()).unwrap().changed().is_empty());
        let state = crate::shootstate::export(&crate::shootstate::persistent(&configs, mid));
        let restored = crate::shootstate::import(&state).unwrap();
        assert!(restored.contains(&format!("{SERVICE_ACCOUNT_KEY}-old")));
        let again = plan(&configs, &restored, SystemTime::now()).unwrap().secrets;
        for name in [SERVICE_ACCOUNT_KEY, ETCD_ENCRYPTION_KEY] {
            assert_eq!(again.get(name).unwrap().data, mid.get(name).unwrap().data, "{name}");
            assert_eq!(again.get(&format!("{name}-old")).unwrap().data, before.get(name).unwrap().data, "{name}");
        }

        let two = rotate(&configs, mid, &steps(Step::Complete), SystemTime::now()).unwrap();
        for name in [SERVICE_ACCOUNT_KEY, ETCD_ENCRYPTION_KEY] {
            assert_eq!(key_phase(&two.secrets, name), Phase::Idle);
            assert!(two.obsolete.contains(&format!("{name}-old")), "{name}");
            assert_eq!(two.secrets.get(name).unwrap().data, mid.get(name).unwrap().data, "{name}");
        }
        assert_eq!(
            rotate(&configs, &two.secrets, &steps(Step::Complete), SystemTime::now()).unwrap_err().to_string(),
            "key rotation of etcd-encryption-key: is not in progress (etcd-encryption-key-old does not exist); start it first"
        );
        let not_a_key = Steps { cas: None, keys: [("ca".to_string(), Step::Start)].into() };
        assert!(
            rotate(&configs, &before, &not_a_key, SystemTime::now())
                .unwrap_err()
                .to_string()
                .contains("not a configured key")
        );
    }

    #[test]
    fn errors_name_the_ca() {
        let configs = configs();
        assert_eq!(
            start(&configs, &SecretSet::new(), SystemTime::now()).unwrap_err().to_string(),
            "CA rotation of ca: there is no CA to rotate yet"
        );
        let before = plan(&configs, &SecretSet::new(), SystemTime::now()).unwrap().secrets;
        assert_eq!(
            complete(&configs, &before, SystemTime::now()).unwrap_err().to_string(),
            "CA rotation of ca: is not in progress (ca-old does not exist); start it first"
        );
        let mut mixed = start(&configs, &before, SystemTime::now()).unwrap().secrets;
        mixed.remove("ca-etcd-old");
        assert!(phase(&configs, &mixed).unwrap_err().to_string().contains("ca-etcd"));
    }
}
