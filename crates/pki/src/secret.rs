//! The crate's output: plain Secret-like values (name, type, data, labels) that gardenlet turns
//! into Kubernetes Secrets, and the set of them that the manager reads and writes.
//!
//! Data values are text (PEM, YAML, tokens), kept as `String`s; gardenlet stores them as the
//! Secret's bytes. `Debug` prints data keys and sizes only, never values.

use std::collections::BTreeMap;

/// Keys inside a secret's data.
pub mod data_keys {
    /// A CA's certificate (PEM).
    pub const CA_CERT: &str = "ca.crt";
    /// A CA's private key (PKCS#8 PEM).
    pub const CA_KEY: &str = "ca.key";
    /// A trust bundle: the CA certificates a peer should trust (PEM, newest first).
    pub const BUNDLE: &str = "bundle.crt";
    /// A leaf certificate (PEM).
    pub const TLS_CERT: &str = "tls.crt";
    /// A leaf certificate's private key (PKCS#8 PEM).
    pub const TLS_KEY: &str = "tls.key";
    /// A kubeconfig with embedded CA bundle, client certificate and key.
    pub const KUBECONFIG: &str = "kubeconfig";
    /// The service-account signing key (PKCS#8 PEM).
    pub const SA_KEY: &str = "sa.key";
    /// The service-account verification key (SubjectPublicKeyInfo PEM).
    pub const SA_PUB: &str = "sa.pub";
    /// An opaque random value (standard base64 of the random bytes).
    pub const VALUE: &str = "value";
    /// An SSH key pair's private key (OpenSSH format). Named as in the reference system, whose
    /// tools read it, although the key is Ed25519.
    pub const SSH_PRIVATE_KEY: &str = "id_rsa";
    /// An SSH key pair's public key, one `authorized_keys` line.
    pub const SSH_PUBLIC_KEY: &str = "id_rsa.pub";
    /// The key-pair rotation an SSH key pair was made for.
    pub const SSH_ROTATION: &str = "rotation";
}

/// Labels the manager sets on the secrets it produces.
pub mod labels {
    /// What the secret is: `ca`, `ca-bundle`, `certificate`, `service-account-key`, `random`.
    pub const KIND: &str = "pki.gardener.cloud/kind";
    /// Checksum (128-bit, hex) of the config the content was made from.
    pub const CONFIG_CHECKSUM: &str = "pki.gardener.cloud/config-checksum";
    /// For certificates and bundles: the name of the CA config they belong to.
    pub const CA: &str = "pki.gardener.cloud/ca";
}

/// Kubernetes Secret types used.
pub mod secret_types {
    pub const OPAQUE: &str = "Opaque";
    pub const TLS: &str = "kubernetes.io/tls";
    pub const BOOTSTRAP_TOKEN: &str = "bootstrap.kubernetes.io/token";
}

/// A secret as gardenlet will write it.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret {
    pub name: String,
    /// The Kubernetes Secret type (`Opaque`, `kubernetes.io/tls`, ...).
    pub type_: String,
    pub data: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
}

impl Secret {
    pub fn new(name: impl Into<String>, type_: impl Into<String>) -> Self {
        Self { name: name.into(), type_: type_.into(), ..Default::default() }
    }

    pub fn with_data(mut self, key: &str, value: impl Into<String>) -> Self {
        self.data.insert(key.to_string(), value.into());
        self
    }

    pub fn with_label(mut self, key: &str, value: impl Into<String>) -> Self {
        self.labels.insert(key.to_string(), value.into());
        self
    }

    /// A data value, or `None` when the key is missing.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.data.get(key).map(String::as_str)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let data: BTreeMap<&str, String> =
            self.data.iter().map(|(k, v)| (k.as_str(), format!("<{} bytes>", v.len()))).collect();
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("type", &self.type_)
            .field("labels", &self.labels)
            .field("data", &data)
            .finish()
    }
}

/// Secrets by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecretSet {
    secrets: BTreeMap<String, Secret>,
}

impl SecretSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, name: &str) -> Option<&Secret> {
        self.secrets.get(name)
    }

    /// Inserts (or replaces) a secret under its own name.
    pub fn insert(&mut self, secret: Secret) {
        self.secrets.insert(secret.name.clone(), secret);
    }

    pub fn remove(&mut self, name: &str) -> Option<Secret> {
        self.secrets.remove(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.secrets.contains_key(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Secret> {
        self.secrets.values()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.secrets.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// A data value of a secret, when both exist.
    pub fn value(&self, name: &str, key: &str) -> Option<&str> {
        self.get(name).and_then(|s| s.get(key))
    }
}

impl FromIterator<Secret> for SecretSet {
    fn from_iter<T: IntoIterator<Item = Secret>>(iter: T) -> Self {
        let mut set = Self::new();
        for secret in iter {
            set.insert(secret);
        }
        set
    }
}

impl IntoIterator for SecretSet {
    type Item = Secret;
    type IntoIter = std::collections::btree_map::IntoValues<String, Secret>;

    fn into_iter(self) -> Self::IntoIter {
        self.secrets.into_values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_keys_and_sizes_but_no_values() {
        let secret = Secret::new("s", secret_types::OPAQUE).with_data("tls.key", "-----BEGIN PRIVATE KEY-----\nabc");
        let text = format!("{:?}", SecretSet::from_iter([secret]));
        assert!(text.contains("tls.key") && text.contains("bytes"), "{text}");
        assert!(!text.contains("PRIVATE KEY") && !text.contains("abc"), "{text}");
    }
}
