//! Declarative secret configs: what a CA, a certificate, a service-account key or an opaque
//! random value should look like. Validation ([`validate`]) happens once, before anything is
//! generated; the config checksum that the manager stores alongside each secret is computed
//! here too.

use crate::error::{Error, kind};
use serde::Serialize;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;

/// Suffix of the trust-bundle secret of a CA (`ca` → `ca-bundle`).
pub const BUNDLE_SUFFIX: &str = "-bundle";
/// Suffix of the previous CA while a rotation is in progress (`ca` → `ca-old`).
pub const OLD_SUFFIX: &str = "-old";

const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
/// Default validity of a CA (kubeadm: ten years).
pub const DEFAULT_CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Default validity of a leaf certificate (kubeadm: one year).
pub const DEFAULT_CERT_VALIDITY: Duration = YEAR;
/// Longest validity accepted (keeps dates far from the X.509 and `time` limits).
pub const MAX_VALIDITY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Key type of a CA, certificate or service-account key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum KeyAlgorithm {
    /// ECDSA on P-256 with SHA-256: fast to generate, accepted by Kubernetes and etcd.
    #[default]
    EcdsaP256,
    Rsa2048,
    Rsa3072,
    Rsa4096,
}

impl KeyAlgorithm {
    pub(crate) fn rsa_bits(self) -> Option<usize> {
        match self {
            Self::EcdsaP256 => None,
            Self::Rsa2048 => Some(2048),
            Self::Rsa3072 => Some(3072),
            Self::Rsa4096 => Some(4096),
        }
    }
}

/// What a certificate is for (its extended key usages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Usage {
    /// TLS server (`serverAuth`).
    Server,
    /// TLS client (`clientAuth`).
    Client,
    /// Both, e.g. etcd members that are servers and peers' clients.
    ServerAndClient,
}

impl Usage {
    pub fn server(self) -> bool {
        matches!(self, Self::Server | Self::ServerAndClient)
    }

    pub fn client(self) -> bool {
        matches!(self, Self::Client | Self::ServerAndClient)
    }
}

/// A self-signed certificate authority.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaConfig {
    pub name: String,
    pub common_name: String,
    pub validity: Duration,
    pub key: KeyAlgorithm,
}

impl CaConfig {
    pub fn new(name: impl Into<String>, common_name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            common_name: common_name.into(),
            validity: DEFAULT_CA_VALIDITY,
            key: KeyAlgorithm::default(),
        }
    }

    pub fn with_key(mut self, key: KeyAlgorithm) -> Self {
        self.key = key;
        self
    }

    pub fn with_validity(mut self, validity: Duration) -> Self {
        self.validity = validity;
        self
    }

    /// Name of the secret holding the trust bundle of this CA.
    pub fn bundle_name(&self) -> String {
        bundle_name(&self.name)
    }

    /// Name of the secret holding the previous CA during a rotation.
    pub fn old_name(&self) -> String {
        old_name(&self.name)
    }
}

/// Name of the trust-bundle secret of the CA `ca`.
pub fn bundle_name(ca: &str) -> String {
    format!("{ca}{BUNDLE_SUFFIX}")
}

/// Name of the previous-CA secret of the CA `ca` during a rotation.
pub fn old_name(ca: &str) -> String {
    format!("{ca}{OLD_SUFFIX}")
}

/// Render the certificate also as a kubeconfig (data key `kubeconfig`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeconfigSpec {
    /// Cluster (and context and user) name inside the kubeconfig.
    pub cluster_name: String,
    /// `https://...` address of the kube-apiserver.
    pub server: String,
    /// The CA whose trust bundle is embedded as `certificate-authority-data` (the CA that signs
    /// the kube-apiserver's serving certificate).
    pub trust: String,
}

/// A certificate signed by a named CA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateConfig {
    pub name: String,
    /// Name of the [`CaConfig`] that signs it.
    pub ca: String,
    pub common_name: String,
    /// The subject's organization: the Kubernetes group of a client certificate. (One at most:
    /// rcgen writes a single attribute per type, and no certificate here needs two groups.)
    pub organization: Option<String>,
    /// Subject alternative names: DNS names (optionally `*.` wildcards) or IP addresses.
    pub sans: Vec<String>,
    pub usage: Usage,
    pub validity: Duration,
    pub key: KeyAlgorithm,
    pub kubeconfig: Option<KubeconfigSpec>,
}

impl CertificateConfig {
    pub fn new(name: impl Into<String>, ca: impl Into<String>, common_name: impl Into<String>, usage: Usage) -> Self {
        Self {
            name: name.into(),
            ca: ca.into(),
            common_name: common_name.into(),
            organization: None,
            sans: Vec::new(),
            usage,
            validity: DEFAULT_CERT_VALIDITY,
            key: KeyAlgorithm::default(),
            kubeconfig: None,
        }
    }

    pub fn with_organization(mut self, organization: impl Into<String>) -> Self {
        self.organization = Some(organization.into());
        self
    }

    pub fn with_sans<I, S>(mut self, sans: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sans.extend(sans.into_iter().map(Into::into));
        self
    }

    pub fn with_validity(mut self, validity: Duration) -> Self {
        self.validity = validity;
        self
    }

    pub fn with_key(mut self, key: KeyAlgorithm) -> Self {
        self.key = key;
        self
    }

    pub fn with_kubeconfig(mut self, spec: KubeconfigSpec) -> Self {
        self.kubeconfig = Some(spec);
        self
    }

    /// The SANs split into DNS names and IP addresses, duplicates removed, order kept.
    pub(crate) fn parsed_sans(&self) -> Result<Vec<San>, Error> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for raw in &self.sans {
            let san = San::parse(raw).ok_or_else(|| {
                Error::invalid(
                    kind::CERTIFICATE,
                    &self.name,
                    format!("SAN {raw:?} is neither a DNS name nor an IP address"),
                )
            })?;
            if seen.insert(san.clone()) {
                out.push(san);
            }
        }
        Ok(out)
    }
}

/// A subject alternative name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum San {
    Dns(String),
    Ip(IpAddr),
}

impl San {
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        if let Ok(ip) = raw.parse::<IpAddr>() {
            return Some(Self::Ip(ip));
        }
        is_dns_name(raw).then(|| Self::Dns(raw.to_ascii_lowercase()))
    }
}

/// An RFC 1123 host name, optionally with a leading `*.` wildcard label.
fn is_dns_name(name: &str) -> bool {
    let name = name.strip_prefix("*.").unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// The service-account token signing key pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceAccountKeyConfig {
    pub name: String,
    pub key: KeyAlgorithm,
}

/// An opaque random value (e.g. an encryption key or a static token).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RandomConfig {
    pub name: String,
    /// Number of random bytes; the stored value is their standard base64.
    pub bytes: usize,
}

/// An SSH key pair (Ed25519) for logging in to the shoot's machines. It is renewed in one step
/// (no second phase): a different `rotation` than the one the existing pair was made for moves
/// the pair to `<name>-old`, replacing the previous `-old`, and generates a new one, so the
/// nodes can trust the current and the previous key until the next renewal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshKeypairConfig {
    pub name: String,
    /// The start time of the last key-pair rotation (empty: never rotated).
    pub rotation: String,
}

/// Maximum size of a random value.
pub const MAX_RANDOM_BYTES: usize = 1024;

/// One declarative secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretConfig {
    Ca(CaConfig),
    Certificate(CertificateConfig),
    ServiceAccountKey(ServiceAccountKeyConfig),
    Random(RandomConfig),
    SshKeypair(SshKeypairConfig),
}

impl SecretConfig {
    pub fn name(&self) -> &str {
        match self {
            Self::Ca(c) => &c.name,
            Self::Certificate(c) => &c.name,
            Self::ServiceAccountKey(c) => &c.name,
            Self::Random(c) => &c.name,
            Self::SshKeypair(c) => &c.name,
        }
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Ca(_) => kind::CA,
            Self::Certificate(_) => kind::CERTIFICATE,
            Self::ServiceAccountKey(_) => kind::SERVICE_ACCOUNT_KEY,
            Self::Random(_) => kind::RANDOM,
            Self::SshKeypair(_) => kind::SSH_KEYPAIR,
        }
    }
}

impl From<CaConfig> for SecretConfig {
    fn from(c: CaConfig) -> Self {
        Self::Ca(c)
    }
}

impl From<CertificateConfig> for SecretConfig {
    fn from(c: CertificateConfig) -> Self {
        Self::Certificate(c)
    }
}

impl From<ServiceAccountKeyConfig> for SecretConfig {
    fn from(c: ServiceAccountKeyConfig) -> Self {
        Self::ServiceAccountKey(c)
    }
}

impl From<SshKeypairConfig> for SecretConfig {
    fn from(c: SshKeypairConfig) -> Self {
        Self::SshKeypair(c)
    }
}

impl From<RandomConfig> for SecretConfig {
    fn from(c: RandomConfig) -> Self {
        Self::Random(c)
    }
}

mod validate;
pub use validate::validate;

/// The CA configs among `configs`.
pub fn cas(configs: &[SecretConfig]) -> impl Iterator<Item = &CaConfig> {
    configs.iter().filter_map(|c| match c {
        SecretConfig::Ca(ca) => Some(ca),
        _ => None,
    })
}

/// What a certificate's content depends on; its checksum is stored with the secret. The
/// kubeconfig part is left out on purpose: a new server address re-renders the kubeconfig but
/// does not need a new certificate.
#[derive(Serialize)]
struct CertificateFingerprint<'a> {
    ca: &'a str,
    common_name: &'a str,
    organization: Option<&'a str>,
    sans: BTreeSet<String>,
    usage: Usage,
    validity_seconds: u64,
    key: KeyAlgorithm,
}

#[derive(Serialize)]
struct CaFingerprint<'a> {
    common_name: &'a str,
    validity_seconds: u64,
    key: KeyAlgorithm,
}

/// 128-bit hex checksum of the content-relevant part of a config (fits a label value).
pub(crate) fn checksum(config: &SecretConfig) -> String {
    let json = match config {
        SecretConfig::Ca(c) => serde_json::to_vec(&CaFingerprint {
            common_name: &c.common_name,
            validity_seconds: c.validity.as_secs(),
            key: c.key,
        }),
        SecretConfig::Certificate(c) => serde_json::to_vec(&CertificateFingerprint {
            ca: &c.ca,
            common_name: &c.common_name,
            organization: c.organization.as_deref(),
            sans: c.sans.iter().map(|s| s.to_ascii_lowercase()).collect(),
            usage: c.usage,
            validity_seconds: c.validity.as_secs(),
            key: c.key,
        }),
        SecretConfig::ServiceAccountKey(c) => serde_json::to_vec(&c.key),
        SecretConfig::Random(c) => serde_json::to_vec(&c.bytes),
        SecretConfig::SshKeypair(c) => serde_json::to_vec(&c.rotation),
    };
    // Serializing these plain structs cannot fail; an empty input still yields a stable value.
    let digest = ring::digest::digest(&ring::digest::SHA256, &json.unwrap_or_default());
    hex(&digest.as_ref()[..16])
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serving(sans: &[&str]) -> CertificateConfig {
        CertificateConfig::new("kube-apiserver", "ca", "kube-apiserver", Usage::Server).with_sans(sans.iter().copied())
    }

    #[test]
    fn san_rules() {
        let cases: &[(&str, bool)] = &[
            ("kubernetes", true),
            ("kubernetes.default.svc.cluster.local", true),
            ("*.etcd-main-peer.shoot--p--s.svc", true),
            ("10.0.0.1", true),
            ("::1", true),
            ("not a host", false),
            ("-leading.example", false),
            ("under_score.example", false),
            ("", false),
            ("a..b", false),
            ("*.", false),
            ("foo.*.bar", false),
        ];
        for (raw, ok) in cases {
            assert_eq!(San::parse(raw).is_some(), *ok, "{raw}");
        }
    }

    #[test]
    fn checksum_follows_content_not_order_or_kubeconfig() {
        let a = serving(&["kubernetes", "10.0.0.1"]);
        let b = serving(&["10.0.0.1", "KUBERNETES"]);
        assert_eq!(checksum(&a.clone().into()), checksum(&b.into()));
        let with_kubeconfig = a.clone().with_kubeconfig(KubeconfigSpec {
            cluster_name: "c".into(),
            server: "https://x".into(),
            trust: "ca".into(),
        });
        assert_eq!(checksum(&a.clone().into()), checksum(&with_kubeconfig.into()));
        let more = a.clone().with_sans(["api.example.com"]);
        assert_ne!(checksum(&a.clone().into()), checksum(&more.into()));
        assert_eq!(checksum(&a.into()).len(), 32);
    }
}
