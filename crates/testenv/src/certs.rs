//! The throw-away PKI of a test control plane: one CA, the kube-apiserver serving certificate,
//! an admin client certificate (`system:masters`) and the service-account key pair.

use crate::Error;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use std::net::IpAddr;

/// PEM material written into the environment's directory.
pub(crate) struct Material {
    pub ca_cert: String,
    pub ca_key: String,
    pub serving_cert: String,
    pub serving_key: String,
    pub admin_cert: String,
    pub admin_key: String,
    pub sa_public: String,
    pub sa_private: String,
}

impl std::fmt::Debug for Material {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Material").finish_non_exhaustive()
    }
}

fn pki(what: &'static str) -> impl Fn(rcgen::Error) -> Error {
    move |source| Error::Pki { what, source }
}

pub(crate) fn generate(host: IpAddr) -> Result<Material, Error> {
    let ca_key = KeyPair::generate().map_err(pki("CA key"))?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(pki("CA params"))?;
    ca.distinguished_name = dn("testenv-ca", None);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let ca_cert = ca.self_signed(&ca_key).map_err(pki("CA certificate"))?;
    let issuer = Issuer::new(ca, &ca_key);

    let serving_key = KeyPair::generate().map_err(pki("serving key"))?;
    let mut serving = CertificateParams::new(vec!["localhost".to_string(), "kubernetes".to_string()])
        .map_err(pki("serving params"))?;
    serving.subject_alt_names.push(SanType::IpAddress(host));
    serving.distinguished_name = dn("kube-apiserver", None);
    serving.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let serving_cert = serving.signed_by(&serving_key, &issuer).map_err(pki("serving certificate"))?;

    let admin_key = KeyPair::generate().map_err(pki("admin key"))?;
    let mut admin = CertificateParams::new(Vec::<String>::new()).map_err(pki("admin params"))?;
    admin.distinguished_name = dn("testenv-admin", Some("system:masters"));
    admin.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let admin_cert = admin.signed_by(&admin_key, &issuer).map_err(pki("admin certificate"))?;

    let sa = KeyPair::generate().map_err(pki("service-account key"))?;

    Ok(Material {
        ca_cert: ca_cert.pem(),
        ca_key: ca_key.serialize_pem(),
        serving_cert: serving_cert.pem(),
        serving_key: serving_key.serialize_pem(),
        admin_cert: admin_cert.pem(),
        admin_key: admin_key.serialize_pem(),
        sa_public: sa.public_key_pem(),
        sa_private: sa.serialize_pem(),
    })
}

fn dn(cn: &str, o: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    if let Some(o) = o {
        dn.push(DnType::OrganizationName, o);
    }
    dn
}

/// A client certificate and key (PEM) for `user` in `group` (the kube-apiserver reads the
/// certificate's common name as the user and its organization as the group), signed by the CA.
pub(crate) fn client(ca_cert: &str, ca_key: &str, user: &str, group: Option<&str>) -> Result<(String, String), Error> {
    let ca_key = KeyPair::from_pem(ca_key).map_err(pki("CA key"))?;
    let issuer = Issuer::from_ca_cert_pem(ca_cert, ca_key).map_err(pki("CA certificate"))?;
    let key = KeyPair::generate().map_err(pki("client key"))?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(pki("client params"))?;
    params.distinguished_name = dn(user, group);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).map_err(pki("client certificate"))?;
    Ok((cert.pem(), key.serialize_pem()))
}
