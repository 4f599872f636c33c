//! Short-lived admin kubeconfigs (GEP-16 `AdminKubeconfigRequest`): a client certificate whose
//! CN is the requesting user and whose organization is `system:masters`, signed by the shoot's
//! client CA, valid for the requested duration capped by a configured maximum. Nothing is
//! stored; every request issues a fresh certificate and key.

use crate::config::{CertificateConfig, Usage, bundle_name};
use crate::error::{Error, kind};
use crate::issue::Signer;
use crate::kubeconfig::{self, Credentials};
use crate::secret::{SecretSet, data_keys};
use crate::shoot_set::{names, subjects};
use std::time::{Duration, SystemTime};

/// Default cap on the requested validity.
pub const DEFAULT_MAX_EXPIRATION: Duration = Duration::from_secs(24 * 3600);

/// A user's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminKubeconfigRequest {
    /// The requesting user (from the garden's authentication): the certificate's CN.
    pub user: String,
    /// Requested validity.
    pub expiration: Duration,
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

/// An issued kubeconfig. `Debug` hides it (it contains a private key).
#[derive(Clone, PartialEq, Eq)]
pub struct AdminKubeconfig {
    pub kubeconfig: String,
    /// When the certificate expires (the request's `status.expirationTimestamp`).
    pub expiration: SystemTime,
}

impl std::fmt::Debug for AdminKubeconfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminKubeconfig").field("expiration", &self.expiration).finish_non_exhaustive()
    }
}

/// Issues a kubeconfig for `request` from the shoot's secrets.
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
    let validity = request.expiration.min(settings.max_expiration);
    let ca = &settings.signing_ca;
    let missing = |what: &str| invalid(&format!("{what} is missing from the shoot's secrets"));
    let cert_pem =
        secrets.value(ca, data_keys::CA_CERT).ok_or_else(|| missing(&format!("{ca}/{}", data_keys::CA_CERT)))?;
    let key_pem =
        secrets.value(ca, data_keys::CA_KEY).ok_or_else(|| missing(&format!("{ca}/{}", data_keys::CA_KEY)))?;
    let bundle_secret = bundle_name(&settings.trusted_ca);
    let bundle = secrets
        .value(&bundle_secret, data_keys::BUNDLE)
        .ok_or_else(|| missing(&format!("{bundle_secret}/{}", data_keys::BUNDLE)))?;
    let signer = Signer::load(ca, cert_pem, key_pem)?;
    let config = CertificateConfig::new("admin-kubeconfig-request", ca.as_str(), user, Usage::Client)
        .with_organization(subjects::SYSTEM_MASTERS)
        .with_validity(validity);
    let issued = signer.sign(&config, now)?;
    let kubeconfig = kubeconfig::render(
        &settings.cluster_name,
        &settings.server,
        bundle,
        Credentials::ClientCertificate { cert_pem: &issued.cert_pem, key_pem: &issued.key_pem },
    )?;
    let info = crate::inspect::parse(&issued.cert_pem)
        .map_err(|p| Error::invalid(kind::ADMIN_KUBECONFIG, &format!("{user:?}"), format!("issued certificate {p}")))?;
    let expiration = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(info.not_after).unwrap_or(0));
    Ok(AdminKubeconfig { kubeconfig, expiration })
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

    fn client_cert(kubeconfig: &str) -> inspect::CertInfo {
        let v: serde_yaml::Value = serde_yaml::from_str(kubeconfig).unwrap();
        let b64 = v["users"][0]["user"]["client-certificate-data"].as_str().unwrap();
        let pem = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        inspect::parse(std::str::from_utf8(&pem).unwrap()).unwrap()
    }

    #[test]
    fn certificate_names_the_user_and_is_capped() {
        let set = secrets();
        let mut settings = AdminKubeconfigSettings::new("shoot--p--s", "https://api.example.com");
        settings.max_expiration = Duration::from_secs(600);
        let now = SystemTime::now();
        let request = AdminKubeconfigRequest { user: "jane@example.com".into(), expiration: Duration::from_secs(7200) };
        let issued = issue(&set, &settings, &request, now).unwrap();
        let cert = client_cert(&issued.kubeconfig);
        assert_eq!(cert.common_name, "jane@example.com");
        assert!(cert.organizations.contains("system:masters"));
        assert_eq!(cert.not_after, inspect::unix_seconds(now) + 600);
        assert_eq!(inspect::unix_seconds(issued.expiration), cert.not_after);
        let ca = inspect::parse(set.value("ca-client", "ca.crt").unwrap()).unwrap();
        assert!(inspect::signed_by(&cert, &ca));
        assert!(!format!("{issued:?}").contains("PRIVATE KEY"));

        let short = AdminKubeconfigRequest { expiration: Duration::from_secs(5), ..request };
        let cert = client_cert(&issue(&set, &settings, &short, now).unwrap().kubeconfig);
        assert_eq!(cert.not_after, inspect::unix_seconds(now) + 5);
    }

    #[test]
    fn bad_requests_name_the_user_and_rule() {
        let set = secrets();
        let settings = AdminKubeconfigSettings::new("c", "https://a");
        let zero = AdminKubeconfigRequest { user: "jane".into(), expiration: Duration::ZERO };
        assert_eq!(
            issue(&set, &settings, &zero, SystemTime::now()).unwrap_err().to_string(),
            "admin kubeconfig for \"jane\": the expiration must be at least one second"
        );
        let nobody = AdminKubeconfigRequest { user: " ".into(), expiration: Duration::from_secs(60) };
        assert!(issue(&set, &settings, &nobody, SystemTime::now()).is_err());
        let request = AdminKubeconfigRequest { user: "jane".into(), expiration: Duration::from_secs(60) };
        assert_eq!(
            issue(&SecretSet::new(), &settings, &request, SystemTime::now()).unwrap_err().to_string(),
            "admin kubeconfig for \"jane\": ca-client/ca.crt is missing from the shoot's secrets"
        );
    }
}
