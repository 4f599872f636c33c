//! Rendering kubeconfig files: one cluster, one context, one user, with the CA bundle and (for
//! certificate users) the client certificate and key embedded as base64, so the file is usable
//! on its own. The output is deterministic: the same inputs give the same bytes.

use crate::error::{Error, kind};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Serialize;

/// How the kubeconfig's user authenticates.
pub enum Credentials<'a> {
    /// A client certificate and its private key (PEM).
    ClientCertificate { cert_pem: &'a str, key_pem: &'a str },
    /// A client certificate whose private key the user adds (the key never left them).
    ClientCertificateOnly { cert_pem: &'a str },
    /// A bearer token (e.g. a bootstrap token).
    Token(&'a str),
}

impl std::fmt::Debug for Credentials<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ClientCertificate { .. } => f.write_str("ClientCertificate(<redacted>)"),
            Self::ClientCertificateOnly { cert_pem } => {
                f.debug_struct("ClientCertificateOnly").field("cert_pem", cert_pem).finish()
            }
            Self::Token(_) => f.write_str("Token(<redacted>)"),
        }
    }
}

#[derive(Serialize)]
struct Config<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    clusters: Vec<Named<'a, Cluster<'a>>>,
    contexts: Vec<NamedContext<'a>>,
    #[serde(rename = "current-context")]
    current_context: &'a str,
    preferences: Empty,
    users: Vec<NamedUser<'a>>,
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
struct Named<'a, T> {
    name: &'a str,
    cluster: T,
}

#[derive(Serialize)]
struct Cluster<'a> {
    #[serde(rename = "certificate-authority-data")]
    certificate_authority_data: String,
    server: &'a str,
}

#[derive(Serialize)]
struct NamedContext<'a> {
    name: &'a str,
    context: Context<'a>,
}

#[derive(Serialize)]
struct Context<'a> {
    cluster: &'a str,
    user: &'a str,
}

#[derive(Serialize)]
struct NamedUser<'a> {
    name: &'a str,
    user: User,
}

#[derive(Serialize, Default)]
struct User {
    #[serde(rename = "client-certificate-data", skip_serializing_if = "Option::is_none")]
    client_certificate_data: Option<String>,
    #[serde(rename = "client-key-data", skip_serializing_if = "Option::is_none")]
    client_key_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
}

/// A kubeconfig named `name` (cluster, context and user share it) for `server`, trusting the
/// CA certificates in `ca_bundle_pem`.
pub fn render(name: &str, server: &str, ca_bundle_pem: &str, credentials: Credentials<'_>) -> Result<String, Error> {
    let user = match credentials {
        Credentials::ClientCertificate { cert_pem, key_pem } => User {
            client_certificate_data: Some(B64.encode(cert_pem)),
            client_key_data: Some(B64.encode(key_pem)),
            token: None,
        },
        Credentials::ClientCertificateOnly { cert_pem } => {
            User { client_certificate_data: Some(B64.encode(cert_pem)), ..User::default() }
        }
        Credentials::Token(token) => User { token: Some(token.to_string()), ..User::default() },
    };
    let config = Config {
        api_version: "v1",
        kind: "Config",
        clusters: vec![Named {
            name,
            cluster: Cluster { certificate_authority_data: B64.encode(ca_bundle_pem), server },
        }],
        contexts: vec![NamedContext { name, context: Context { cluster: name, user: name } }],
        current_context: name,
        preferences: Empty {},
        users: vec![NamedUser { name, user }],
    };
    serde_yaml::to_string(&config).map_err(Error::generate(kind::KUBECONFIG, name, "rendering YAML"))
}

/// A kubeconfig with a cluster entry only (server and CA, no user), as kubeadm publishes it in
/// the `cluster-info` ConfigMap for nodes to discover the cluster.
pub fn cluster_only(server: &str, ca_bundle_pem: &str) -> Result<String, Error> {
    #[derive(Serialize)]
    struct ClusterOnly<'a> {
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        kind: &'static str,
        clusters: Vec<Named<'a, Cluster<'a>>>,
        contexts: Vec<()>,
        #[serde(rename = "current-context")]
        current_context: &'static str,
        preferences: Empty,
        users: Vec<()>,
    }
    let config = ClusterOnly {
        api_version: "v1",
        kind: "Config",
        clusters: vec![Named {
            name: "",
            cluster: Cluster { certificate_authority_data: B64.encode(ca_bundle_pem), server },
        }],
        contexts: Vec::new(),
        current_context: "",
        preferences: Empty {},
        users: Vec::new(),
    };
    serde_yaml::to_string(&config).map_err(Error::generate(kind::KUBECONFIG, "cluster-info", "rendering YAML"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_certificate_kubeconfig() {
        let yaml = render(
            "shoot--p--s",
            "https://api.example.com",
            "CA",
            Credentials::ClientCertificate { cert_pem: "CERT", key_pem: "KEY" },
        )
        .unwrap();
        let v: serde_yaml::Value = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(v["current-context"], "shoot--p--s");
        assert_eq!(v["clusters"][0]["cluster"]["server"], "https://api.example.com");
        assert_eq!(v["clusters"][0]["cluster"]["certificate-authority-data"], B64.encode("CA"));
        assert_eq!(v["users"][0]["user"]["client-certificate-data"], B64.encode("CERT"));
        assert_eq!(v["users"][0]["user"]["client-key-data"], B64.encode("KEY"));
        assert_eq!(v["contexts"][0]["context"]["user"], "shoot--p--s");
        // Same inputs, same bytes.
        let again = render(
            "shoot--p--s",
            "https://api.example.com",
            "CA",
            Credentials::ClientCertificate { cert_pem: "CERT", key_pem: "KEY" },
        )
        .unwrap();
        assert_eq!(yaml, again);
    }

    #[test]
    fn token_and_cluster_only_kubeconfigs() {
        let v: serde_yaml::Value = serde_yaml::from_str(
            &render("c", "https://a", "CA", Credentials::Token("abcdef.0123456789abcdef")).unwrap(),
        )
        .unwrap();
        assert_eq!(v["users"][0]["user"]["token"], "abcdef.0123456789abcdef");
        assert!(v["users"][0]["user"].get("client-key-data").is_none());

        let v: serde_yaml::Value = serde_yaml::from_str(&cluster_only("https://a", "CA").unwrap()).unwrap();
        assert_eq!(v["clusters"][0]["cluster"]["server"], "https://a");
        assert_eq!(v["users"].as_sequence().map(Vec::len), Some(0));
        assert_eq!(v["contexts"].as_sequence().map(Vec::len), Some(0));
    }
}
