//! One error type for the crate. Every variant names the secret (or request) and the rule that
//! failed; none carries key material: sources are rcgen, ring, rsa, x509 and YAML errors, whose
//! messages describe encodings and algorithms, never key bytes.

/// Errors of the PKI crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration or request breaks a rule.
    #[error("{kind} {name}: {rule}")]
    Invalid { kind: &'static str, name: String, rule: String },
    /// An existing secret cannot be used (and must not be replaced silently).
    #[error("{kind} {name}: existing secret {problem}")]
    Existing { kind: &'static str, name: String, problem: String },
    /// Generating a key, signing a certificate or rendering a kubeconfig failed.
    #[error("{kind} {name}: {step}")]
    Generate {
        kind: &'static str,
        name: String,
        step: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    pub(crate) fn invalid(kind: &'static str, name: &str, rule: impl Into<String>) -> Self {
        Self::Invalid { kind, name: name.to_string(), rule: rule.into() }
    }

    pub(crate) fn existing(kind: &'static str, name: &str, problem: impl Into<String>) -> Self {
        Self::Existing { kind, name: name.to_string(), problem: problem.into() }
    }

    /// Wraps a library error; used as `.map_err(Error::generate(kind, name, step))`.
    pub(crate) fn generate<E>(kind: &'static str, name: &str, step: &'static str) -> impl FnOnce(E) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let name = name.to_string();
        move |source| Self::Generate { kind, name, step, source: Box::new(source) }
    }
}

/// The `kind` words used in messages.
pub(crate) mod kind {
    pub const CA: &str = "CA";
    pub const CERTIFICATE: &str = "certificate";
    pub const SERVICE_ACCOUNT_KEY: &str = "service-account key";
    pub const RANDOM: &str = "random value";
    pub const SSH_KEYPAIR: &str = "SSH key pair";
    pub const BOOTSTRAP_TOKEN: &str = "bootstrap token";
    pub const ADMIN_KUBECONFIG: &str = "admin kubeconfig for";
    pub const KUBECONFIG: &str = "kubeconfig";
    pub const SHOOTSTATE: &str = "ShootState entry";
    pub const ROTATION: &str = "CA rotation of";
    pub const KEY_ROTATION: &str = "key rotation of";
}
