//! Obtaining a seed client certificate: a new ECDSA P-256 key, a PKCS#10 request for
//! `gardener.cloud:system:seed:<seed>` in `gardener.cloud:system:seeds`, a
//! `certificates.k8s.io/v1` CertificateSigningRequest for the `kubernetes.io/kube-apiserver-client`
//! signer, and a bounded watch until it is approved and signed (or denied). The key never
//! leaves this process except into the kubeconfig Secret.

use super::Error;
use api::helpers::seed_identity;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client, ResourceExt};
use std::time::Duration;

/// Prefix of the CSRs' generated names.
pub const NAME_PREFIX: &str = "seed-csr-";
/// The validity asked for (`expirationSeconds`; kube-controller-manager 1.20 ignores it and
/// signs for its `--cluster-signing-duration`, one year by default).
pub const REQUESTED_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// The usages of a seed client certificate.
pub const USAGES: &[&str] = &["digital signature", "key encipherment", "client auth"];

/// A PEM private key; never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateKeyPem(pub String);

impl std::fmt::Debug for PrivateKeyPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKeyPem([redacted])")
    }
}

/// A signed certificate and its key.
#[derive(Debug, Clone)]
pub struct Issued {
    pub certificate_pem: String,
    pub key: PrivateKeyPem,
    /// The CSR it came from.
    pub csr_name: String,
}

/// A new key and the PEM certificate request of seed `seed` for it.
pub fn key_and_request(seed: &str) -> Result<(PrivateKeyPem, String), String> {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .map_err(|e| format!("generating an ECDSA P-256 key: {e}"))?;
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(rcgen::DnType::CommonName, seed_identity::user(seed));
    params.distinguished_name.push(rcgen::DnType::OrganizationName, seed_identity::GROUP);
    let request = params
        .serialize_request(&key)
        .and_then(|r| r.pem())
        .map_err(|e| format!("writing the certificate request: {e}"))?;
    Ok((PrivateKeyPem(key.serialize_pem()), request))
}

/// The CSR object for a PEM request.
pub fn csr_object(request_pem: &str) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta { generate_name: Some(NAME_PREFIX.into()), ..Default::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request_pem.as_bytes().to_vec()),
            signer_name: seed_identity::SIGNER.into(),
            usages: Some(USAGES.iter().map(|u| u.to_string()).collect()),
            expiration_seconds: Some(REQUESTED_VALIDITY.as_secs() as i32),
            ..Default::default()
        },
        status: None,
    }
}

/// Where a CSR stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Pending,
    /// Approved and signed: the PEM certificate.
    Issued(String),
    Denied {
        reason: String,
        message: String,
    },
    Failed {
        reason: String,
        message: String,
    },
}

/// Reads a CSR's state from its conditions and certificate.
pub fn state(csr: &CertificateSigningRequest) -> State {
    let status = csr.status.as_ref();
    let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    let find = |t: &str| conditions.iter().find(|c| c.type_ == t && c.status == "True");
    if let Some(c) = find("Denied") {
        return State::Denied {
            reason: c.reason.clone().unwrap_or_default(),
            message: c.message.clone().unwrap_or_default(),
        };
    }
    if let Some(c) = find("Failed") {
        return State::Failed {
            reason: c.reason.clone().unwrap_or_default(),
            message: c.message.clone().unwrap_or_default(),
        };
    }
    match status.and_then(|s| s.certificate.as_ref()) {
        Some(cert) if find("Approved").is_some() && !cert.0.is_empty() => {
            State::Issued(String::from_utf8_lossy(&cert.0).into_owned())
        }
        _ => State::Pending,
    }
}

/// Creates a CSR for seed `seed` as `client`'s identity and waits at most `timeout` for its
/// certificate.
#[tracing::instrument(skip_all, fields(seed = %seed))]
pub async fn request_certificate(client: &Client, seed: &str, timeout: Duration) -> Result<Issued, Error> {
    let (key, request) = key_and_request(seed).map_err(|what| Error::Generate { seed: seed.into(), what })?;
    let api: Api<CertificateSigningRequest> = Api::all(client.clone());
    let created = api
        .create(&PostParams::default(), &csr_object(&request))
        .await
        .map_err(|source| Error::CreateCsr { seed: seed.into(), source })?;
    let name = created.name_any();
    tracing::info!(csr = %name, "created a CertificateSigningRequest for the seed's garden identity; waiting for approval");
    let wait = kube::runtime::wait::await_condition(api, &name, |csr: Option<&CertificateSigningRequest>| {
        csr.is_some_and(|c| state(c) != State::Pending)
    });
    let csr = match tokio::time::timeout(timeout, wait).await {
        Err(_) => return Err(Error::Timeout { name, timeout }),
        Ok(Err(source)) => return Err(Error::Watch { name, source }),
        Ok(Ok(None)) => return Err(Error::Vanished { name }),
        Ok(Ok(Some(csr))) => csr,
    };
    match state(&csr) {
        State::Issued(certificate_pem) => {
            tracing::info!(csr = %name, "the CertificateSigningRequest was approved and signed");
            Ok(Issued { certificate_pem, key, csr_name: name })
        }
        State::Denied { reason, message } => Err(Error::Denied { name, reason, message }),
        State::Failed { reason, message } => Err(Error::Denied { name, reason: format!("Failed: {reason}"), message }),
        State::Pending => Err(Error::Timeout { name, timeout }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::certificates::v1::{CertificateSigningRequestCondition, CertificateSigningRequestStatus};

    #[test]
    fn the_request_names_the_seed_identity_and_the_key_is_not_shown() {
        let (key, pem) = key_and_request("a").unwrap();
        assert!(key.0.contains("PRIVATE KEY"));
        assert_eq!(format!("{key:?}"), "PrivateKeyPem([redacted])");
        let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        use x509_parser::prelude::FromDer;
        let (_, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents).unwrap();
        let subject = csr.certification_request_info.subject.to_string();
        assert!(subject.contains("CN=gardener.cloud:system:seed:a"), "{subject}");
        assert!(subject.contains("O=gardener.cloud:system:seeds"), "{subject}");
        csr.verify_signature().unwrap();
        let object = csr_object(&pem);
        assert_eq!(object.metadata.generate_name.as_deref(), Some("seed-csr-"));
        assert_eq!(object.spec.signer_name, "kubernetes.io/kube-apiserver-client");
        assert_eq!(object.spec.usages.unwrap(), ["digital signature", "key encipherment", "client auth"]);
    }

    fn with(conditions: &[(&str, &str)], certificate: Option<&str>) -> CertificateSigningRequest {
        CertificateSigningRequest {
            status: Some(CertificateSigningRequestStatus {
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(t, r)| CertificateSigningRequestCondition {
                            type_: t.to_string(),
                            status: "True".into(),
                            reason: Some(r.to_string()),
                            message: Some("m".into()),
                            ..Default::default()
                        })
                        .collect(),
                ),
                certificate: certificate.map(|c| ByteString(c.as_bytes().to_vec())),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_state_follows_the_conditions_and_the_certificate() {
        assert_eq!(state(&CertificateSigningRequest::default()), State::Pending);
        assert_eq!(state(&with(&[("Approved", "AutoApproved")], None)), State::Pending, "approved, not signed yet");
        assert_eq!(state(&with(&[("Approved", "AutoApproved")], Some("PEM"))), State::Issued("PEM".into()));
        assert_eq!(
            state(&with(&[("Denied", "SeedClientNotAuthorized")], None)),
            State::Denied { reason: "SeedClientNotAuthorized".into(), message: "m".into() }
        );
        assert!(matches!(state(&with(&[("Approved", "A"), ("Failed", "SignerFailed")], None)), State::Failed { .. }));
    }
}
