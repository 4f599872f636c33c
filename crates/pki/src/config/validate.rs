//! The rules every config must follow, checked before anything is generated. The first
//! broken rule is returned, naming the secret and the rule.

use super::{
    BUNDLE_SUFFIX, CertificateConfig, MAX_RANDOM_BYTES, MAX_VALIDITY, SecretConfig, bundle_name, cas, old_name,
};
use crate::error::{Error, kind};
use std::collections::BTreeSet;
use std::time::Duration;

/// Checks every rule; the first broken rule is returned, naming the secret.
pub fn validate(configs: &[SecretConfig]) -> Result<(), Error> {
    let mut names = BTreeSet::new();
    for config in configs {
        let name = config.name();
        check_name(config.kind(), name)?;
        if !names.insert(name.to_string()) {
            return Err(Error::invalid(config.kind(), name, "name is configured twice"));
        }
    }
    let ca_names: BTreeSet<&str> = cas(configs).map(|c| c.name.as_str()).collect();
    for ca in &ca_names {
        for derived in [bundle_name(ca), old_name(ca)] {
            if names.contains(&derived) {
                return Err(Error::invalid(
                    kind::CA,
                    ca,
                    format!("the name {derived:?} is reserved for this CA but configured as another secret"),
                ));
            }
        }
    }
    for config in configs {
        match config {
            SecretConfig::Ca(c) => {
                check_common_name(kind::CA, &c.name, &c.common_name)?;
                check_validity(kind::CA, &c.name, c.validity)?;
            }
            SecretConfig::Certificate(c) => validate_certificate(c, &ca_names)?,
            SecretConfig::ServiceAccountKey(_) | SecretConfig::SshKeypair(_) => {}
            SecretConfig::Random(c) => {
                if c.bytes == 0 || c.bytes > MAX_RANDOM_BYTES {
                    return Err(Error::invalid(
                        kind::RANDOM,
                        &c.name,
                        format!("size {} is outside 1..={MAX_RANDOM_BYTES} bytes", c.bytes),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn validate_certificate(c: &CertificateConfig, ca_names: &BTreeSet<&str>) -> Result<(), Error> {
    check_common_name(kind::CERTIFICATE, &c.name, &c.common_name)?;
    check_validity(kind::CERTIFICATE, &c.name, c.validity)?;
    if !ca_names.contains(c.ca.as_str()) {
        return Err(Error::invalid(kind::CERTIFICATE, &c.name, format!("signing CA {:?} is not configured", c.ca)));
    }
    if let Some(o) = &c.organization
        && (o.trim().is_empty() || o.chars().any(char::is_control))
    {
        return Err(Error::invalid(
            kind::CERTIFICATE,
            &c.name,
            format!("organization {o:?} is empty or not printable"),
        ));
    }
    let sans = c.parsed_sans()?;
    if c.usage.server() && sans.is_empty() {
        return Err(Error::invalid(kind::CERTIFICATE, &c.name, "a serving certificate needs at least one SAN"));
    }
    if let Some(k) = &c.kubeconfig {
        if !c.usage.client() {
            return Err(Error::invalid(kind::CERTIFICATE, &c.name, "a kubeconfig needs a client certificate"));
        }
        if !k.server.starts_with("https://") {
            return Err(Error::invalid(
                kind::CERTIFICATE,
                &c.name,
                format!("kubeconfig server {:?} is not an https:// URL", k.server),
            ));
        }
        if !ca_names.contains(k.trust.as_str()) {
            return Err(Error::invalid(
                kind::CERTIFICATE,
                &c.name,
                format!("kubeconfig trusts CA {:?}, which is not configured", k.trust),
            ));
        }
        if k.cluster_name.is_empty() {
            return Err(Error::invalid(kind::CERTIFICATE, &c.name, "kubeconfig cluster name is empty"));
        }
    }
    Ok(())
}

/// Secret names are DNS-1123 subdomains; the derived `-bundle`/`-old` names must fit too.
fn check_name(kind: &'static str, name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() + BUNDLE_SUFFIX.len() <= 253
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok { Ok(()) } else { Err(Error::invalid(kind, name, "name is not a valid lowercase DNS-1123 subdomain")) }
}

fn check_common_name(kind: &'static str, name: &str, cn: &str) -> Result<(), Error> {
    if cn.trim().is_empty() || cn.chars().any(char::is_control) {
        return Err(Error::invalid(kind, name, format!("common name {cn:?} is empty or not printable")));
    }
    Ok(())
}

fn check_validity(kind: &'static str, name: &str, validity: Duration) -> Result<(), Error> {
    if validity < Duration::from_secs(1) {
        return Err(Error::invalid(kind, name, "validity must be at least one second"));
    }
    if validity > MAX_VALIDITY {
        return Err(Error::invalid(kind, name, "validity must not exceed 100 years"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CaConfig, KubeconfigSpec, RandomConfig, Usage};

    fn ca() -> SecretConfig {
        CaConfig::new("ca", "kubernetes").into()
    }

    fn serving(sans: &[&str]) -> CertificateConfig {
        CertificateConfig::new("kube-apiserver", "ca", "kube-apiserver", Usage::Server).with_sans(sans.iter().copied())
    }

    #[test]
    fn invalid_san_error_names_secret_and_rule() {
        let configs = vec![ca(), serving(&["kubernetes", "not a host"]).into()];
        let err = validate(&configs).unwrap_err().to_string();
        assert_eq!(err, r#"certificate kube-apiserver: SAN "not a host" is neither a DNS name nor an IP address"#);
    }

    #[test]
    fn rules_name_the_secret() {
        let table: Vec<(Vec<SecretConfig>, &str)> = vec![
            (
                vec![ca(), serving(&[]).into()],
                "certificate kube-apiserver: a serving certificate needs at least one SAN",
            ),
            (
                vec![ca(), CertificateConfig::new("x", "nope", "x", Usage::Client).into()],
                "certificate x: signing CA \"nope\" is not configured",
            ),
            (vec![ca(), ca()], "CA ca: name is configured twice"),
            (
                vec![ca(), RandomConfig { name: "ca-bundle".into(), bytes: 8 }.into()],
                "CA ca: the name \"ca-bundle\" is reserved for this CA but configured as another secret",
            ),
            (
                vec![RandomConfig { name: "r".into(), bytes: 0 }.into()],
                "random value r: size 0 is outside 1..=1024 bytes",
            ),
            (vec![CaConfig::new("Upper", "x").into()], "CA Upper: name is not a valid lowercase DNS-1123 subdomain"),
            (vec![CaConfig::new("ca", " ").into()], "CA ca: common name \" \" is empty or not printable"),
            (
                vec![CaConfig::new("ca", "x").with_validity(Duration::ZERO).into()],
                "CA ca: validity must be at least one second",
            ),
            (
                vec![
                    ca(),
                    CertificateConfig::new("k", "ca", "k", Usage::Server)
                        .with_sans(["a"])
                        .with_kubeconfig(KubeconfigSpec {
                            cluster_name: "c".into(),
                            server: "https://a".into(),
                            trust: "ca".into(),
                        })
                        .into(),
                ],
                "certificate k: a kubeconfig needs a client certificate",
            ),
            (
                vec![
                    ca(),
                    CertificateConfig::new("k", "ca", "k", Usage::Client)
                        .with_kubeconfig(KubeconfigSpec {
                            cluster_name: "c".into(),
                            server: "http://a".into(),
                            trust: "ca".into(),
                        })
                        .into(),
                ],
                "certificate k: kubeconfig server \"http://a\" is not an https:// URL",
            ),
        ];
        for (configs, want) in table {
            assert_eq!(validate(&configs).unwrap_err().to_string(), want);
        }
    }
}
