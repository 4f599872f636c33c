//! Short-lived admin kubeconfigs (GEP-16 `AdminKubeconfigRequest`, in the form that fits a
//! CRD): the user submits a public key; the shoot's client CA signs a certificate for it whose
//! CN is the requesting user and whose organization is `system:masters`, valid for the
//! requested duration capped by a configured maximum (and by the CA's own end). The private key
//! never leaves the user: the kubeconfig returned carries the certificate, and the user adds
//! `client-key-data` (or `client-key`) from their own key file.

use crate::config::{CertificateConfig, Usage, bundle_name, old_name};
use crate::error::{Error, kind};
use crate::issue::Signer;
use crate::kubeconfig::{self, Credentials};
use crate::secret::{SecretSet, data_keys};
use crate::shoot_set::{names, subjects};
use std::time::{Duration, SystemTime};
use x509_parser::prelude::FromDer;
use x509_parser::public_key::PublicKey;
use x509_parser::x509::SubjectPublicKeyInfo;

/// Default cap on the requested validity.
pub const DEFAULT_MAX_EXPIRATION: Duration = Duration::from_secs(24 * 3600);
/// The smallest RSA modulus accepted for a user's key.
pub const MIN_RSA_BITS: usize = 2048;

/// A user's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminKubeconfigRequest {
    /// The requesting user (from the garden's authentication): the certificate's CN.
    pub user: String,
    /// Requested validity.
    pub expiration: Duration,
    /// The user's public key: a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) block.
    pub public_key_pem: String,
}

/// Where and how admin kubeconfigs are issued for a shoot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminKubeconfigSettings {
    /// Cluster name inside the kubeconfig.
    pub cluster_name: String,
    /// The kube-apiserver's address.
    pub server: String,
    /// The CA that signs the client certificate (default `ca-client`).
    pub signing_ca: String,
    /// The CA whose bundle the kubeconfig trusts (default `ca`).
    pub trusted_ca: String,
    /// Longest validity handed out.
    pub max_expiration: Duration,
}

impl AdminKubeconfigSettings {
    pub fn new(cluster_name: impl Into<String>, server: impl Into<String>) -> Self {
        Self {
            cluster_name: cluster_name.into(),
            server: server.into(),
            signing_ca: names::CA_CLIENT.to_string(),
            trusted_ca: names::CA.to_string(),
            max_expiration: DEFAULT_MAX_EXPIRATION,
        }
    }
}

/// An issued certificate and the kubeconfig around it (without a private key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminKubeconfig {
    /// A kubeconfig with the cluster, its CA bundle and the client certificate; the user adds
    /// their key.
    pub kubeconfig: String,
    /// The client certificate (PEM).
    pub certificate_pem: String,
    /// When the certificate expires (the request's `status.expirationTimestamp`).
    pub expiration: SystemTime,
}

/// What kind of key a user submitted (after [`check_public_key`] accepted it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserKey {
    Rsa { bits: usize },
    Ecdsa,
    Ed25519,
}

/// Checks a submitted public key: one PEM `PUBLIC KEY` block holding an RSA key of at least
/// [`MIN_RSA_BITS`], an ECDSA key on a curve Kubernetes clients accept, or an Ed25519 key.
/// The message of a refusal never quotes the input (a pasted private key must not be echoed).
pub fn check_public_key(pem_text: &str) -> Result<UserKey, String> {
    let (_, block) =
        x509_parser::pem::parse_x509_pem(pem_text.trim().as_bytes()).map_err(|_| "is not a PEM block".to_string())?;
    if block.label.contains("PRIVATE KEY") {
        return Err("is a private key; submit only the public key (`openssl pkey -in key.pem -pubout`)".into());
    }
    if block.label != "PUBLIC KEY" {
        return Err(format!("is a PEM {:?} block, not a \"PUBLIC KEY\" (SubjectPublicKeyInfo)", block.label));
    }
    let (rest, spki) =
        SubjectPublicKeyInfo::from_der(&block.contents).map_err(|_| "is not a DER SubjectPublicKeyInfo".to_string())?;
    if !rest.is_empty() {
        return Err("has trailing bytes after the SubjectPublicKeyInfo".into());
    }
    let key = match spki.parsed() {
        Ok(PublicKey::RSA(rsa)) if rsa.key_size() >= MIN_RSA_BITS => UserKey::Rsa { bits: rsa.key_size() },
        Ok(PublicKey::RSA(rsa)) => {
            return Err(format!("is an RSA key of {} bits; at least {MIN_RSA_BITS} are required", rsa.key_size()));
        }
        Ok(PublicKey::EC(_)) => UserKey::Ecdsa,
        _ if spki.algorithm.algorithm == x509_parser::oid_registry::OID_SIG_ED25519 => UserKey::Ed25519,
        _ => return Err("is not an RSA, ECDSA or Ed25519 key".into()),
    };
    // The signer must be able to encode it too (curves rcgen knows).
    rcgen::SubjectPublicKeyInfo::from_der(&block.contents).map_err(|_| "uses an unsupported curve".to_string())?;
    Ok(key)
}

/// The CA bundle clients of `ca` trust: its `-bundle` secret when the set has it (gardenlet's
/// seed secrets), else the CA's certificate and, during a rotation, the previous one (the
/// ShootState holds only the CAs).
pub fn trusted_bundle(secrets: &SecretSet, ca: &str) -> Option<String> {
    if let Some(bundle) = secrets.value(&bundle_name(ca), data_keys::BUNDLE) {
        return Some(bundle.to_string());
    }
    let current = secrets.value(ca, data_keys::CA_CERT)?;
    let mut bundle = format!("{}\n", current.trim_end());
    if let Some(old) = secrets.value(&old_name(ca), data_keys::CA_CERT) {
        bundle.push_str(&format!("{}\n", old.trim_end()));
    }
    Some(bundle)
}

/// Issues a certificate and kubeconfig for `request` from the shoot's secrets.
pub fn issue(
    secrets: &SecretSet,
    settings: &AdminKubeconfigSettings,
    request: &AdminKubeconfigRequest,
    now: SystemTime,
) -> Result<AdminKubeconfig, Error> {
    let user = request.user.as_str();
    let invalid = |rule: &str| Error::invalid(kind::ADMIN_KUBECONFIG, &format!("{user:?}"), rule);
    if user.trim().is_empty() || user.chars().any(char::is_control) {
        return Err(invalid("the user name is empty or not printable"));
    }
    if request.expiration < Duration::from_secs(1) {
        return Err(invalid("the expiration must be at least one second"));
    }
    let user_key = check_public_key(&request.public_key_pem).map_err(|e| invalid(&format!("the public key {e}")))?;
    let public_key = rcgen::SubjectPublicKeyInfo::from_pem(request.public_key_pem.trim())
        .map_err(|_| invalid("the public key cannot be read"))?;
    let validity = request.expiration.min(settings.max_expiration);
    let ca = &settings.signing_ca;
    let missing = |what: &str| invalid(&format!("{what} is missing from the shoot's secrets"));
    let cert_pem =
        secrets.value(ca, data_keys::CA_CERT).ok_or_else(|| missing(&format!("{ca}/{}", data_keys::CA_CERT)))?;
    let key_pem =
        secrets.value(ca, data_keys::CA_KEY).ok_or_else(|| missing(&format!("{ca}/{}", data_keys::CA_KEY)))?;
    let trusted = &settings.trusted_ca;
    let bundle =
        trusted_bundle(secrets, trusted).ok_or_else(|| missing(&format!("{trusted}/{}", data_keys::CA_CERT)))?;
    let signer = Signer::load(ca, cert_pem, key_pem)?;
    let config = CertificateConfig::new("admin-kubeconfig-request", ca.as_str(), user, Usage::Client)
        .with_organization(subjects::SYSTEM_MASTERS)
        .with_validity(validity);
    let certificate_pem = signer.sign_public_key(&config, &public_key, matches!(user_key, UserKey::Rsa { .. }), now)?;
    let kubeconfig = kubeconfig::render(
        &settings.cluster_name,
        &settings.server,
        &bundle,
        Credentials::ClientCertificateOnly { cert_pem: &certificate_pem },
    )?;
    let info = crate::inspect::parse(&certificate_pem)
        .map_err(|p| Error::invalid(kind::ADMIN_KUBECONFIG, &format!("{user:?}"), format!("issued certificate {p}")))?;
    let expiration = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(info.not_after).unwrap_or(0));
    Ok(AdminKubeconfig { kubeconfig, certificate_pem, expiration })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect;
    use crate::manager::plan;
    use crate::shoot_set::{ShootInputs, shoot_set};
    use base64::Engine;

    fn secrets() -> SecretSet {
        let inputs = ShootInputs::new("shoot--p--s", "api.internal", "10.0.0.1".parse().unwrap());
        plan(&shoot_set(&inputs), &SecretSet::new(), SystemTime::now()).unwrap().secrets
    }

    /// A user's key pair: (private PEM, public PEM).
    fn user_key() -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        (key.serialize_pem(), key.public_key_pem())
    }

    fn request(user: &str, seconds: u64) -> AdminKubeconfigRequest {
        AdminKubeconfigRequest {
            user: user.into(),
            expiration: Duration::from_secs(seconds),
            public_key_pem: user_key().1,
        }
    }

    fn client_cert(kubeconfig: &str) -> inspect::CertInfo {
        let v: serde_yaml::Value = serde_yaml::from_str(kubeconfig).unwrap();
        let b64 = v["users"][0]["user"]["client-certificate-data"].as_str().unwrap();
        let pem = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        inspect::parse(std::str::from_utf8(&pem).unwrap()).unwrap()
    }

    #[test]
    fn certificate_names_the_user_binds_their_key_and_is_capped() {
        let set = secrets();
        let mut settings = AdminKubeconfigSettings::new("shoot--p--s", "https://api.example.com");
        settings.max_expiration = Duration::from_secs(600);
        let now = SystemTime::now();
        let (private, public) = user_key();
        let request = AdminKubeconfigRequest {
            user: "jane@example.com".into(),
            expiration: Duration::from_secs(7200),
            public_key_pem: public,
        };
        let issued = issue(&set, &settings, &request, now).unwrap();
        let cert = client_cert(&issued.kubeconfig);
        assert_eq!(cert.common_name, "jane@example.com");
        assert!(cert.organizations.contains("system:masters"));
        assert!(cert.client_auth && !cert.server_auth && !cert.is_ca);
        assert_eq!(cert.not_after, inspect::unix_seconds(now) + 600);
        assert_eq!(inspect::unix_seconds(issued.expiration), cert.not_after);
        let ca = inspect::parse(set.value("ca-client", "ca.crt").unwrap()).unwrap();
        assert!(inspect::signed_by(&cert, &ca));
        // The certificate is for the user's key, and no private key is anywhere in the result.
        let user = rcgen::KeyPair::from_pem(&private).unwrap();
        assert_eq!(cert.public_key_raw, user.public_key_raw());
        assert_eq!(inspect::parse(&issued.certificate_pem).unwrap().public_key_raw, user.public_key_raw());
        assert!(!issued.kubeconfig.contains("client-key"));
        assert!(!format!("{issued:?}").contains("PRIVATE KEY"));
        // The kubeconfig trusts the cluster CA bundle.
        let v: serde_yaml::Value = serde_yaml::from_str(&issued.kubeconfig).unwrap();
        let trusted = base64::engine::general_purpose::STANDARD
            .decode(v["clusters"][0]["cluster"]["certificate-authority-data"].as_str().unwrap())
            .unwrap();
        assert_eq!(std::str::from_utf8(&trusted).unwrap(), set.value("ca-bundle", "bundle.crt").unwrap());

        let cert = client_cert(
            &issue(&set, &settings, &AdminKubeconfigRequest { expiration: Duration::from_secs(5), ..request }, now)
                .unwrap()
                .kubeconfig,
        );
        assert_eq!(cert.not_after, inspect::unix_seconds(now) + 5);
    }

    #[test]
    fn from_the_shootstate_cas_alone() {
        // The garden's ShootState holds CAs, not bundles: the bundle is the CA (and the old one).
        let full = secrets();
        let persistent = crate::shootstate::persistent(
            &shoot_set(&ShootInputs::new("shoot--p--s", "api.internal", "10.0.0.1".parse().unwrap())),
            &full,
        );
        assert!(!persistent.contains("ca-bundle"));
        let settings = AdminKubeconfigSettings::new("c", "https://a");
        let issued = issue(&persistent, &settings, &request("jane", 60), SystemTime::now()).unwrap();
        let v: serde_yaml::Value = serde_yaml::from_str(&issued.kubeconfig).unwrap();
        let trusted = base64::engine::general_purpose::STANDARD
            .decode(v["clusters"][0]["cluster"]["certificate-authority-data"].as_str().unwrap())
            .unwrap();
        assert_eq!(std::str::from_utf8(&trusted).unwrap().trim(), full.value("ca", "ca.crt").unwrap().trim());
    }

    #[test]
    fn public_keys_of_each_kind_and_refusals_that_do_not_echo() {
        let ec = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap();
        assert_eq!(check_public_key(&ec.public_key_pem()), Ok(UserKey::Ecdsa));
        let ed = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        assert_eq!(check_public_key(&ed.public_key_pem()), Ok(UserKey::Ed25519));
        let rsa = crate::keys::generate(crate::KeyAlgorithm::Rsa2048, "test", "rsa").unwrap();
        assert_eq!(check_public_key(&rsa.public_key_pem()), Ok(UserKey::Rsa { bits: 2048 }));

        let private = ec.serialize_pem();
        let refused = check_public_key(&private).unwrap_err();
        assert!(refused.contains("private key"), "{refused}");
        assert!(!refused.contains("MII") && !refused.contains(&private[40..60]), "{refused}");
        assert_eq!(check_public_key("ssh-ed25519 AAAA"), Err("is not a PEM block".into()));
        let cert = secrets().value("ca", "ca.crt").unwrap().to_string();
        assert!(check_public_key(&cert).unwrap_err().contains("\"CERTIFICATE\" block"));
        let garbage = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
        assert_eq!(check_public_key(garbage), Err("is not a DER SubjectPublicKeyInfo".into()));
        let small = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 1024).unwrap();
        let small_pub =
            rsa::pkcs8::EncodePublicKey::to_public_key_pem(&small.to_public_key(), rsa::pkcs8::LineEnding::LF).unwrap();
        assert_eq!(check_public_key(&small_pub), Err("is an RSA key of 1024 bits; at least 2048 are required".into()));

        // issue() refuses with the user and the rule, naming the field's problem.
        let set = secrets();
        let settings = AdminKubeconfigSettings::new("c", "https://a");
        let bad = AdminKubeconfigRequest { public_key_pem: private.clone(), ..request("jane", 60) };
        let message = issue(&set, &settings, &bad, SystemTime::now()).unwrap_err().to_string();
        assert!(message.starts_with("admin kubeconfig for \"jane\": the public key is a private key"), "{message}");
        assert!(!message.contains(&private[40..60]));
    }

    #[test]
    fn bad_requests_name_the_user_and_rule() {
        let set = secrets();
        let settings = AdminKubeconfigSettings::new("c", "https://a");
        let zero = request("jane", 0);
        assert_eq!(
            issue(&set, &settings, &zero, SystemTime::now()).unwrap_err().to_string(),
            "admin kubeconfig for \"jane\": the expiration must be at least one second"
        );
        assert!(issue(&set, &settings, &request(" ", 60), SystemTime::now()).is_err());
        assert_eq!(
            issue(&SecretSet::new(), &settings, &request("jane", 60), SystemTime::now()).unwrap_err().to_string(),
            "admin kubeconfig for \"jane\": ca-client/ca.crt is missing from the shoot's secrets"
        );
    }
}
