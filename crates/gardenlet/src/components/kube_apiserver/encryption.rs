//! kube-apiserver's encryption of data at rest: the EncryptionConfiguration gardenlet renders
//! from the shoot's key (and the previous one during a rotation), its `encryptionConfig`
//! resources and providers, and the Secret that carries it to the API server.

use super::labels;
use crate::components::common::{self, ControlPlaneValues};
use std::collections::BTreeMap;

/// The Secret holding kube-apiserver's EncryptionConfiguration (rendered by gardenlet from the
/// shoot's `etcd-encryption-key`).
pub const ENCRYPTION_CONFIG_SECRET: &str = "kube-apiserver-etcd-encryption-configuration";
/// Its data key.
pub const ENCRYPTION_CONFIG_KEY: &str = "encryption-configuration.yaml";

/// The name of a key in the EncryptionConfiguration: derived from the key, so a new key gets a
/// new name and data written with the old one stays readable while both are listed.
pub fn encryption_key_name(key: &str) -> String {
    format!("key-{}", &common::checksum(key)[..12])
}

/// kube-apiserver's EncryptionConfiguration: Secrets are written encrypted with AES-CBC under
/// `key` (standard base64 of 32 bytes); during a key rotation `previous` follows, so what it
/// encrypted stays readable until it is rewritten; `identity` last, so Secrets written before
/// encryption was switched on stay readable (and are encrypted when next written).
pub fn encryption_configuration(key: &str, previous: Option<&str>) -> String {
    encryption_configuration_for(key, previous, &[], Providers::default())
}

/// The encryption providers of a shoot's EncryptionConfiguration: `current` encrypts writes;
/// `previous`, when it differs, is listed after it with the same keys, so data it wrote stays
/// readable until the rotation that a provider change begins has rewritten it. Empty is
/// `aescbc`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Providers<'a> {
    pub current: &'a str,
    pub previous: &'a str,
}

impl<'a> Providers<'a> {
    fn named(name: &'a str) -> &'a str {
        if name.is_empty() { api::helpers::encryption::AESCBC } else { name }
    }

    /// The providers in order, each once.
    pub(crate) fn in_order(&self) -> Vec<&'a str> {
        let (current, previous) = (Self::named(self.current), Self::named(self.previous));
        if current == previous { vec![current] } else { vec![current, previous] }
    }
}

/// The resources encrypted: `secrets` and the shoot's `encryptionConfig.resources`
/// (`resource` or `resource.group`; a trailing `.` of a core resource dropped), each once.
pub fn encrypted_resources(extra: &[String]) -> Vec<String> {
    let mut out = vec!["secrets".to_string()];
    for r in extra {
        let r = r.trim_end_matches('.').to_string();
        if !r.is_empty() && !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// The shoot's listed resources as `status.encryptedResources` names them: normalised, each
/// once, without `secrets` (always encrypted).
pub fn listed_encrypted_resources(extra: &[String]) -> Vec<String> {
    encrypted_resources(extra).into_iter().skip(1).collect()
}

/// [`encryption_configuration`] for `secrets` and the `extra` resources (see
/// [`encrypted_resources`]) with `providers`: all of them share the providers.
pub fn encryption_configuration_for(
    key: &str,
    previous: Option<&str>,
    extra: &[String],
    providers: Providers,
) -> String {
    let mut keys = String::new();
    for k in std::iter::once(key).chain(previous) {
        keys.push_str(&format!("      - name: {}\n        secret: {}\n", encryption_key_name(k), k.trim()));
    }
    let resources: String = encrypted_resources(extra).iter().map(|r| format!("  - {r}\n")).collect();
    let encrypting: String = providers.in_order().iter().map(|p| format!("  - {p}:\n      keys:\n{keys}")).collect();
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources:\n{resources}  providers:\n{encrypting}  - identity: {{}}\n"
    )
}

/// The shoot's providers: what its spec asks for, and what its data may still be encrypted with.
pub fn providers(values: &ControlPlaneValues) -> Providers<'_> {
    Providers {
        current: &values.apiserver.encryption_provider,
        previous: &values.apiserver.previous_encryption_provider,
    }
}

/// The Secret with the EncryptionConfiguration for `key` (and `previous`, see
/// [`encryption_configuration`]).
pub fn encryption_config_secret(
    values: &ControlPlaneValues,
    key: &str,
    previous: Option<&str>,
) -> k8s_openapi::api::core::v1::Secret {
    use k8s_openapi::ByteString;
    k8s_openapi::api::core::v1::Secret {
        metadata: common::metadata(ENCRYPTION_CONFIG_SECRET, values, labels()),
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(
            ENCRYPTION_CONFIG_KEY.to_string(),
            ByteString(
                encryption_configuration_for(key, previous, &values.apiserver.encrypted_resources, providers(values))
                    .into_bytes(),
            ),
        )])),
        ..Default::default()
    }
}
