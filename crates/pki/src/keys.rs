//! Key pairs and randomness. ECDSA P-256 keys come from ring (through rcgen); RSA keys from the
//! `rsa` crate, because ring cannot generate RSA keys, and are handed to rcgen as PKCS#8.
//! Random bytes come from ring's system CSPRNG.

use crate::config::KeyAlgorithm;
use crate::error::Error;
use crate::error::kind;
use crate::secret::{Secret, data_keys, labels, secret_types};
use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256};
use ring::rand::{SecureRandom, SystemRandom};
use rsa::pkcs8::{EncodePrivateKey, LineEnding};

/// Generates a key pair of the given type; `kind`/`name` say whose key it is in errors.
pub(crate) fn generate(algorithm: KeyAlgorithm, kind: &'static str, name: &str) -> Result<KeyPair, Error> {
    match algorithm.rsa_bits() {
        None => KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(Error::generate(
            kind,
            name,
            "generating an ECDSA P-256 key",
        )),
        Some(bits) => {
            let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, bits).map_err(Error::generate(
                kind,
                name,
                "generating an RSA key",
            ))?;
            let pem = key.to_pkcs8_pem(LineEnding::LF).map_err(Error::generate(kind, name, "encoding an RSA key"))?;
            KeyPair::from_pem(&pem).map_err(Error::generate(kind, name, "loading an RSA key"))
        }
    }
}

/// Parses a PKCS#8 PEM private key.
pub(crate) fn parse(pem: &str, kind: &'static str, name: &str, key: &str) -> Result<KeyPair, Error> {
    KeyPair::from_pem(pem).map_err(|_| Error::existing(kind, name, format!("{key} is not a PKCS#8 PEM private key")))
}

/// The algorithm of a parsed key, as far as configs distinguish them.
pub(crate) fn algorithm_of(key: &KeyPair) -> Option<KeyAlgorithm> {
    if key.algorithm() == &PKCS_ECDSA_P256_SHA256 {
        return Some(KeyAlgorithm::EcdsaP256);
    }
    // An RSA public key (PKCS#1 RSAPublicKey) is a DER SEQUENCE of modulus and exponent; its
    // length tells the size well enough to tell 2048, 3072 and 4096 bits apart.
    let raw = key.public_key_raw().len();
    match raw {
        250..=300 => Some(KeyAlgorithm::Rsa2048),
        380..=420 => Some(KeyAlgorithm::Rsa3072),
        510..=560 => Some(KeyAlgorithm::Rsa4096),
        _ => None,
    }
}

/// A new SSH key pair `name`, made for the key-pair rotation `rotation`.
pub(crate) fn ssh_keypair(name: &str, rotation: &str) -> Result<Secret, Error> {
    let private = ssh_key::PrivateKey::random(&mut ssh_key::rand_core::OsRng, ssh_key::Algorithm::Ed25519)
        .map_err(Error::generate(kind::SSH_KEYPAIR, name, "generating an Ed25519 key"))?;
    let private_pem = private.to_openssh(ssh_key::LineEnding::LF).map_err(Error::generate(
        kind::SSH_KEYPAIR,
        name,
        "encoding the private key",
    ))?;
    let public = private.public_key().to_openssh().map_err(Error::generate(
        kind::SSH_KEYPAIR,
        name,
        "encoding the public key",
    ))?;
    Ok(Secret::new(name, secret_types::OPAQUE)
        .with_data(data_keys::SSH_PRIVATE_KEY, private_pem.as_str())
        .with_data(data_keys::SSH_PUBLIC_KEY, format!("{public}\n"))
        .with_data(data_keys::SSH_ROTATION, rotation)
        .with_label(labels::KIND, "ssh-keypair"))
}

/// An error unless `secret` holds an OpenSSH private key and its public key.
pub(crate) fn check_ssh_keypair(secret: &Secret, name: &str) -> Result<(), Error> {
    let get =
        |key: &str| secret.get(key).ok_or_else(|| Error::existing(kind::SSH_KEYPAIR, name, format!("has no {key}")));
    let private = ssh_key::PrivateKey::from_openssh(get(data_keys::SSH_PRIVATE_KEY)?).map_err(|_| {
        Error::existing(
            kind::SSH_KEYPAIR,
            name,
            format!("{} is not an OpenSSH private key", data_keys::SSH_PRIVATE_KEY),
        )
    })?;
    let public = ssh_key::PublicKey::from_openssh(get(data_keys::SSH_PUBLIC_KEY)?.trim()).map_err(|_| {
        Error::existing(kind::SSH_KEYPAIR, name, format!("{} is not an OpenSSH public key", data_keys::SSH_PUBLIC_KEY))
    })?;
    if private.public_key().key_data() != public.key_data() {
        return Err(Error::existing(
            kind::SSH_KEYPAIR,
            name,
            format!("{} does not belong to {}", data_keys::SSH_PUBLIC_KEY, data_keys::SSH_PRIVATE_KEY),
        ));
    }
    Ok(())
}

/// Fills `buf` from the system CSPRNG.
pub(crate) fn random_bytes(buf: &mut [u8], kind: &'static str, name: &str) -> Result<(), Error> {
    SystemRandom::new().fill(buf).map_err(|_| Error::invalid(kind, name, "the system random number generator failed"))
}

/// A random positive 128-bit certificate serial number.
pub(crate) fn serial_number(kind: &'static str, name: &str) -> Result<rcgen::SerialNumber, Error> {
    let mut bytes = [0u8; 16];
    random_bytes(&mut bytes, kind, name)?;
    // Positive (top bit clear) and full length (second-highest bit set), as RFC 5280 asks.
    bytes[0] = (bytes[0] & 0x7f) | 0x40;
    Ok(rcgen::SerialNumber::from_slice(&bytes))
}

/// `len` characters from `[a-z0-9]`, uniformly (rejection sampling).
pub(crate) fn random_alphanumeric(len: usize, kind: &'static str, name: &str) -> Result<String, Error> {
    const ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        random_bytes(&mut buf, kind, name)?;
        // 252 = 7 * 36: bytes at or above it would bias the first characters.
        for b in buf.iter().filter(|b| **b < 252) {
            if out.len() == len {
                break;
            }
            out.push(char::from(ALPHABET[usize::from(*b) % 36]));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecdsa_keys_are_pkcs8_and_recognised() {
        let key = generate(KeyAlgorithm::EcdsaP256, "CA", "ca").unwrap();
        assert!(key.serialize_pem().starts_with("-----BEGIN PRIVATE KEY-----"));
        let again = parse(&key.serialize_pem(), "CA", "ca", "ca.key").unwrap();
        assert_eq!(again.public_key_raw(), key.public_key_raw());
        assert_eq!(algorithm_of(&again), Some(KeyAlgorithm::EcdsaP256));
    }

    #[test]
    fn rsa_keys_load_into_rcgen() {
        let key = generate(KeyAlgorithm::Rsa2048, "CA", "ca").unwrap();
        assert_eq!(algorithm_of(&key), Some(KeyAlgorithm::Rsa2048));
        assert_eq!(key.algorithm(), &rcgen::PKCS_RSA_SHA256);
    }

    #[test]
    fn unparsable_key_error_names_secret_without_content() {
        let err = parse("-----BEGIN PRIVATE KEY-----\nnot base64\n", "CA", "ca", "ca.key").unwrap_err().to_string();
        assert_eq!(err, "CA ca: existing secret ca.key is not a PKCS#8 PEM private key");
    }

    #[test]
    fn alphanumeric_values_use_the_alphabet() {
        let s = random_alphanumeric(1000, "bootstrap token", "t").unwrap();
        assert_eq!(s.len(), 1000);
        assert!(s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        // 1000 draws from 36 symbols: all of them show up with overwhelming probability.
        let distinct: std::collections::BTreeSet<u8> = s.bytes().collect();
        assert_eq!(distinct.len(), 36);
    }

    #[test]
    fn serial_numbers_are_positive_and_distinct() {
        let a = serial_number("CA", "ca").unwrap().to_bytes();
        let b = serial_number("CA", "ca").unwrap().to_bytes();
        assert_ne!(a, b);
        assert_eq!(a[0] & 0xc0, 0x40);
    }
}
