//! The webhook server's own PKI: a self-signed CA and a serving certificate for the names and
//! addresses the API server uses to reach it (ECDSA P-256, generated in memory, never written
//! to disk or logged), the decision when to rotate, and a rustls certificate resolver whose
//! certificate can be swapped while the server runs.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType,
};
use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use time::OffsetDateTime;

/// Why certificates could not be made or loaded.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("generating the webhook {what}")]
    Generate {
        what: &'static str,
        #[source]
        source: rcgen::Error,
    },
    #[error("the validity {0:?} is out of range")]
    Validity(Duration),
    #[error("loading the serving key into rustls")]
    Load(#[source] rustls::Error),
    #[error("reading the signing CA file {path}")]
    ReadFile {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("reading the stored {what}: {reason}")]
    Parse { what: &'static str, reason: String },
}

/// A CA and the serving certificate it signed. The private key is not shown by `Debug`.
#[derive(Clone)]
pub struct ServingCerts {
    pub ca_pem: String,
    pub ca_der: Vec<u8>,
    pub cert_pem: String,
    pub cert_der: Vec<u8>,
    key_der: Vec<u8>,
    key_pem: String,
    /// Validity of the serving certificate, Unix seconds.
    pub not_before: i64,
    pub not_after: i64,
}

impl std::fmt::Debug for ServingCerts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingCerts")
            .field("not_before", &self.not_before)
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// A CA given to the server (mounted from a Secret) that signs its serving certificates. Its
/// certificate then stays the trust anchor across rotations, as a client configured by a file
/// read once needs (the garden kube-apiserver's authorization webhook, the seed authorizer).
/// The key is not shown by `Debug`.
pub struct SigningCa {
    pem: String,
    der: Vec<u8>,
    key_pem: String,
    /// End of the CA's validity, Unix seconds: no serving certificate outlives it.
    not_after: i64,
}

impl std::fmt::Debug for SigningCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningCa").field("not_after", &self.not_after).finish_non_exhaustive()
    }
}

impl SigningCa {
    /// Reads a CA certificate and its private key (PEM); the certificate must be a CA.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, CertError> {
        let der = pem_der(cert_pem, "signing CA certificate")?;
        let (_, cert) = x509_parser::parse_x509_certificate(&der)
            .map_err(|e| CertError::Parse { what: "signing CA certificate", reason: e.to_string() })?;
        if !cert.is_ca() {
            return Err(CertError::Parse { what: "signing CA certificate", reason: "it is not a CA".into() });
        }
        let not_after = cert.validity().not_after.timestamp();
        KeyPair::from_pem(key_pem).map_err(|_| CertError::Parse {
            what: "signing CA key",
            reason: "it is not a PEM private key rcgen can sign with".into(),
        })?;
        Ok(Self { pem: cert_pem.to_string(), der, key_pem: key_pem.to_string(), not_after })
    }

    /// The CA certificate (PEM), the bundle clients trust.
    pub fn pem(&self) -> &str {
        &self.pem
    }
}

/// Issues a fresh CA and serving certificate for `hosts` (DNS names or IP addresses), valid
/// from `now` (backdated by a minute, or a tenth of a shorter lifetime, for clock skew) until
/// `now + validity`.
pub fn issue(hosts: &[String], now: OffsetDateTime, validity: Duration) -> Result<ServingCerts, CertError> {
    issue_by(hosts, now, validity, None)
}

/// As [`issue`], but signed by `signing` when given (no CA is made; the serving certificate
/// ends no later than that CA).
pub fn issue_by(
    hosts: &[String],
    now: OffsetDateTime,
    validity: Duration,
    signing: Option<&SigningCa>,
) -> Result<ServingCerts, CertError> {
    let gen_err = |what| move |source| CertError::Generate { what, source };
    let span = time::Duration::try_from(validity).map_err(|_| CertError::Validity(validity))?;
    // Backdated for clock skew: a minute, or a tenth of a short lifetime.
    let skew = time::Duration::minutes(1).min(span / 10);
    let not_before = now - skew;
    let mut not_after = now.checked_add(span).ok_or(CertError::Validity(validity))?;

    let (ca_pem, ca_der, issuer) = match signing {
        Some(ca) => {
            let ca_end =
                OffsetDateTime::from_unix_timestamp(ca.not_after).map_err(|_| CertError::Validity(validity))?;
            if ca_end <= now {
                return Err(CertError::Parse { what: "signing CA certificate", reason: "it has expired".into() });
            }
            not_after = not_after.min(ca_end);
            let key = KeyPair::from_pem(&ca.key_pem).map_err(gen_err("signing CA key"))?;
            let issuer = Issuer::from_ca_cert_pem(&ca.pem, key).map_err(gen_err("signing CA"))?;
            (ca.pem.clone(), ca.der.clone(), issuer)
        }
        None => {
            let ca_key = KeyPair::generate().map_err(gen_err("CA key"))?;
            let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(gen_err("CA parameters"))?;
            ca.distinguished_name.push(DnType::CommonName, "gardener-admission-ca");
            ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
            ca.key_usages =
                vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
            (ca.not_before, ca.not_after) = (not_before, not_after);
            let ca_cert = ca.self_signed(&ca_key).map_err(gen_err("CA certificate"))?;
            (ca_cert.pem(), ca_cert.der().to_vec(), Issuer::new(ca, ca_key))
        }
    };

    let key = KeyPair::generate().map_err(gen_err("serving key"))?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(gen_err("serving parameters"))?;
    params
        .distinguished_name
        .push(DnType::CommonName, hosts.first().map(String::as_str).unwrap_or("gardener-admission"));
    for host in hosts {
        let san = match host.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(host.clone().try_into().map_err(gen_err("serving certificate name"))?),
        };
        params.subject_alt_names.push(san);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    (params.not_before, params.not_after) = (not_before, not_after);
    let cert = params.signed_by(&key, &issuer).map_err(gen_err("serving certificate"))?;
    Ok(ServingCerts {
        ca_pem,
        ca_der,
        cert_pem: cert.pem(),
        cert_der: cert.der().to_vec(),
        key_der: key.serialize_der(),
        key_pem: key.serialize_pem(),
        not_before: not_before.unix_timestamp(),
        not_after: not_after.unix_timestamp(),
    })
}

/// The DER contents of the first PEM block in `pem`.
fn pem_der(pem: &str, what: &'static str) -> Result<Vec<u8>, CertError> {
    x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .map(|(_, block)| block.contents)
        .map_err(|e| CertError::Parse { what, reason: e.to_string() })
}

impl ServingCerts {
    /// The PKCS#8 PEM of the serving key, for the Secret the replicas share; never logged.
    pub(crate) fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// Certificates read back from PEM (as stored in the shared Secret); the validity comes
    /// from the serving certificate, and the key must load into rustls.
    pub fn from_pem(ca_pem: &str, cert_pem: &str, key_pem: &str) -> Result<Self, CertError> {
        let ca_der = pem_der(ca_pem, "CA certificate")?;
        let cert_der = pem_der(cert_pem, "serving certificate")?;
        let key_der = pem_der(key_pem, "serving key")?;
        let (_, cert) = x509_parser::parse_x509_certificate(&cert_der)
            .map_err(|e| CertError::Parse { what: "serving certificate", reason: e.to_string() })?;
        let validity = cert.validity();
        let certs = Self {
            ca_pem: ca_pem.to_string(),
            ca_der,
            cert_pem: cert_pem.to_string(),
            not_before: validity.not_before.timestamp(),
            not_after: validity.not_after.timestamp(),
            cert_der,
            key_der,
            key_pem: key_pem.to_string(),
        };
        certified(&certs)?;
        Ok(certs)
    }
}

/// Whether a certificate valid from `not_before` to `not_after` (Unix seconds) should be
/// replaced at `now`: once two thirds of its lifetime have passed (leaving a third for the new
/// CA bundle to reach the API server), or when `now` lies outside its validity.
pub fn needs_rotation(not_before: i64, not_after: i64, now: i64) -> bool {
    let lifetime = not_after.saturating_sub(not_before);
    if lifetime <= 0 || now < not_before || now >= not_after {
        return true;
    }
    now >= not_before.saturating_add(lifetime / 3 * 2)
}

/// The serving certificate rustls presents; [`CertResolver::set`] swaps it for new handshakes
/// while existing connections keep theirs.
#[derive(Debug)]
pub struct CertResolver(RwLock<Arc<CertifiedKey>>);

fn certified(certs: &ServingCerts) -> Result<Arc<CertifiedKey>, CertError> {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certs.key_der.clone()));
    let signing = any_supported_type(&key).map_err(CertError::Load)?;
    Ok(Arc::new(CertifiedKey::new(vec![CertificateDer::from(certs.cert_der.clone())], signing)))
}

impl CertResolver {
    pub fn new(certs: &ServingCerts) -> Result<Self, CertError> {
        Ok(Self(RwLock::new(certified(certs)?)))
    }

    pub fn set(&self, certs: &ServingCerts) -> Result<(), CertError> {
        let key = certified(certs)?;
        match self.0.write() {
            Ok(mut guard) => *guard = key,
            // A poisoned lock only means a panic elsewhere while holding it; the value is a
            // plain Arc swap, so replacing it is still sound.
            Err(poisoned) => *poisoned.into_inner() = key,
        }
        Ok(())
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(match self.0.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        })
    }
}

/// The rustls server configuration around `resolver` (HTTP/1.1, TLS 1.2 and 1.3, ring).
pub fn server_config(resolver: Arc<CertResolver>) -> Result<Arc<rustls::ServerConfig>, CertError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(CertError::Load)?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::*;

    #[test]
    fn issues_a_serving_cert_for_names_and_ips() {
        let now = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let hosts = vec!["gardener-admission.garden.svc".to_string(), "127.0.0.1".to_string()];
        let certs = issue(&hosts, now, Duration::from_secs(3600)).unwrap();
        assert_eq!((certs.not_before, certs.not_after), (1_700_000_000 - 60, 1_700_003_600));
        let (_, cert) = X509Certificate::from_der(&certs.cert_der).unwrap();
        let sans = cert.subject_alternative_name().unwrap().unwrap().value.general_names.clone();
        assert!(sans.iter().any(|n| matches!(n, GeneralName::DNSName("gardener-admission.garden.svc"))));
        assert!(sans.iter().any(|n| matches!(n, GeneralName::IPAddress(b) if *b == [127, 0, 0, 1])));
        let (_, ca_pem) = x509_parser::pem::parse_x509_pem(certs.ca_pem.as_bytes()).unwrap();
        let ca = ca_pem.parse_x509().unwrap();
        assert!(ca.is_ca());
        assert!(cert.verify_signature(Some(ca.public_key())).is_ok());
        assert!(!format!("{certs:?}").contains("key_der"));
        assert!(CertResolver::new(&certs).is_ok());
    }

    #[test]
    fn certificates_survive_a_round_trip_through_pem_and_garbage_is_named() {
        let now = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let certs = issue(&["127.0.0.1".to_string()], now, Duration::from_secs(3600)).unwrap();
        let back = ServingCerts::from_pem(&certs.ca_pem, &certs.cert_pem, certs.key_pem()).unwrap();
        assert_eq!((back.ca_der, back.cert_der), (certs.ca_der.clone(), certs.cert_der.clone()));
        assert_eq!((back.not_before, back.not_after), (certs.not_before, certs.not_after));
        let err = ServingCerts::from_pem(&certs.ca_pem, "not a certificate", certs.key_pem()).unwrap_err();
        assert!(err.to_string().starts_with("reading the stored serving certificate"), "{err}");
        let err = ServingCerts::from_pem(&certs.ca_pem, &certs.cert_pem, &certs.ca_pem).unwrap_err();
        assert!(matches!(err, CertError::Load(_)), "a certificate is no key: {err}");
    }

    /// A CA of the operator's (certificate PEM, key PEM), valid from `now` for `hours`.
    fn operator_ca(now: OffsetDateTime, hours: i64) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name.push(DnType::CommonName, "operator-webhook-ca");
        ca.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        (ca.not_before, ca.not_after) = (now - ::time::Duration::minutes(1), now + ::time::Duration::hours(hours));
        (ca.self_signed(&key).unwrap().pem(), key.serialize_pem())
    }

    #[test]
    fn a_given_ca_signs_the_serving_certificate_which_ends_no_later_than_the_ca() {
        let now = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let (ca_pem, ca_key) = operator_ca(now, 1);
        let ca = SigningCa::from_pem(&ca_pem, &ca_key).unwrap();
        assert!(!format!("{ca:?}").contains("PRIVATE"), "{ca:?}");
        let certs = issue_by(&["127.0.0.1".to_string()], now, Duration::from_secs(90 * 24 * 3600), Some(&ca)).unwrap();
        assert_eq!(certs.ca_pem, ca_pem, "the bundle is the given CA");
        assert_eq!(certs.not_after, 1_700_000_000 + 3600, "clipped to the CA's end");
        let (_, cert) = X509Certificate::from_der(&certs.cert_der).unwrap();
        let (_, ca_cert) = X509Certificate::from_der(&certs.ca_der).unwrap();
        assert!(cert.verify_signature(Some(ca_cert.public_key())).is_ok());

        // A serving certificate is no CA; a key that is no key is named; an expired CA signs nothing.
        let err = SigningCa::from_pem(&certs.cert_pem, certs.key_pem()).unwrap_err();
        assert!(err.to_string().contains("signing CA certificate"), "{err}");
        let err = SigningCa::from_pem(&ca_pem, "garbage").unwrap_err();
        assert!(err.to_string().contains("signing CA key"), "{err}");
        let late = now + ::time::Duration::hours(2);
        assert!(issue_by(&["x".to_string()], late, Duration::from_secs(60), Some(&ca)).is_err());
    }

    #[test]
    fn rotation_decision() {
        let cases = [
            (0, 300, 0, false),
            (0, 300, 199, false),
            (0, 300, 200, true),
            (0, 300, 299, true),
            (0, 300, 300, true),
            (0, 300, -1, true),
            (10, 10, 10, true),
            (10, 0, 5, true),
            (0, i64::MAX, 1_000, false),
            (i64::MIN, i64::MAX, i64::MAX - 1, true),
        ];
        for (nb, na, now, want) in cases {
            assert_eq!(needs_rotation(nb, na, now), want, "{nb} {na} {now}");
        }
    }
}
