//! distribution's configuration files, serialized from a typed struct with serde (YAML): one
//! for the reader (the node address, read-only, anonymous) and one for the writer (loopback,
//! htpasswd), both on the same filesystem storage.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The parts of distribution's configuration the local registry sets. No `storage.cache`: without
/// it distribution keeps no blob descriptor cache, so the reader sees at once what the writer
/// stored (its in-memory cache would keep only found descriptors anyway).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// `0.1`, a number in the file as distribution's examples write it.
    pub version: f64,
    pub log: Log,
    pub storage: Storage,
    pub http: Http,
    pub health: Health,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Auth>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Log {
    pub level: String,
    pub formatter: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Storage {
    pub filesystem: Filesystem,
    pub maintenance: Maintenance,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Filesystem {
    pub rootdirectory: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Maintenance {
    pub uploadpurging: Enabled,
    /// Read-only mode: every write (blob upload, manifest put, delete) is answered
    /// `405 Method Not Allowed`; reads are served as usual.
    pub readonly: Enabled,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Enabled {
    pub enabled: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Http {
    pub addr: String,
    pub net: String,
    pub tls: Tls,
    /// Header name → values added to every response.
    pub headers: BTreeMap<String, Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tls {
    pub certificate: String,
    pub key: String,
    pub minimumtls: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub storagedriver: Enabled,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Auth {
    pub htpasswd: Htpasswd,
}

/// distribution's basic authentication: every request needs a user of the file (bcrypt only).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Htpasswd {
    pub realm: String,
    pub path: String,
}

/// A registry process's inputs: where it listens, its storage and its serving certificate.
#[derive(Clone, Copy, Debug)]
pub struct Serve<'a> {
    pub address: &'a str,
    pub storage: &'a Path,
    pub cert: &'a Path,
    pub key: &'a Path,
}

/// What both processes share: TLS only, no debug server (it would also serve metrics and
/// pprof), storage on the filesystem, no upload purging (a repeated `up` keeps the content).
fn base(serve: Serve<'_>, readonly: bool, auth: Option<Auth>) -> Config {
    Config {
        version: 0.1,
        log: Log { level: "info".into(), formatter: "text".into() },
        storage: Storage {
            filesystem: Filesystem { rootdirectory: serve.storage.display().to_string() },
            maintenance: Maintenance {
                uploadpurging: Enabled { enabled: false },
                readonly: Enabled { enabled: readonly },
            },
        },
        http: Http {
            addr: serve.address.to_string(),
            net: "tcp".into(),
            tls: Tls {
                certificate: serve.cert.display().to_string(),
                key: serve.key.display().to_string(),
                minimumtls: "tls1.2".into(),
            },
            headers: BTreeMap::from([("X-Content-Type-Options".to_string(), vec!["nosniff".to_string()])]),
        },
        health: Health { storagedriver: Enabled { enabled: false } },
        auth,
    }
}

/// The reader on the node address: anonymous pulls for pods and machines, every write refused
/// (read-only maintenance mode), so nothing that reaches the node address can replace an image.
pub fn reader(serve: Serve<'_>) -> Config {
    base(serve, true, None)
}

/// The writer on loopback: the same storage, writable, every request authenticated against
/// `htpasswd` (hostNetwork pods share the host's loopback).
pub fn writer(serve: Serve<'_>, htpasswd: &Path) -> Config {
    let auth = Auth { htpasswd: Htpasswd { realm: "local-cluster".into(), path: htpasswd.display().to_string() } };
    base(serve, false, Some(auth))
}

/// `config` as YAML, under a comment naming where it comes from.
pub fn to_yaml(config: &Config) -> Result<String> {
    let yaml = serde_yaml::to_string(config)
        .map_err(|source| Error::Yaml { what: "encoding the image registry's configuration".into(), source })?;
    Ok(format!("# Written by `local-cluster up`; docs/local-setup.md, \"The image registry\".\n{yaml}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(address: &str) -> Serve<'_> {
        Serve {
            address,
            storage: Path::new("/s/registry"),
            cert: Path::new("/p/tls.crt"),
            key: Path::new("/p/tls.key"),
        }
    }

    fn yaml(config: &Config) -> serde_yaml::Value {
        serde_yaml::from_str(&to_yaml(config).unwrap()).unwrap()
    }

    #[test]
    fn the_reader_serves_tls_on_the_node_address_read_only_without_auth_or_debug_server() {
        let yaml = yaml(&reader(serve("10.250.0.1:5000")));
        assert_eq!(yaml["http"]["addr"].as_str(), Some("10.250.0.1:5000"));
        assert_eq!(yaml["http"]["tls"]["certificate"].as_str(), Some("/p/tls.crt"));
        assert_eq!(yaml["http"]["tls"]["key"].as_str(), Some("/p/tls.key"));
        assert!(yaml["http"].get("debug").is_none(), "no debug server");
        assert_eq!(yaml["storage"]["maintenance"]["readonly"]["enabled"].as_bool(), Some(true));
        assert!(yaml.get("auth").is_none() && yaml.get("proxy").is_none(), "anonymous, not a pull-through cache");
        assert!(yaml["storage"].get("cache").is_none(), "no blob descriptor cache");
        assert_eq!(yaml["storage"]["filesystem"]["rootdirectory"].as_str(), Some("/s/registry"));
        assert_eq!(yaml["version"].as_f64(), Some(0.1));
        assert_eq!(yaml["http"]["headers"]["X-Content-Type-Options"][0].as_str(), Some("nosniff"));
    }

    #[test]
    fn the_writer_listens_on_loopback_with_htpasswd_on_the_same_storage() {
        let yaml = yaml(&writer(serve("127.0.0.1:5001"), Path::new("/s/registry-writer/htpasswd")));
        assert_eq!(yaml["http"]["addr"].as_str(), Some("127.0.0.1:5001"));
        assert_eq!(yaml["auth"]["htpasswd"]["path"].as_str(), Some("/s/registry-writer/htpasswd"));
        assert_eq!(yaml["auth"]["htpasswd"]["realm"].as_str(), Some("local-cluster"));
        assert_eq!(yaml["storage"]["maintenance"]["readonly"]["enabled"].as_bool(), Some(false));
        assert_eq!(yaml["storage"]["filesystem"]["rootdirectory"].as_str(), Some("/s/registry"));
        assert!(yaml["storage"].get("cache").is_none(), "no blob descriptor cache");
        assert!(yaml["http"].get("debug").is_none(), "no debug server");
        assert_eq!(yaml["http"]["tls"]["minimumtls"].as_str(), Some("tls1.2"));
    }

    #[test]
    fn a_storage_path_with_a_colon_and_quotes_survives_the_round_trip() {
        let storage = Path::new("/s/my \"reg\": 'x' #1");
        let text = to_yaml(&reader(Serve { storage, ..serve("10.250.0.1:5000") })).unwrap();
        let back: Config = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back.storage.filesystem.rootdirectory, "/s/my \"reg\": 'x' #1");
        assert_eq!(back.auth, None);
    }
}
