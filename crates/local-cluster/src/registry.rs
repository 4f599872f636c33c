//! The local image registry: Debian's `docker-registry` (CNCF distribution 2.8) as one more host
//! process of the local cluster, serving TLS on the node address only
//! ([`REGISTRY_PORT`](crate::settings::REGISTRY_PORT)) with a certificate from the cluster CA,
//! storage under `<state>/registry`. Shoot machines pull the images they do not carry from it
//! (provider-local points their containerd at it, docs/machines.md).
//!
//! `up` pushes every image `hack/images.sh` built into it, under a path that keeps the image's
//! own registry host as the first segment (`gardener-rs.local/gardenlet:v0.1.0` →
//! `10.250.0.1:5000/gardener-rs.local/gardenlet:v0.1.0`), through the node's containerd
//! (`ctr images push <mirrored> <local>`); an image whose manifest the registry already holds
//! under that tag, with the same digest, is skipped.
//!
//! * [`config`] and [`mirror_reference`] are pure;
//! * [`request`] is a small blocking HTTPS client for the registry's API (readiness, the digest
//!   check, tests), trusting the cluster CA only.

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::process::run;
use crate::settings::{NODE_IP, REGISTRY_PORT};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The registry's address as clients name it (`10.250.0.1:5000`).
pub fn address() -> String {
    format!("{NODE_IP}:{REGISTRY_PORT}")
}

/// Where `setup-local.sh` unpacks the registry binary (`$REGISTRY_DIR`, default
/// `~/.cache/gardener-rs/docker-registry`).
pub fn default_binary() -> PathBuf {
    let dir = std::env::var_os("REGISTRY_DIR").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
        cache.join("gardener-rs").join("docker-registry")
    });
    dir.join("root/usr/bin/docker-registry")
}

/// distribution's configuration: TLS on the node address only, no debug server (it would also
/// serve metrics and pprof), no authentication (the node network is the cluster's own), storage
/// on the filesystem, no upload purging (a repeated `up` keeps the content).
pub fn config(storage: &Path, cert: &Path, key: &Path) -> String {
    format!(
        r#"# Written by `local-cluster up`; docs/local-setup.md, "The image registry".
version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: {storage}
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: {address}
  net: tcp
  tls:
    certificate: {cert}
    key: {key}
    minimumtls: tls1.2
  headers:
    X-Content-Type-Options: [nosniff]
health:
  storagedriver:
    enabled: false
"#,
        storage = storage.display(),
        address = address(),
        cert = cert.display(),
        key = key.display(),
    )
}

/// An image reference split into repository (with its registry host) and tag or digest,
/// normalized as Docker does: no host means `docker.io`, a one-segment Docker Hub name is under
/// `library/`, no tag means `latest`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// `gardener-rs.local/gardenlet`, `registry.k8s.io/etcd`.
    pub repository: String,
    /// `:v0.1.0` or `@sha256:...`, with its separator.
    pub suffix: String,
}

impl Reference {
    pub fn parse(name: &str) -> Option<Self> {
        if name.is_empty() || name.contains(char::is_whitespace) {
            return None;
        }
        let (path, suffix) = match name.split_once('@') {
            Some((path, digest)) => (path, format!("@{digest}")),
            None => {
                // A tag is after the last ':' that follows the last '/' (a host may carry a port).
                let slash = name.rfind('/').map_or(0, |i| i + 1);
                match name[slash..].rfind(':') {
                    Some(i) => (&name[..slash + i], name[slash + i..].to_string()),
                    None => (name, ":latest".to_string()),
                }
            }
        };
        if path.is_empty() || suffix.len() < 2 {
            return None;
        }
        let repository = match path.split_once('/') {
            Some((host, _)) if host.contains(['.', ':']) || host == "localhost" => path.to_string(),
            Some(_) => format!("docker.io/{path}"),
            None => format!("docker.io/library/{path}"),
        };
        Some(Self { repository, suffix })
    }

    /// The reference in the local registry: `<registry>/<repository><suffix>`.
    pub fn mirrored(&self) -> String {
        format!("{}/{}{}", address(), self.repository, self.suffix)
    }
}

/// `gardener-rs.local/gardenlet:v0.1.0` → `10.250.0.1:5000/gardener-rs.local/gardenlet:v0.1.0`.
pub fn mirror_reference(name: &str) -> Option<String> {
    Reference::parse(name).map(|r| r.mirrored())
}

/// The image name and manifest digest of an OCI archive written by `hack/images.sh` (`buildah
/// push ... oci-archive:<file>:<name>`): its `index.json` names one manifest.
pub fn archive_image(archive: &Path) -> Result<(String, String)> {
    let index = run("tar", &["-xOf", &archive.display().to_string(), "index.json"])?;
    let index: serde_json::Value = serde_json::from_str(&index)
        .map_err(|source| Error::Json { what: format!("reading index.json of {}", archive.display()), source })?;
    let manifest = &index["manifests"][0];
    let name = manifest["annotations"]["org.opencontainers.image.ref.name"].as_str().unwrap_or_default();
    let digest = manifest["digest"].as_str().unwrap_or_default();
    if name.is_empty() || digest.is_empty() {
        return Err(Error::Registry(format!(
            "{} names no image (index.json has no manifest with org.opencontainers.image.ref.name); rebuild it with `make images`",
            archive.display()
        )));
    }
    Ok((name.to_string(), digest.to_string()))
}

/// What [`push_all`] did.
#[derive(Debug, Default)]
pub struct Pushed {
    pub pushed: Vec<String>,
    pub unchanged: Vec<String>,
}

const MANIFEST_TYPES: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, \
    application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";

/// Pushes the image of every archive in `dir` (already imported into the node's containerd)
/// whose manifest the registry does not hold under its mirrored name with the same digest.
pub fn push_all(layout: &Layout, dir: &Path, ca: &Path) -> Result<Pushed> {
    let ca_pem = std::fs::read(ca).map_err(Error::io("reading", ca))?;
    let entries = std::fs::read_dir(dir).map_err(Error::io("reading the image cache (run `make images`)", dir))?;
    let mut archives: Vec<_> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "tar")).collect();
    archives.sort();
    let sock = layout.containerd_socket().display().to_string();
    let ctr = |args: &[&str]| run("ctr", &[&["--address", sock.as_str(), "--namespace", "k8s.io"], args].concat());
    let ca_arg = ca.display().to_string();
    let mut out = Pushed::default();
    for archive in archives {
        let (name, digest) = archive_image(&archive)?;
        let reference = Reference::parse(&name).ok_or_else(|| {
            Error::Registry(format!("{} names the image {name:?}, not a reference", archive.display()))
        })?;
        let manifest = format!("/v2/{}/manifests/{}", reference.repository, &reference.suffix[1..]);
        let held = request(&ca_pem, "HEAD", &manifest, &[("Accept", MANIFEST_TYPES)])?;
        if held.status == 200 && held.header("docker-content-digest") == Some(digest.as_str()) {
            out.unchanged.push(name);
            continue;
        }
        // `push <remote> <local>`: the local image goes up under the mirrored name, without a tag.
        ctr(&["images", "push", "--tlscacert", &ca_arg, &reference.mirrored(), &name])?;
        out.pushed.push(name);
    }
    Ok(out)
}

/// A response of the registry.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// One HTTPS request to the registry (HTTP/1.1, `Connection: close`), verifying its certificate
/// against `ca_pem` (the cluster CA) and nothing else.
pub fn request(ca_pem: &[u8], method: &str, path: &str, headers: &[(&str, &str)]) -> Result<Response> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let fail = |what: String| Error::Registry(format!("{method} https://{}{path}: {what}", address()));
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        let cert = cert.map_err(|e| fail(format!("reading the CA: {e}")))?;
        roots.add(cert).map_err(|e| fail(format!("trusting the CA: {e}")))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| fail(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let server = ServerName::from(std::net::IpAddr::V4(NODE_IP));
    let conn = rustls::ClientConnection::new(Arc::new(config), server).map_err(|e| fail(e.to_string()))?;
    let tcp = TcpStream::connect_timeout(&SocketAddr::from((NODE_IP, REGISTRY_PORT)), Duration::from_secs(2))
        .map_err(|e| fail(e.to_string()))?;
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = tcp.set_write_timeout(Some(Duration::from_secs(10)));
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", address());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    tls.write_all(head.as_bytes()).map_err(|e| fail(e.to_string()))?;
    let mut raw = Vec::new();
    match tls.read_to_end(&mut raw) {
        Ok(_) => {}
        // Go closes without close_notify after `Connection: close`; what arrived is complete.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
        Err(e) => return Err(fail(e.to_string())),
    }
    parse_response(&String::from_utf8_lossy(&raw)).ok_or_else(|| fail("not an HTTP response".into()))
}

fn parse_response(raw: &str) -> Option<Response> {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Response { status, headers, body: body.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_keep_their_registry_host_as_the_first_path_segment() {
        for (name, mirrored) in [
            ("gardener-rs.local/gardenlet:v0.1.0", "10.250.0.1:5000/gardener-rs.local/gardenlet:v0.1.0"),
            ("registry.k8s.io/etcd:3.4.23-0", "10.250.0.1:5000/registry.k8s.io/etcd:3.4.23-0"),
            ("registry.k8s.io/pause:3.6", "10.250.0.1:5000/registry.k8s.io/pause:3.6"),
            ("gardener-rs.local/machine:v1.20.2", "10.250.0.1:5000/gardener-rs.local/machine:v1.20.2"),
            ("localhost:5001/a/b:1", "10.250.0.1:5000/localhost:5001/a/b:1"),
            ("registry.k8s.io/etcd", "10.250.0.1:5000/registry.k8s.io/etcd:latest"),
            ("busybox", "10.250.0.1:5000/docker.io/library/busybox:latest"),
            ("library/busybox:1.36", "10.250.0.1:5000/docker.io/library/busybox:1.36"),
            ("r.io/x@sha256:abc", "10.250.0.1:5000/r.io/x@sha256:abc"),
        ] {
            assert_eq!(mirror_reference(name).as_deref(), Some(mirrored), "{name}");
        }
        for bad in ["", "a b", ":tag", "x:"] {
            assert_eq!(mirror_reference(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_config_serves_tls_on_the_node_address_only_without_a_debug_server() {
        let text = config(Path::new("/s/registry"), Path::new("/p/tls.crt"), Path::new("/p/tls.key"));
        let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(yaml["http"]["addr"].as_str(), Some("10.250.0.1:5000"));
        assert_eq!(yaml["http"]["tls"]["certificate"].as_str(), Some("/p/tls.crt"));
        assert_eq!(yaml["http"]["tls"]["key"].as_str(), Some("/p/tls.key"));
        assert!(yaml["http"].get("debug").is_none(), "no debug server");
        assert!(yaml.get("auth").is_none() && yaml.get("proxy").is_none(), "no auth, not a pull-through cache");
        assert_eq!(yaml["storage"]["filesystem"]["rootdirectory"].as_str(), Some("/s/registry"));
        assert_eq!(yaml["version"].as_f64(), Some(0.1));
    }

    #[test]
    fn responses_are_parsed_with_lower_case_header_names() {
        let r = parse_response(
            "HTTP/1.1 200 OK\r\nDocker-Content-Digest: sha256:1\r\nContent-Length: 2\r\n\r\n{\"repositories\":[]}",
        )
        .unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.header("docker-content-digest"), Some("sha256:1"));
        assert_eq!(r.body, "{\"repositories\":[]}");
        assert!(parse_response("garbage").is_none());
    }
}
