//! Bootstrap tokens as kubeadm and the kube-apiserver define them, the CA pin that
//! `kubeadm join --discovery-token-ca-cert-hash` checks, and the `cluster-info` kubeconfig.
//!
//! A token is `<id>.<secret>` with `[a-z0-9]{6}` and `[a-z0-9]{16}`; it is stored as the Secret
//! `bootstrap-token-<id>` of type `bootstrap.kubernetes.io/token` in `kube-system`. With
//! `--enable-bootstrap-token-auth`, the kube-apiserver authenticates it as the user
//! `system:bootstrap:<id>` in the group `system:bootstrappers` plus the Secret's
//! `auth-extra-groups`.

use crate::error::{Error, kind};
use crate::inspect;
use crate::keys;
use crate::kubeconfig;
use crate::secret::{Secret, secret_types};
use std::time::{Duration, SystemTime};

/// Namespace of bootstrap-token Secrets.
pub const NAMESPACE: &str = "kube-system";
/// Prefix of a bootstrap-token Secret's name.
pub const SECRET_PREFIX: &str = "bootstrap-token-";
/// Every bootstrap token is in this group.
pub const GROUP: &str = "system:bootstrappers";
/// The user name prefix of an authenticated bootstrap token.
pub const USER_PREFIX: &str = "system:bootstrap:";
/// kubeadm's group for node-joining tokens.
pub const DEFAULT_NODE_TOKEN_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";
/// kubeadm's default token lifetime.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 3600);
/// Name of the ConfigMap (in `kube-public`) that publishes the cluster's CA and address.
pub const CLUSTER_INFO: &str = "cluster-info";

const ID_LEN: usize = 6;
const SECRET_LEN: usize = 16;

/// A bootstrap token. `Debug` shows the public id only.
#[derive(Clone, PartialEq, Eq)]
pub struct BootstrapToken {
    id: String,
    secret: String,
}

impl std::fmt::Debug for BootstrapToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootstrapToken").field("id", &self.id).field("secret", &"<redacted>").finish()
    }
}

fn is_token_part(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

impl BootstrapToken {
    /// A new random token.
    pub fn generate() -> Result<Self, Error> {
        let id = keys::random_alphanumeric(ID_LEN, kind::BOOTSTRAP_TOKEN, "(new)")?;
        let secret = keys::random_alphanumeric(SECRET_LEN, kind::BOOTSTRAP_TOKEN, &id)?;
        Ok(Self { id, secret })
    }

    /// Parses `<id>.<secret>`; the error names the id (never the secret part).
    pub fn parse(token: &str) -> Result<Self, Error> {
        let (id, secret) = token.split_once('.').unwrap_or((token, ""));
        let shown = if is_token_part(id, ID_LEN) { id } else { "(malformed)" };
        if !is_token_part(id, ID_LEN) || !is_token_part(secret, SECRET_LEN) {
            return Err(Error::invalid(kind::BOOTSTRAP_TOKEN, shown, "token does not match [a-z0-9]{6}.[a-z0-9]{16}"));
        }
        Ok(Self { id: id.to_string(), secret: secret.to_string() })
    }

    /// The public part.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The full token `<id>.<secret>`, for a kubeconfig or `kubeadm join --token`.
    pub fn expose(&self) -> String {
        format!("{}.{}", self.id, self.secret)
    }

    /// `bootstrap-token-<id>`.
    pub fn secret_name(&self) -> String {
        format!("{SECRET_PREFIX}{}", self.id)
    }

    /// `system:bootstrap:<id>`, the user the kube-apiserver authenticates the token as.
    pub fn user_name(&self) -> String {
        format!("{USER_PREFIX}{}", self.id)
    }
}

/// What a token may be used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenUsage {
    /// Bearer authentication against the kube-apiserver.
    Authentication,
    /// Signing the `cluster-info` ConfigMap (by kube-controller-manager's bootstrap signer).
    Signing,
}

/// Options of a bootstrap-token Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenOptions {
    pub description: Option<String>,
    /// Lifetime from now; `None` for a token that does not expire.
    pub ttl: Option<Duration>,
    pub usages: Vec<TokenUsage>,
    /// Groups besides `system:bootstrappers`; each must start with `system:bootstrappers:`.
    pub extra_groups: Vec<String>,
}

impl Default for TokenOptions {
    /// kubeadm's defaults: 24 h, authentication and signing, the default node-token group.
    fn default() -> Self {
        Self {
            description: None,
            ttl: Some(DEFAULT_TTL),
            usages: vec![TokenUsage::Authentication, TokenUsage::Signing],
            extra_groups: vec![DEFAULT_NODE_TOKEN_GROUP.to_string()],
        }
    }
}

/// Group names the kube-apiserver accepts in `auth-extra-groups`:
/// `system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]`.
fn is_extra_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else { return false };
    !rest.is_empty()
        && rest.len() <= 256
        && rest.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
        && rest.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// The `bootstrap-token-<id>` Secret (namespace [`NAMESPACE`]).
pub fn secret(token: &BootstrapToken, options: &TokenOptions, now: SystemTime) -> Result<Secret, Error> {
    let invalid = |rule: String| Error::invalid(kind::BOOTSTRAP_TOKEN, token.id(), rule);
    if let Some(group) = options.extra_groups.iter().find(|g| !is_extra_group(g)) {
        return Err(invalid(format!(
            "extra group {group:?} does not match system:bootstrappers:[a-z0-9:-]{{0,255}}[a-z0-9]"
        )));
    }
    if options.usages.is_empty() {
        return Err(invalid("a token needs at least one usage".into()));
    }
    let mut secret = Secret::new(token.secret_name(), secret_types::BOOTSTRAP_TOKEN)
        .with_data("token-id", &token.id)
        .with_data("token-secret", &token.secret);
    for usage in &options.usages {
        let key = match usage {
            TokenUsage::Authentication => "usage-bootstrap-authentication",
            TokenUsage::Signing => "usage-bootstrap-signing",
        };
        secret = secret.with_data(key, "true");
    }
    if !options.extra_groups.is_empty() {
        secret = secret.with_data("auth-extra-groups", options.extra_groups.join(","));
    }
    if let Some(description) = &options.description {
        secret = secret.with_data("description", description);
    }
    if let Some(ttl) = options.ttl {
        let seconds = i64::try_from(ttl.as_secs()).map_err(|_| invalid("ttl is too long".into()))?;
        let expires = inspect::unix_seconds(now).saturating_add(seconds);
        secret = secret.with_data("expiration", inspect::rfc3339(expires));
    }
    Ok(secret)
}

/// `sha256:<hex>` over the DER SubjectPublicKeyInfo of each CA certificate in `ca_pem` (RFC
/// 7469 public-key pinning), as `kubeadm join --discovery-token-ca-cert-hash` expects; one per
/// certificate, in order, so a bundle during a CA rotation yields both pins.
pub fn ca_cert_hashes(ca_pem: &str) -> Result<Vec<String>, Error> {
    let problem = |p: String| Error::invalid(kind::CA, "(pin)", format!("CA certificate {p}"));
    inspect::certificate_ders(ca_pem)
        .map_err(problem)?
        .into_iter()
        .map(|der| {
            let info = inspect::parse_der(der).map_err(problem)?;
            let digest = ring::digest::digest(&ring::digest::SHA256, &info.spki_der);
            Ok(format!("sha256:{}", crate::config::hex(digest.as_ref())))
        })
        .collect()
}

/// The kubeconfig kubeadm publishes as `kubeconfig` in the `cluster-info` ConfigMap: server
/// and CA bundle, no credentials.
pub fn cluster_info_kubeconfig(server: &str, ca_bundle_pem: &str) -> Result<String, Error> {
    kubeconfig::cluster_only(server, ca_bundle_pem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_match_the_format() {
        let t = BootstrapToken::generate().unwrap();
        let exposed = t.expose();
        assert_eq!(BootstrapToken::parse(&exposed).unwrap(), t);
        assert_eq!(exposed.len(), 23);
        assert_eq!(t.secret_name(), format!("bootstrap-token-{}", t.id()));
        assert_eq!(t.user_name(), format!("system:bootstrap:{}", t.id()));
        assert!(!format!("{t:?}").contains(&t.secret));
        assert_ne!(BootstrapToken::generate().unwrap(), t);
    }

    #[test]
    fn malformed_tokens_are_refused_without_echoing_the_secret() {
        for bad in ["abcdef", "abcdef.0123456789abcde", "ABCDEF.0123456789abcdef", "abcdef-0123456789abcdef", ""] {
            let err = BootstrapToken::parse(bad).unwrap_err().to_string();
            assert!(err.contains("does not match"), "{bad}: {err}");
            assert!(!err.contains("0123456789"), "{err}");
        }
        assert_eq!(BootstrapToken::parse("abcdef.0123456789abcdef").unwrap().id(), "abcdef");
    }

    #[test]
    fn secret_has_kubeadm_fields() {
        let token = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let options = TokenOptions { description: Some("join".into()), ..TokenOptions::default() };
        let s = secret(&token, &options, now).unwrap();
        assert_eq!(s.name, "bootstrap-token-abcdef");
        assert_eq!(s.type_, "bootstrap.kubernetes.io/token");
        assert_eq!(s.get("token-id"), Some("abcdef"));
        assert_eq!(s.get("token-secret"), Some("0123456789abcdef"));
        assert_eq!(s.get("usage-bootstrap-authentication"), Some("true"));
        assert_eq!(s.get("usage-bootstrap-signing"), Some("true"));
        assert_eq!(s.get("auth-extra-groups"), Some("system:bootstrappers:kubeadm:default-node-token"));
        assert_eq!(s.get("expiration"), Some("2023-11-15T22:13:20Z"));
        assert_eq!(s.get("description"), Some("join"));
        assert!(!format!("{s:?}").contains("0123456789abcdef"));
    }

    #[test]
    fn extra_groups_are_checked() {
        let token = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        for (group, ok) in [
            ("system:bootstrappers:worker", true),
            ("system:bootstrappers:kubeadm:default-node-token", true),
            ("system:masters", false),
            ("system:bootstrappers:", false),
            ("system:bootstrappers:Upper", false),
            ("system:bootstrappers:trailing-", false),
        ] {
            let options = TokenOptions { extra_groups: vec![group.into()], ..TokenOptions::default() };
            assert_eq!(secret(&token, &options, SystemTime::now()).is_ok(), ok, "{group}");
        }
    }

    /// A CA made with openssl; its pin computed with the command kubeadm documents:
    /// `openssl x509 -pubkey -in ca.crt | openssl pkey -pubin -outform der | sha256sum`.
    const OPENSSL_CA: &str = include_str!("../tests/fixtures/openssl-ca.crt");
    const OPENSSL_PIN: &str = include_str!("../tests/fixtures/openssl-ca.pin");

    #[test]
    fn ca_pin_matches_kubeadm_documented_command() {
        assert_eq!(ca_cert_hashes(OPENSSL_CA).unwrap(), vec![OPENSSL_PIN.trim().to_string()]);
        let bundle = format!("{OPENSSL_CA}{OPENSSL_CA}");
        assert_eq!(ca_cert_hashes(&bundle).unwrap().len(), 2);
        assert!(ca_cert_hashes("junk").is_err());
    }

    #[test]
    fn cluster_info_has_no_credentials() {
        let yaml = cluster_info_kubeconfig("https://api.example.com", OPENSSL_CA).unwrap();
        assert!(yaml.contains("server: https://api.example.com"));
        assert!(!yaml.contains("client-key-data") && !yaml.contains("token"));
    }
}
