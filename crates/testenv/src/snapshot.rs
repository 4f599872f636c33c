//! Control planes that start with their CRDs already stored: an etcd snapshot taken once per
//! set of CRDs (and binaries), restored into every later test environment that asks for the
//! same set.
//!
//! Why: kube-apiserver 1.20 rebuilds and re-serialises its whole OpenAPI document (JSON,
//! protobuf, gzip) for every CRD that is added, so installing the system's 33 CRDs into a fresh
//! API server cost about 15 s of its CPU (measured: 4.9 s to start, 20.5 s once the CRDs were
//! served and the document settled), and most integration tests do it. An API server that
//! finds the CRDs in etcd at start builds that document once.
//!
//! The snapshot is taken right after the first installation, before anything else writes to
//! the cluster (no kube-controller-manager yet, no test objects): it holds the CRDs and what
//! the API server bootstraps itself, nothing bound to that environment's PKI or ports that the
//! next API server does not rewrite at start (the `kubernetes` endpoints, the authentication
//! ConfigMap). Anything that fails here falls back to installing the CRDs.

use crate::assets::Assets;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The snapshot file for one set of CRDs and binaries (it may not exist yet).
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    path: PathBuf,
    etcdctl: PathBuf,
}

impl Snapshot {
    /// The snapshot for `crds` with these binaries and service range; `None` without
    /// `etcdctl` next to etcd.
    pub(crate) fn for_crds(assets: &Assets, crds: &[CustomResourceDefinition], service_range: &str) -> Option<Self> {
        let etcdctl = assets.etcd.with_file_name("etcdctl");
        if !etcdctl.is_file() {
            return None;
        }
        // Deterministic within one toolchain, which is all a cache in the temporary directory
        // needs; the binaries' size and modification time stand for their version.
        let mut hasher = std::hash::DefaultHasher::new();
        serde_json::to_string(crds).ok()?.hash(&mut hasher);
        service_range.hash(&mut hasher);
        for binary in [&assets.etcd, &assets.kube_apiserver, &etcdctl] {
            let meta = std::fs::metadata(binary).ok()?;
            (binary, meta.len(), meta.modified().ok()).hash(&mut hasher);
        }
        let path = std::env::temp_dir().join("testenv-snapshots").join(format!("{:016x}.db", hasher.finish()));
        Some(Self { path, etcdctl })
    }

    /// Restores the snapshot into `data_dir` (which must not exist) as the single member
    /// `default` on `peer_url`; false when there is no snapshot yet or the restore failed (the
    /// directory is then removed).
    pub(crate) fn restore(&self, data_dir: &Path, peer_url: &str) -> bool {
        if !self.path.is_file() {
            return false;
        }
        let output = Command::new(&self.etcdctl)
            .env("ETCDCTL_API", "3")
            .arg("snapshot")
            .arg("restore")
            .arg(&self.path)
            .arg(format!("--data-dir={}", data_dir.display()))
            .arg("--name=default")
            .arg(format!("--initial-cluster=default={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .output();
        match output {
            Ok(o) if o.status.success() => true,
            Ok(o) => {
                tracing::warn!(snapshot = %self.path.display(), stderr = %String::from_utf8_lossy(&o.stderr), "restoring the CRD snapshot failed; installing the CRDs");
                let _ = std::fs::remove_dir_all(data_dir);
                false
            }
            Err(e) => {
                tracing::warn!(snapshot = %self.path.display(), error = %e, "running etcdctl failed; installing the CRDs");
                let _ = std::fs::remove_dir_all(data_dir);
                false
            }
        }
    }

    /// Saves the etcd at `etcd_url` as the snapshot (written aside, then renamed, so a
    /// concurrent reader never sees half a file). Failures are logged: the next environment
    /// installs the CRDs again.
    pub(crate) fn save(&self, etcd_url: &str) {
        let Some(dir) = self.path.parent() else { return };
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot create the CRD snapshot directory");
            return;
        }
        let partial = self.path.with_extension(format!("{}.part", std::process::id()));
        let output = Command::new(&self.etcdctl)
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={etcd_url}"))
            .arg("snapshot")
            .arg("save")
            .arg(&partial)
            .output();
        let saved = match output {
            Ok(o) if o.status.success() => std::fs::rename(&partial, &self.path).map_err(|e| e.to_string()),
            Ok(o) => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = saved {
            let _ = std::fs::remove_file(&partial);
            tracing::warn!(snapshot = %self.path.display(), error = %e, "saving the CRD snapshot failed");
        }
    }
}
