//! Reading existing certificates (x509-parser): what the manager compares against a config,
//! whether a certificate was signed by a given CA, and when it expires. Problems are returned
//! as short descriptions; callers add which secret and key they concern.

use crate::config::{KeyAlgorithm, San};
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::pem::Pem;
use x509_parser::prelude::FromDer;
use x509_parser::public_key::PublicKey;

/// The parts of a certificate the crate looks at, owned.
#[derive(Clone, Debug)]
pub(crate) struct CertInfo {
    pub der: Vec<u8>,
    pub common_name: String,
    pub organizations: BTreeSet<String>,
    pub sans: BTreeSet<San>,
    pub server_auth: bool,
    pub client_auth: bool,
    pub is_ca: bool,
    /// Unix seconds.
    pub not_before: i64,
    /// Unix seconds.
    pub not_after: i64,
    /// The DER SubjectPublicKeyInfo (what RFC 7469 pins hash).
    pub spki_der: Vec<u8>,
    /// The public key bits inside the SubjectPublicKeyInfo.
    pub public_key_raw: Vec<u8>,
    pub key: Option<KeyAlgorithm>,
}

/// The DER of every `CERTIFICATE` block in `pem`; an error when there is none or one is broken.
pub(crate) fn certificate_ders(pem: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    for block in Pem::iter_from_buffer(pem.as_bytes()) {
        let block = block.map_err(|e| format!("is not valid PEM ({e})"))?;
        if block.label == "CERTIFICATE" {
            out.push(block.contents);
        }
    }
    if out.is_empty() {
        return Err("holds no PEM certificate".into());
    }
    Ok(out)
}

/// The first certificate in `pem`.
pub(crate) fn parse(pem: &str) -> Result<CertInfo, String> {
    let ders = certificate_ders(pem)?;
    let der = ders.into_iter().next().ok_or_else(|| "holds no PEM certificate".to_string())?;
    parse_der(der)
}

pub(crate) fn parse_der(der: Vec<u8>) -> Result<CertInfo, String> {
    let (_, cert) = X509Certificate::from_der(&der).map_err(|e| format!("is not an X.509 certificate ({e})"))?;
    let text = |v: &x509_parser::x509::AttributeTypeAndValue<'_>| v.as_str().map(str::to_string).ok();
    let common_name = cert.subject().iter_common_name().find_map(text).unwrap_or_default();
    let organizations = cert.subject().iter_organization().filter_map(text).collect();
    let mut sans = BTreeSet::new();
    if let Ok(Some(ext)) = cert.subject_alternative_name() {
        for name in &ext.value.general_names {
            match name {
                GeneralName::DNSName(d) => {
                    sans.insert(San::Dns(d.to_ascii_lowercase()));
                }
                GeneralName::IPAddress(bytes) => {
                    if let Some(ip) = ip_from_bytes(bytes) {
                        sans.insert(San::Ip(ip));
                    }
                }
                _ => {}
            }
        }
    }
    let (server_auth, client_auth) = match cert.extended_key_usage() {
        Ok(Some(eku)) => (eku.value.server_auth, eku.value.client_auth),
        _ => (false, false),
    };
    let key = match cert.public_key().parsed() {
        Ok(PublicKey::EC(point)) if point.key_size() == 256 => Some(KeyAlgorithm::EcdsaP256),
        Ok(PublicKey::RSA(rsa)) => match rsa.key_size() {
            2048 => Some(KeyAlgorithm::Rsa2048),
            3072 => Some(KeyAlgorithm::Rsa3072),
            4096 => Some(KeyAlgorithm::Rsa4096),
            _ => None,
        },
        _ => None,
    };
    let info = CertInfo {
        common_name,
        organizations,
        sans,
        server_auth,
        client_auth,
        is_ca: cert.is_ca(),
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
        spki_der: cert.public_key().raw.to_vec(),
        public_key_raw: cert.public_key().subject_public_key.data.to_vec(),
        key,
        der: Vec::new(),
    };
    Ok(CertInfo { der, ..info })
}

fn ip_from_bytes(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(|b| IpAddr::V4(Ipv4Addr::from(b))),
        16 => <[u8; 16]>::try_from(bytes).ok().map(|b| IpAddr::V6(Ipv6Addr::from(b))),
        _ => None,
    }
}

/// Whether `cert` carries a valid signature by the key of `issuer`.
pub(crate) fn signed_by(cert: &CertInfo, issuer: &CertInfo) -> bool {
    let (Ok((_, cert)), Ok((_, issuer))) =
        (X509Certificate::from_der(&cert.der), X509Certificate::from_der(&issuer.der))
    else {
        return false;
    };
    cert.verify_signature(Some(issuer.public_key())).is_ok()
}

/// `2006-01-02T15:04:05Z` (RFC 3339, UTC) for Unix seconds.
pub(crate) fn rfc3339(unix_seconds: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(unix_seconds) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => format!("@{unix_seconds}"),
    }
}

/// Unix seconds of a point in time (negative before 1970).
pub(crate) fn unix_seconds(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn broken_pem_is_described() {
        assert_eq!(parse("nothing here").unwrap_err(), "holds no PEM certificate");
        assert!(
            parse("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
                .unwrap_err()
                .starts_with("is not an X.509")
        );
    }
}
