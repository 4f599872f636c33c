//! Issuing certificates with rcgen: self-signed CAs and leaves signed by a loaded CA. Subjects,
//! key usages and extensions follow kubeadm: CAs are `CA:TRUE` with `keyCertSign`; leaves are
//! `CA:FALSE` with `digitalSignature` (plus `keyEncipherment` for RSA keys) and `serverAuth`
//! and/or `clientAuth`; every certificate gets a random 128-bit serial, a subject key
//! identifier, and leaves an authority key identifier, so a client trusting an old and a new
//! CA with the same name during a rotation picks the right one.

use crate::config::{CaConfig, CertificateConfig, San};
use crate::error::{Error, kind};
use crate::inspect::{self, CertInfo};
use crate::keys;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;

/// Certificates start this long before "now", so a peer whose clock is slightly behind
/// accepts them at once.
pub(crate) const BACKDATE: Duration = Duration::from_secs(60);

/// A certificate and its private key, both PEM.
pub(crate) struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued").field("cert_pem", &self.cert_pem).field("key_pem", &"<redacted>").finish()
    }
}

fn validity(
    kind: &'static str,
    name: &str,
    now: SystemTime,
    validity: Duration,
) -> Result<(OffsetDateTime, OffsetDateTime), Error> {
    let now = OffsetDateTime::from(now);
    let span = |d: Duration| time::Duration::try_from(d).ok();
    let not_before = span(BACKDATE).and_then(|d| now.checked_sub(d));
    let not_after = span(validity).and_then(|d| now.checked_add(d));
    match (not_before, not_after) {
        (Some(b), Some(a)) => Ok((b, a)),
        _ => Err(Error::invalid(kind, name, "validity does not fit a certificate date")),
    }
}

fn distinguished_name(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    if let Some(o) = organization {
        dn.push(DnType::OrganizationName, o);
    }
    dn.push(DnType::CommonName, common_name);
    dn
}

/// A new self-signed CA.
pub(crate) fn ca(config: &CaConfig, now: SystemTime) -> Result<Issued, Error> {
    let name = config.name.as_str();
    let key = keys::generate(config.key, kind::CA, name)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = distinguished_name(&config.common_name, None);
    (params.not_before, params.not_after) = validity(kind::CA, name, now, config.validity)?;
    params.serial_number = Some(keys::serial_number(kind::CA, name)?);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let cert = params.self_signed(&key).map_err(Error::generate(kind::CA, name, "self-signing the CA certificate"))?;
    Ok(Issued { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// A loaded CA that signs leaves.
pub(crate) struct Signer {
    name: String,
    issuer: Issuer<'static, KeyPair>,
    info: CertInfo,
    cert_pem: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Signer {
    /// Loads a CA from its PEMs, checking that it is a CA and that the key belongs to it.
    pub(crate) fn load(name: &str, cert_pem: &str, key_pem: &str) -> Result<Self, Error> {
        use crate::secret::data_keys::{CA_CERT, CA_KEY};
        let info = inspect::parse(cert_pem).map_err(|p| Error::existing(kind::CA, name, format!("{CA_CERT} {p}")))?;
        if !info.is_ca {
            return Err(Error::existing(kind::CA, name, format!("{CA_CERT} is not a CA certificate")));
        }
        let key = keys::parse(key_pem, kind::CA, name, CA_KEY)?;
        if key.public_key_raw() != info.public_key_raw.as_slice() {
            return Err(Error::existing(kind::CA, name, format!("{CA_KEY} does not belong to {CA_CERT}")));
        }
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)
            .map_err(|_| Error::existing(kind::CA, name, format!("{CA_CERT} cannot be used as an issuer")))?;
        Ok(Self { name: name.to_string(), issuer, info, cert_pem: cert_pem.to_string() })
    }

    pub(crate) fn info(&self) -> &CertInfo {
        &self.info
    }

    pub(crate) fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// Issues the certificate `config` describes, with a new key. The certificate ends no
    /// later than the CA does.
    pub(crate) fn sign(&self, config: &CertificateConfig, now: SystemTime) -> Result<Issued, Error> {
        let key = keys::generate(config.key, kind::CERTIFICATE, &config.name)?;
        let cert_pem = self.sign_public_key(config, &key, config.key.rsa_bits().is_some(), now)?;
        Ok(Issued { cert_pem, key_pem: key.serialize_pem() })
    }

    /// Issues the certificate `config` describes for a key whose private half someone else
    /// holds (`rsa` adds `keyEncipherment`, as for RSA keys generated here). Returns the PEM.
    pub(crate) fn sign_public_key(
        &self,
        config: &CertificateConfig,
        public_key: &impl rcgen::PublicKeyData,
        rsa: bool,
        now: SystemTime,
    ) -> Result<String, Error> {
        let name = config.name.as_str();
        let sans = config.parsed_sans()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = distinguished_name(&config.common_name, config.organization.as_deref());
        let (not_before, not_after) = validity(kind::CERTIFICATE, name, now, config.validity)?;
        let ca_end = OffsetDateTime::from_unix_timestamp(self.info.not_after).unwrap_or(not_after);
        params.not_before = not_before;
        params.not_after = not_after.min(ca_end);
        params.serial_number = Some(keys::serial_number(kind::CERTIFICATE, name)?);
        params.is_ca = IsCa::ExplicitNoCa;
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        if rsa {
            params.key_usages.push(KeyUsagePurpose::KeyEncipherment);
        }
        if config.usage.server() {
            params.extended_key_usages.push(ExtendedKeyUsagePurpose::ServerAuth);
        }
        if config.usage.client() {
            params.extended_key_usages.push(ExtendedKeyUsagePurpose::ClientAuth);
        }
        for san in sans {
            params.subject_alt_names.push(match san {
                San::Ip(ip) => SanType::IpAddress(ip),
                San::Dns(dns) => SanType::DnsName(dns.try_into().map_err(Error::generate(
                    kind::CERTIFICATE,
                    name,
                    "encoding a DNS SAN",
                ))?),
            });
        }
        let cert = params.signed_by(public_key, &self.issuer).map_err(Error::generate(
            kind::CERTIFICATE,
            name,
            "signing the certificate",
        ))?;
        Ok(cert.pem())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{KeyAlgorithm, Usage};

    fn loaded_ca(key: KeyAlgorithm) -> Signer {
        let issued = ca(&CaConfig::new("ca", "kubernetes").with_key(key), SystemTime::now()).unwrap();
        Signer::load("ca", &issued.cert_pem, &issued.key_pem).unwrap()
    }

    #[test]
    fn leaf_has_kubeadm_shape() {
        let signer = loaded_ca(KeyAlgorithm::EcdsaP256);
        let config =
            CertificateConfig::new("kube-apiserver-kubelet", "ca", "kube-apiserver-kubelet-client", Usage::Client)
                .with_organization("system:masters");
        let leaf = signer.sign(&config, SystemTime::now()).unwrap();
        let info = inspect::parse(&leaf.cert_pem).unwrap();
        assert_eq!(info.common_name, "kube-apiserver-kubelet-client");
        assert_eq!(info.organizations.iter().collect::<Vec<_>>(), vec!["system:masters"]);
        assert!(info.client_auth && !info.server_auth && !info.is_ca);
        assert!(inspect::signed_by(&info, signer.info()));
        assert!(leaf.key_pem.contains("PRIVATE KEY"));
        assert!(!format!("{leaf:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn serving_sans_and_validity() {
        let signer = loaded_ca(KeyAlgorithm::EcdsaP256);
        let now = SystemTime::now();
        let config = CertificateConfig::new("s", "ca", "s", Usage::ServerAndClient)
            .with_sans(["etcd-main-client", "127.0.0.1", "::1", "*.etcd-main-peer"])
            .with_validity(Duration::from_secs(3600));
        let info = inspect::parse(&signer.sign(&config, now).unwrap().cert_pem).unwrap();
        assert!(info.server_auth && info.client_auth);
        assert_eq!(info.sans.len(), 4);
        assert!(info.sans.contains(&San::Ip("127.0.0.1".parse().unwrap())));
        assert!(info.sans.contains(&San::Dns("*.etcd-main-peer".into())));
        let now_s = now.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs() as i64;
        assert_eq!(info.not_before, now_s - 60);
        assert_eq!(info.not_after, now_s + 3600);
    }

    #[test]
    fn leaf_never_outlives_its_ca() {
        let issued =
            ca(&CaConfig::new("ca", "short").with_validity(Duration::from_secs(100)), SystemTime::now()).unwrap();
        let signer = Signer::load("ca", &issued.cert_pem, &issued.key_pem).unwrap();
        let leaf = signer.sign(&CertificateConfig::new("c", "ca", "c", Usage::Client), SystemTime::now()).unwrap();
        assert_eq!(inspect::parse(&leaf.cert_pem).unwrap().not_after, signer.info().not_after);
    }

    #[test]
    fn rsa_ca_signs_rsa_leaf() {
        let signer = loaded_ca(KeyAlgorithm::Rsa2048);
        let config = CertificateConfig::new("c", "ca", "c", Usage::Client).with_key(KeyAlgorithm::Rsa2048);
        let info = inspect::parse(&signer.sign(&config, SystemTime::now()).unwrap().cert_pem).unwrap();
        assert_eq!(info.key, Some(KeyAlgorithm::Rsa2048));
        assert!(inspect::signed_by(&info, signer.info()));
    }

    #[test]
    fn mismatched_ca_key_is_refused() {
        let a = ca(&CaConfig::new("ca", "a"), SystemTime::now()).unwrap();
        let b = ca(&CaConfig::new("ca", "b"), SystemTime::now()).unwrap();
        let err = Signer::load("ca", &a.cert_pem, &b.key_pem).unwrap_err().to_string();
        assert_eq!(err, "CA ca: existing secret ca.key does not belong to ca.crt");
        let err = Signer::load("ca", "garbage", &b.key_pem).unwrap_err().to_string();
        assert_eq!(err, "CA ca: existing secret ca.crt holds no PEM certificate");
    }
}
