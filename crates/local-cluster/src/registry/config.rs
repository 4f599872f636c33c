//! distribution's configuration file, serialized from a typed struct with serde (YAML).

use super::address;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The parts of distribution's configuration the local registry sets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// `0.1`, a number in the file as distribution's examples write it.
    pub version: f64,
    pub log: Log,
    pub storage: Storage,
    pub http: Http,
    pub health: Health,
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

/// distribution's configuration: TLS on the node address only, no debug server (it would also
/// serve metrics and pprof), no authentication (the node network is the cluster's own), storage
/// on the filesystem, no upload purging (a repeated `up` keeps the content).
pub fn settings(storage: &Path, cert: &Path, key: &Path) -> Config {
    Config {
        version: 0.1,
        log: Log { level: "info".into(), formatter: "text".into() },
        storage: Storage {
            filesystem: Filesystem { rootdirectory: storage.display().to_string() },
            maintenance: Maintenance { uploadpurging: Enabled { enabled: false } },
        },
        http: Http {
            addr: address(),
            net: "tcp".into(),
            tls: Tls {
                certificate: cert.display().to_string(),
                key: key.display().to_string(),
                minimumtls: "tls1.2".into(),
            },
            headers: BTreeMap::from([("X-Content-Type-Options".to_string(), vec!["nosniff".to_string()])]),
        },
        health: Health { storagedriver: Enabled { enabled: false } },
    }
}

/// [`settings`] as YAML, under a comment naming where it comes from.
pub fn config(storage: &Path, cert: &Path, key: &Path) -> Result<String> {
    let yaml = serde_yaml::to_string(&settings(storage, cert, key))
        .map_err(|source| Error::Yaml { what: "encoding the image registry's configuration".into(), source })?;
    Ok(format!("# Written by `local-cluster up`; docs/local-setup.md, \"The image registry\".\n{yaml}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_serves_tls_on_the_node_address_only_without_a_debug_server() {
        let text = config(Path::new("/s/registry"), Path::new("/p/tls.crt"), Path::new("/p/tls.key")).unwrap();
        let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(yaml["http"]["addr"].as_str(), Some("10.250.0.1:5000"));
        assert_eq!(yaml["http"]["tls"]["certificate"].as_str(), Some("/p/tls.crt"));
        assert_eq!(yaml["http"]["tls"]["key"].as_str(), Some("/p/tls.key"));
        assert!(yaml["http"].get("debug").is_none(), "no debug server");
        assert!(yaml.get("auth").is_none() && yaml.get("proxy").is_none(), "no auth, not a pull-through cache");
        assert_eq!(yaml["storage"]["filesystem"]["rootdirectory"].as_str(), Some("/s/registry"));
        assert_eq!(yaml["version"].as_f64(), Some(0.1));
        assert_eq!(yaml["http"]["headers"]["X-Content-Type-Options"][0].as_str(), Some("nosniff"));
    }

    #[test]
    fn a_storage_path_with_a_colon_and_quotes_survives_the_round_trip() {
        let storage = Path::new("/s/my \"reg\": 'x' #1");
        let text = config(storage, Path::new("/p/tls.crt"), Path::new("/p/tls.key")).unwrap();
        let back: Config = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back.storage.filesystem.rootdirectory, "/s/my \"reg\": 'x' #1");
    }
}
