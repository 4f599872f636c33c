//! Deciding, for every configured secret, whether to create it, keep it byte for byte, or
//! re-issue it; and deriving the trust bundles. This is the "decide" step of gardenlet's
//! secret handling: it reads the existing secrets (as a [`SecretSet`]) and returns the full
//! desired set plus what happened to each secret.
//!
//! Rules:
//! * a CA, a service-account key or a random value that exists is kept, even when its config
//!   changed (that is reported as [`Action::KeepDespiteChange`]): replacing them breaks every
//!   peer, so only a [rotation](crate::rotation) replaces a CA;
//! * an existing secret of those kinds that cannot be read is an error, never a silent
//!   replacement;
//! * a certificate is kept when it matches its config (the checksum label, or, for secrets
//!   without labels such as those imported from a ShootState, its parsed subject, SANs, usages
//!   and key type), is signed by the CA that should sign it, and is not yet in the last fifth of
//!   its lifetime; otherwise it is re-issued with a new key;
//! * serving certificates (usage server or both) are signed by the previous CA while a
//!   rotation is in progress (`<ca>-old` exists) and by the current CA otherwise; client
//!   certificates always by the current CA. That one rule makes rotation phase one re-issue
//!   clients only and phase two re-issue servers;
//! * `<ca>-bundle` holds the current CA and, during a rotation, the previous one;
//! * kubeconfigs embed the bundle of the CA that signs the kube-apiserver, so they are
//!   re-rendered when the bundle changes, without touching the certificate.

use crate::config::{self, CertificateConfig, San, SecretConfig};
use crate::error::{Error, kind};
use crate::inspect::{self, CertInfo};
use crate::issue::{self, Issued, Signer};
use crate::keys;
use crate::kubeconfig::{self, Credentials};
use crate::secret::{Secret, SecretSet, data_keys as keys_, labels, secret_types};
use base64::Engine;
use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

/// What the plan does with one secret, compared with the existing secrets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// It did not exist.
    Create,
    /// Its data is unchanged (labels may have been added).
    Keep,
    /// A new certificate (and key) replaces the existing one.
    Reissue { reason: String },
    /// Derived data changed (a bundle, a kubeconfig); keys and certificates are unchanged.
    Update { reason: String },
    /// Kept as is although its config changed: CAs, service-account keys and random values are
    /// never replaced implicitly.
    KeepDespiteChange { reason: String },
}

/// The desired secrets and how they relate to the existing ones.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Every secret that should exist (configured secrets, bundles, previous CAs).
    pub secrets: SecretSet,
    pub actions: BTreeMap<String, Action>,
    /// Existing secrets that are no longer part of the set (e.g. a previous CA after a
    /// completed rotation).
    pub obsolete: Vec<String>,
}

impl Plan {
    /// Names whose action is not [`Action::Keep`].
    pub fn changed(&self) -> Vec<&str> {
        self.actions.iter().filter(|(_, a)| **a != Action::Keep).map(|(n, _)| n.as_str()).collect()
    }
}

/// Plans the secrets for `configs`, given the `existing` secrets, at time `now`.
pub fn plan(configs: &[SecretConfig], existing: &SecretSet, now: SystemTime) -> Result<Plan, Error> {
    plan_against(configs, existing, existing, now)
}

/// Plans from `working` (existing secrets, possibly rearranged by a rotation step) and reports
/// actions and obsolete secrets relative to `original` (what exists in the cluster).
pub(crate) fn plan_against(
    configs: &[SecretConfig],
    working: &SecretSet,
    original: &SecretSet,
    now: SystemTime,
) -> Result<Plan, Error> {
    config::validate(configs)?;
    let mut builder = Builder { working, out: SecretSet::new(), decisions: BTreeMap::new() };
    let mut cas = BTreeMap::new();
    for ca in config::cas(configs) {
        cas.insert(ca.name.clone(), builder.ca(ca, now)?);
    }
    for config in configs {
        match config {
            SecretConfig::Ca(_) => {}
            SecretConfig::Certificate(c) => builder.certificate(c, &cas, now)?,
            SecretConfig::ServiceAccountKey(c) => builder.service_account_key(c, config)?,
            SecretConfig::Random(c) => builder.random(c, config)?,
            SecretConfig::SshKeypair(c) => builder.ssh_keypair(c)?,
        }
    }
    Ok(builder.finish(original))
}

/// A CA as loaded for this plan: who signs clients and servers, and the bundle text.
struct CaState {
    current: Signer,
    old: Option<Signer>,
    bundle: String,
}

impl CaState {
    fn signer_for(&self, certificate: &CertificateConfig) -> &Signer {
        match &self.old {
            Some(old) if certificate.usage.server() => old,
            _ => &self.current,
        }
    }
}

/// Why a secret got its content, relative to `working`.
enum Decision {
    Created,
    Kept,
    Reissued(String),
    Updated(String),
    KeptDespiteChange(String),
}

struct Builder<'a> {
    working: &'a SecretSet,
    out: SecretSet,
    decisions: BTreeMap<String, Decision>,
}

impl Builder<'_> {
    fn put(&mut self, secret: Secret, decision: Decision) {
        self.decisions.insert(secret.name.clone(), decision);
        self.out.insert(secret);
    }

    fn ca(&mut self, ca: &config::CaConfig, now: SystemTime) -> Result<CaState, Error> {
        let checksum = config::checksum(&SecretConfig::Ca(ca.clone()));
        let (cert_pem, key_pem, decision, checksum_label) = match self.working.get(&ca.name) {
            Some(existing) => {
                let (cert, key) = ca_pems(existing, &ca.name)?;
                let loaded = Signer::load(&ca.name, cert, key)?;
                let same = match existing.labels.get(labels::CONFIG_CHECKSUM) {
                    Some(label) => *label == checksum,
                    None => loaded.info().common_name == ca.common_name && loaded.info().key == Some(ca.key),
                };
                if same {
                    (cert.to_string(), key.to_string(), Decision::Kept, checksum)
                } else {
                    let label = existing.labels.get(labels::CONFIG_CHECKSUM).cloned().unwrap_or_default();
                    let reason = "config changed; a CA is replaced only by a CA rotation".to_string();
                    (cert.to_string(), key.to_string(), Decision::KeptDespiteChange(reason), label)
                }
            }
            None => {
                let Issued { cert_pem, key_pem } = issue::ca(ca, now)?;
                (cert_pem, key_pem, Decision::Created, checksum)
            }
        };
        let current = Signer::load(&ca.name, &cert_pem, &key_pem)?;
        let mut secret = Secret::new(&ca.name, secret_types::OPAQUE)
            .with_data(keys_::CA_CERT, cert_pem)
            .with_data(keys_::CA_KEY, key_pem)
            .with_label(labels::KIND, "ca");
        if !checksum_label.is_empty() {
            secret = secret.with_label(labels::CONFIG_CHECKSUM, checksum_label);
        }
        self.put(secret, decision);

        let old_name = ca.old_name();
        let old = match self.working.get(&old_name) {
            Some(existing) => {
                let (cert, key) = ca_pems(existing, &old_name)?;
                let signer = Signer::load(&old_name, cert, key)?;
                let mut secret = Secret::new(&old_name, secret_types::OPAQUE)
                    .with_data(keys_::CA_CERT, cert)
                    .with_data(keys_::CA_KEY, key)
                    .with_label(labels::KIND, "ca")
                    .with_label(labels::CA, &ca.name);
                if let Some(label) = existing.labels.get(labels::CONFIG_CHECKSUM) {
                    secret = secret.with_label(labels::CONFIG_CHECKSUM, label);
                }
                self.put(secret, Decision::Kept);
                Some(signer)
            }
            None => None,
        };

        let mut bundle = pem_block(current.cert_pem());
        if let Some(old) = &old {
            bundle.push_str(&pem_block(old.cert_pem()));
        }
        let bundle_secret = Secret::new(ca.bundle_name(), secret_types::OPAQUE)
            .with_data(keys_::BUNDLE, bundle.clone())
            .with_label(labels::KIND, "ca-bundle")
            .with_label(labels::CA, &ca.name);
        let decision = match self.working.get(&ca.bundle_name()) {
            None => Decision::Created,
            Some(existing) if existing.data == bundle_secret.data => Decision::Kept,
            Some(_) => Decision::Updated("the CA bundle changed".into()),
        };
        self.put(bundle_secret, decision);
        Ok(CaState { current, old, bundle })
    }

    fn certificate(
        &mut self,
        c: &CertificateConfig,
        cas: &BTreeMap<String, CaState>,
        now: SystemTime,
    ) -> Result<(), Error> {
        let ca = cas.get(&c.ca).ok_or_else(|| {
            Error::invalid(kind::CERTIFICATE, &c.name, format!("signing CA {:?} is not configured", c.ca))
        })?;
        let signer = ca.signer_for(c);
        let checksum = config::checksum(&SecretConfig::Certificate(c.clone()));
        let existing = self.working.get(&c.name);
        let (cert_pem, key_pem, decision) = match existing.map(|e| keep_or_reissue(e, c, &checksum, signer, now)) {
            Some(Ok((cert, key))) => (cert, key, Decision::Kept),
            Some(Err(reason)) => {
                let Issued { cert_pem, key_pem } = signer.sign(c, now)?;
                (cert_pem, key_pem, Decision::Reissued(reason))
            }
            None => {
                let Issued { cert_pem, key_pem } = signer.sign(c, now)?;
                (cert_pem, key_pem, Decision::Created)
            }
        };
        let mut secret = Secret::new(&c.name, secret_types::TLS)
            .with_data(keys_::TLS_CERT, cert_pem.clone())
            .with_data(keys_::TLS_KEY, key_pem.clone())
            .with_label(labels::KIND, "certificate")
            .with_label(labels::CA, &c.ca)
            .with_label(labels::CONFIG_CHECKSUM, checksum);
        if let Some(spec) = &c.kubeconfig {
            let trust = cas.get(&spec.trust).ok_or_else(|| {
                Error::invalid(
                    kind::CERTIFICATE,
                    &c.name,
                    format!("kubeconfig trusts CA {:?}, which is not configured", spec.trust),
                )
            })?;
            let yaml = kubeconfig::render(
                &spec.cluster_name,
                &spec.server,
                &trust.bundle,
                Credentials::ClientCertificate { cert_pem: &cert_pem, key_pem: &key_pem },
            )?;
            secret = secret.with_data(keys_::KUBECONFIG, yaml);
        }
        let decision = match (decision, existing) {
            (Decision::Kept, Some(existing)) if existing.data != secret.data => {
                Decision::Updated("the kubeconfig was re-rendered (server or CA bundle changed)".into())
            }
            (d, _) => d,
        };
        self.put(secret, decision);
        Ok(())
    }

    fn service_account_key(&mut self, c: &config::ServiceAccountKeyConfig, config: &SecretConfig) -> Result<(), Error> {
        let checksum = config::checksum(config);
        let (private, public, decision, label) = match self.working.get(&c.name) {
            Some(existing) => {
                let missing = |key: &str| Error::existing(kind::SERVICE_ACCOUNT_KEY, &c.name, format!("has no {key}"));
                let private = existing.get(keys_::SA_KEY).ok_or_else(|| missing(keys_::SA_KEY))?;
                let public = existing.get(keys_::SA_PUB).ok_or_else(|| missing(keys_::SA_PUB))?;
                let key = keys::parse(private, kind::SERVICE_ACCOUNT_KEY, &c.name, keys_::SA_KEY)?;
                let same = match existing.labels.get(labels::CONFIG_CHECKSUM) {
                    Some(label) => *label == checksum,
                    None => keys::algorithm_of(&key) == Some(c.key),
                };
                if same {
                    (private.to_string(), public.to_string(), Decision::Kept, checksum)
                } else {
                    let label = existing.labels.get(labels::CONFIG_CHECKSUM).cloned().unwrap_or_default();
                    let reason = "key type changed; replacing it would invalidate every service-account token".into();
                    (private.to_string(), public.to_string(), Decision::KeptDespiteChange(reason), label)
                }
            }
            None => {
                let key = keys::generate(c.key, kind::SERVICE_ACCOUNT_KEY, &c.name)?;
                (key.serialize_pem(), key.public_key_pem(), Decision::Created, checksum)
            }
        };
        let mut secret = Secret::new(&c.name, secret_types::OPAQUE)
            .with_data(keys_::SA_KEY, private)
            .with_data(keys_::SA_PUB, public)
            .with_label(labels::KIND, "service-account-key");
        if !label.is_empty() {
            secret = secret.with_label(labels::CONFIG_CHECKSUM, label);
        }
        self.put(secret, decision);
        self.keep_previous(&c.name);
        Ok(())
    }

    /// Keeps `<name>-old`, the previous key during a key rotation, byte for byte.
    fn keep_previous(&mut self, name: &str) {
        if let Some(previous) = self.working.get(&config::old_name(name)) {
            self.put(previous.clone(), Decision::Kept);
        }
    }

    fn random(&mut self, c: &config::RandomConfig, config: &SecretConfig) -> Result<(), Error> {
        let checksum = config::checksum(config);
        let b64 = base64::engine::general_purpose::STANDARD;
        let (value, decision, label) = match self.working.get(&c.name) {
            Some(existing) => {
                let value = existing
                    .get(keys_::VALUE)
                    .ok_or_else(|| Error::existing(kind::RANDOM, &c.name, format!("has no {}", keys_::VALUE)))?;
                let len = b64
                    .decode(value)
                    .map(|v| v.len())
                    .map_err(|_| Error::existing(kind::RANDOM, &c.name, format!("{} is not base64", keys_::VALUE)))?;
                if len == c.bytes {
                    (value.to_string(), Decision::Kept, checksum)
                } else {
                    let label = existing.labels.get(labels::CONFIG_CHECKSUM).cloned().unwrap_or_default();
                    let reason = format!("configured size is {} bytes but the value has {len}", c.bytes);
                    (value.to_string(), Decision::KeptDespiteChange(reason), label)
                }
            }
            None => {
                let mut bytes = vec![0u8; c.bytes];
                keys::random_bytes(&mut bytes, kind::RANDOM, &c.name)?;
                (b64.encode(bytes), Decision::Created, checksum)
            }
        };
        let mut secret = Secret::new(&c.name, secret_types::OPAQUE)
            .with_data(keys_::VALUE, value)
            .with_label(labels::KIND, "random");
        if !label.is_empty() {
            secret = secret.with_label(labels::CONFIG_CHECKSUM, label);
        }
        self.put(secret, decision);
        self.keep_previous(&c.name);
        Ok(())
    }

    /// Keeps the pair made for `c.rotation`; otherwise (a new rotation) moves it to
    /// `<name>-old`, replacing the previous one, and generates a new pair.
    fn ssh_keypair(&mut self, c: &config::SshKeypairConfig) -> Result<(), Error> {
        let old_name = config::old_name(&c.name);
        if let Some(existing) = self.working.get(&c.name) {
            keys::check_ssh_keypair(existing, &c.name)?;
            if existing.get(keys_::SSH_ROTATION).unwrap_or_default() == c.rotation {
                self.put(existing.clone(), Decision::Kept);
                self.keep_previous(&c.name);
                return Ok(());
            }
            let mut previous = existing.clone();
            previous.name = old_name;
            self.put(previous, Decision::Kept);
            let secret = keys::ssh_keypair(&c.name, &c.rotation)?;
            self.put(secret, Decision::Reissued(format!("key-pair rotation {:?}", c.rotation)));
            return Ok(());
        }
        let secret = keys::ssh_keypair(&c.name, &c.rotation)?;
        self.put(secret, Decision::Created);
        self.keep_previous(&c.name);
        Ok(())
    }

    fn finish(self, original: &SecretSet) -> Plan {
        let mut actions = BTreeMap::new();
        for (name, decision) in self.decisions {
            let new = self.out.get(&name);
            let action = match (original.get(&name), new) {
                (None, _) => Action::Create,
                (Some(old), Some(new)) if old.data == new.data => match decision {
                    Decision::KeptDespiteChange(reason) => Action::KeepDespiteChange { reason },
                    _ => Action::Keep,
                },
                (Some(_), _) => match decision {
                    Decision::Reissued(reason) => Action::Reissue { reason },
                    Decision::Updated(reason) => Action::Update { reason },
                    Decision::KeptDespiteChange(reason) => Action::KeepDespiteChange { reason },
                    // Not in the working set but in the cluster: a rotation step moved it away.
                    Decision::Created => Action::Reissue { reason: "replaced by a rotation".into() },
                    Decision::Kept => Action::Update { reason: "moved by a rotation".into() },
                },
            };
            actions.insert(name, action);
        }
        let wanted: BTreeSet<&str> = self.out.names().collect();
        let obsolete = original.names().filter(|n| !wanted.contains(n)).map(str::to_string).collect();
        Plan { secrets: self.out, actions, obsolete }
    }
}

fn ca_pems<'s>(secret: &'s Secret, name: &str) -> Result<(&'s str, &'s str), Error> {
    let get = |key: &str| secret.get(key).ok_or_else(|| Error::existing(kind::CA, name, format!("has no {key}")));
    Ok((get(keys_::CA_CERT)?, get(keys_::CA_KEY)?))
}

/// A PEM block ending in exactly one newline, for concatenation into bundles.
fn pem_block(pem: &str) -> String {
    format!("{}\n", pem.trim_end())
}

/// The existing certificate and key when they can stay; otherwise why they must be re-issued.
fn keep_or_reissue(
    existing: &Secret,
    c: &CertificateConfig,
    checksum: &str,
    signer: &Signer,
    now: SystemTime,
) -> Result<(String, String), String> {
    let cert = existing.get(keys_::TLS_CERT).ok_or_else(|| format!("{} is missing", keys_::TLS_CERT))?;
    let key_pem = existing.get(keys_::TLS_KEY).ok_or_else(|| format!("{} is missing", keys_::TLS_KEY))?;
    let info = inspect::parse(cert).map_err(|p| format!("{} {p}", keys_::TLS_CERT))?;
    let key = rcgen::KeyPair::from_pem(key_pem).map_err(|_| format!("{} is not a PKCS#8 PEM key", keys_::TLS_KEY))?;
    if key.public_key_raw() != info.public_key_raw.as_slice() {
        return Err(format!("{} does not belong to {}", keys_::TLS_KEY, keys_::TLS_CERT));
    }
    match existing.labels.get(labels::CONFIG_CHECKSUM) {
        Some(label) if label != checksum => return Err("its config changed".into()),
        Some(_) => {}
        None => differs_from_config(&info, c).map_or(Ok(()), Err)?,
    }
    if !inspect::signed_by(&info, signer.info()) {
        return Err(format!("it is not signed by the CA that signs it now ({})", signer_name(c, signer)));
    }
    let lifetime = info.not_after - info.not_before;
    let renew_at = info.not_after - lifetime / 5;
    if inspect::unix_seconds(now) >= renew_at {
        return Err(format!(
            "it expires at {} (renewal starts in the last fifth of its lifetime)",
            inspect::rfc3339(info.not_after)
        ));
    }
    Ok((cert.to_string(), key_pem.to_string()))
}

fn signer_name(c: &CertificateConfig, signer: &Signer) -> String {
    format!("{} \"{}\"", c.ca, signer.info().common_name)
}

/// For secrets without a checksum label: the first difference between certificate and config.
fn differs_from_config(info: &CertInfo, c: &CertificateConfig) -> Option<String> {
    if info.common_name != c.common_name {
        return Some(format!("its common name {:?} differs from the config", info.common_name));
    }
    let want_o: BTreeSet<String> = c.organization.iter().cloned().collect();
    if info.organizations != want_o {
        return Some("its organization differs from the config".into());
    }
    let want_sans: BTreeSet<San> = c.parsed_sans().map(|s| s.into_iter().collect()).unwrap_or_default();
    if info.sans != want_sans {
        return Some("its SANs differ from the config".into());
    }
    if info.server_auth != c.usage.server() || info.client_auth != c.usage.client() {
        return Some("its key usages differ from the config".into());
    }
    if info.key != Some(c.key) {
        return Some("its key type differs from the config".into());
    }
    None
}

#[cfg(test)]
mod tests;
