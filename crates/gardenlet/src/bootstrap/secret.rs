//! The garden kubeconfig Secret in the seed: written with the server and CA of the bootstrap
//! kubeconfig and the certificate and key embedded (type Opaque, key `kubeconfig`), read back
//! at the next start.

use super::Error;
use super::csr::PrivateKeyPem;
use crate::config::SecretRef;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::{Api, Client};
use std::collections::BTreeMap;

/// The key of the kubeconfig in the Secret.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
const FIELD_MANAGER: &str = "gardenlet-bootstrap";

/// The garden's address and the CA that signed its serving certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub server: String,
    pub ca_pem: String,
}

/// A kubeconfig for `endpoint` with the client certificate and key embedded.
pub fn render(endpoint: &Endpoint, certificate_pem: &str, key: &PrivateKeyPem) -> Result<String, String> {
    pki::kubeconfig::render(
        "garden",
        &endpoint.server,
        &endpoint.ca_pem,
        pki::kubeconfig::Credentials::ClientCertificate { cert_pem: certificate_pem, key_pem: &key.0 },
    )
    .map_err(|e| e.to_string())
}

/// The PEM client certificate of a kubeconfig's current user (or its only one).
pub fn certificate_of(kubeconfig: &str) -> Result<String, String> {
    use base64::Engine;
    let config = kube::config::Kubeconfig::from_yaml(kubeconfig).map_err(|e| format!("is not a kubeconfig ({e})"))?;
    let user = config
        .current_context
        .as_deref()
        .and_then(|ctx| config.contexts.iter().find(|c| c.name == ctx))
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.clone());
    let auth = config
        .auth_infos
        .iter()
        .find(|a| user.as_deref().is_none_or(|u| Some(u) == Some(a.name.as_str())))
        .and_then(|a| a.auth_info.as_ref())
        .ok_or("names no user")?;
    let data = auth.client_certificate_data.as_deref().ok_or("holds no client-certificate-data")?;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("client-certificate-data is not base64 ({e})"))?;
    String::from_utf8(pem).map_err(|_| "client-certificate-data is not PEM".into())
}

/// The kubeconfig the Secret holds, if it exists and has one.
pub async fn read(seed: &Client, secret: &SecretRef) -> Result<Option<String>, Error> {
    let found = Api::<Secret>::namespaced(seed.clone(), &secret.namespace)
        .get_opt(&secret.name)
        .await
        .map_err(|source| Error::ReadSecret { secret: describe(secret), source })?;
    Ok(found
        .and_then(|s| s.data)
        .and_then(|mut d| d.remove(KUBECONFIG_KEY))
        .and_then(|b| String::from_utf8(b.0).ok())
        .filter(|k| !k.trim().is_empty()))
}

/// Writes the kubeconfig into the Secret (server-side apply, creating it when missing).
pub async fn write(seed: &Client, secret: &SecretRef, kubeconfig: &str) -> Result<(), Error> {
    let body = Secret {
        metadata: ObjectMeta {
            name: Some(secret.name.clone()),
            namespace: Some(secret.namespace.clone()),
            labels: Some(BTreeMap::from([("app.kubernetes.io/name".into(), "gardenlet".into())])),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(KUBECONFIG_KEY.into(), ByteString(kubeconfig.as_bytes().to_vec()))])),
        ..Default::default()
    };
    let mut value = serde_json::to_value(&body).map_err(|e| Error::Render { what: e.to_string() })?;
    value["apiVersion"] = "v1".into();
    value["kind"] = "Secret".into();
    Api::<Secret>::namespaced(seed.clone(), &secret.namespace)
        .patch(&secret.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&value))
        .await
        .map_err(|source| Error::WriteSecret { secret: describe(secret), source })?;
    Ok(())
}

pub fn describe(secret: &SecretRef) -> String {
    format!("{}/{}", secret.namespace, secret.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_is_read_back_from_the_rendered_kubeconfig() {
        let endpoint = Endpoint { server: "https://garden:443".into(), ca_pem: "CA PEM".into() };
        let key = PrivateKeyPem("-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n".into());
        let text = render(&endpoint, "CERT PEM", &key).unwrap();
        assert!(text.contains("https://garden:443"));
        assert!(!text.contains("secret"), "the key is embedded base64, not as text");
        assert_eq!(certificate_of(&text).unwrap(), "CERT PEM");
        assert!(certificate_of("apiVersion: v1\nkind: Config\nusers: []\n").unwrap_err().contains("no user"));
        assert!(certificate_of("{{").is_err());
    }
}
