//! The local image registry: Debian's `docker-registry` (CNCF distribution 2.8) as two host
//! processes of the local cluster on one filesystem storage (`<state>/registry`), each serving
//! TLS with a certificate from the cluster CA:
//!
//! * the **reader** (`registry`) on the node address only
//!   ([`REGISTRY_PORT`](crate::settings::REGISTRY_PORT)): anonymous pulls for the node, pods and
//!   shoot machines (provider-local points their containerd at it, docs/machines.md), every
//!   write refused (distribution's read-only maintenance mode);
//! * the **writer** (`registry-writer`) on loopback only
//!   ([`REGISTRY_WRITER_PORT`](crate::settings::REGISTRY_WRITER_PORT)), every request
//!   authenticated (htpasswd) with a password generated once ([`writer`]).
//!
//! distribution 2.8 cannot authenticate pushes but not pulls in one process (htpasswd applies to
//! every request), hence two.
//!
//! `up` pushes every image `hack/images.sh` built, under a path that keeps the image's own
//! registry host as the first segment (`gardener-rs.local/gardenlet:v0.1.0` →
//! `10.250.0.1:5000/gardener-rs.local/gardenlet:v0.1.0`), through the node's containerd
//! (`ctr images push --hosts-dir <writer's hosts> <mirrored> <local>`: the hosts directory sends
//! the reader's name to the writer, with the credentials); an image whose manifest the reader
//! already serves under that tag, with the same digest, is skipped.
//!
//! * [`config`] (the configuration files), [`mirror_reference`] and [`writer`]'s renderers are
//!   pure;
//! * [`client`] speaks the registry's API over HTTPS (readiness, the digest check, tests),
//!   trusting the cluster CA only.

pub mod client;
pub mod config;
pub mod writer;

pub use client::{Client, Credentials, Response, request};

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::process::run;
use crate::settings::{NODE_IP, REGISTRY_PORT};
use std::path::{Path, PathBuf};

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
/// whose manifest the reader does not serve under its mirrored name with the same digest,
/// through the writer (`hosts_dir`: [`writer::Files::hosts_dir`]).
pub async fn push_all(layout: &Layout, dir: &Path, ca: &Path, hosts_dir: &Path) -> Result<Pushed> {
    let ca_pem = std::fs::read(ca).map_err(Error::io("reading", ca))?;
    let registry = Client::new(&ca_pem)?;
    let entries = std::fs::read_dir(dir).map_err(Error::io("reading the image cache (run `make images`)", dir))?;
    let mut archives: Vec<_> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "tar")).collect();
    archives.sort();
    let sock = layout.containerd_socket().display().to_string();
    let ctr = |args: &[&str]| run("ctr", &[&["--address", sock.as_str(), "--namespace", "k8s.io"], args].concat());
    let ca_arg = ca.display().to_string();
    let hosts_arg = hosts_dir.display().to_string();
    let mut out = Pushed::default();
    for archive in archives {
        let (name, digest) = archive_image(&archive)?;
        let reference = Reference::parse(&name).ok_or_else(|| {
            Error::Registry(format!("{} names the image {name:?}, not a reference", archive.display()))
        })?;
        let manifest = format!("/v2/{}/manifests/{}", reference.repository, &reference.suffix[1..]);
        let held = registry.request("HEAD", &manifest, &[("Accept", MANIFEST_TYPES)]).await?;
        if held.status == 200 && held.header("docker-content-digest") == Some(digest.as_str()) {
            out.unchanged.push(name);
            continue;
        }
        // `push <remote> <local>`: the local image goes up under the mirrored name, without a tag;
        // the hosts directory sends it to the writer (the reader refuses writes).
        ctr(&["images", "push", "--hosts-dir", &hosts_arg, "--tlscacert", &ca_arg, &reference.mirrored(), &name])?;
        out.pushed.push(name);
    }
    Ok(out)
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
}
