//! Where the local cluster keeps its files: one state directory (`.local/` in the checkout by
//! default) holds configuration, PKI, data, logs and PID files, so teardown knows exactly what
//! is ours.

use std::path::{Path, PathBuf};

/// Paths under the state directory.
#[derive(Clone, Debug)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The admin kubeconfig handed to users.
    pub fn kubeconfig(&self) -> PathBuf {
        self.root.join("kubeconfig")
    }
    /// Held (flock) while `up` or `down` runs.
    pub fn lock(&self) -> PathBuf {
        self.root.join("lock")
    }
    /// The host's state before the first start (JSON), restored by teardown.
    pub fn host_snapshot(&self) -> PathBuf {
        self.root.join("host-before.json")
    }
    pub fn pki(&self) -> PathBuf {
        self.root.join("pki")
    }
    pub fn config(&self) -> PathBuf {
        self.root.join("config")
    }
    pub fn config_file(&self, name: &str) -> PathBuf {
        self.config().join(name)
    }
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }
    pub fn log(&self, component: &str) -> PathBuf {
        self.logs().join(format!("{component}.log"))
    }
    pub fn pids(&self) -> PathBuf {
        self.root.join("pids")
    }
    pub fn pid(&self, component: &str) -> PathBuf {
        self.pids().join(format!("{component}.pid"))
    }
    pub fn etcd_data(&self) -> PathBuf {
        self.root.join("etcd")
    }
    pub fn containerd(&self) -> PathBuf {
        self.root.join("containerd")
    }
    pub fn containerd_socket(&self) -> PathBuf {
        self.containerd().join("containerd.sock")
    }
    pub fn cni_conf(&self) -> PathBuf {
        self.root.join("cni").join("net.d")
    }
    pub fn cni_data(&self) -> PathBuf {
        self.root.join("cni").join("ipam")
    }
    pub fn kubelet(&self) -> PathBuf {
        self.root.join("kubelet")
    }
    /// The image registry's storage (distribution's filesystem driver).
    pub fn registry(&self) -> PathBuf {
        self.root.join("registry")
    }
    /// The registry writer's credentials (mode 0700): the password, its htpasswd entry, the
    /// containerd hosts directory and the `auth.json` pushes use (each mode 0600).
    pub fn registry_writer(&self) -> PathBuf {
        self.root.join("registry-writer")
    }
    /// Host directories behind PersistentVolumes of the default StorageClass.
    pub fn volumes(&self) -> PathBuf {
        self.root.join("volumes")
    }
    /// kube-apiserver's `EncryptionConfiguration` with the secretbox key(s) (mode 0600, written
    /// once by `up` and kept; removed with the state directory by `down`).
    pub fn encryption_config(&self) -> PathBuf {
        self.config_file("encryption-config.yaml")
    }
    /// A `resolv.conf` for pods with `dnsPolicy: Default`: nothing resolves outward.
    pub fn resolv_conf(&self) -> PathBuf {
        self.config_file("resolv.conf")
    }
}
