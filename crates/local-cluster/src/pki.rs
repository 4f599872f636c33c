//! The local cluster's PKI, kubeadm's layout: a cluster CA (API server serving, every client,
//! the kubelet's and the image registry's (reader and writer) serving certificates, CSR
//! signing by kube-controller-manager), an etcd CA, and the service-account key pair. The `pki`
//! crate decides what to create, keep or re-issue; this module only reads and writes the files
//! (`<state>/pki/<secret>/<key>`, keys mode 0600).

use crate::error::{Error, Result};
use crate::settings::{self, NODE_IP, NODE_NAME};
use pki::{CaConfig, CertificateConfig, KubeconfigSpec, SecretConfig, SecretSet, ServiceAccountKeyConfig, Usage};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub const CA: &str = "ca";
pub const ETCD_CA: &str = "etcd-ca";
pub const APISERVER: &str = "kube-apiserver";
pub const APISERVER_KUBELET_CLIENT: &str = "apiserver-kubelet-client";
pub const APISERVER_ETCD_CLIENT: &str = "apiserver-etcd-client";
pub const ETCD_SERVER: &str = "etcd-server";
pub const ADMIN: &str = "admin";
pub const KUBELET: &str = "kubelet";
pub const KUBELET_SERVING: &str = "kubelet-serving";
pub const KUBE_PROXY: &str = "kube-proxy";
pub const KCM: &str = "kube-controller-manager";
pub const SCHEDULER: &str = "kube-scheduler";
pub const ADDONS: &str = "addons";
pub const REGISTRY: &str = "registry";
pub const REGISTRY_WRITER: &str = "registry-writer";
pub const SERVICE_ACCOUNT: &str = "service-account";
/// The CA that signs the garden admission server's serving certificates (handed to the
/// controlplane chart by `hack/local-garden.sh`), so the kube-apiserver's authorization webhook
/// file, read once at its start, keeps trusting the seed authorizer across rotations.
pub const WEBHOOK_CA: &str = "webhook-ca";

/// The user the add-ons (DNS, storage provisioner) authenticate as; RBAC grants it exactly
/// what they use (see `manifests`).
pub const ADDONS_USER: &str = "local-cluster:addons";

fn client(name: &str, cn: &str, org: Option<&str>) -> SecretConfig {
    let mut c = CertificateConfig::new(name, CA, cn, Usage::Client).with_kubeconfig(KubeconfigSpec {
        cluster_name: "local".into(),
        server: settings::apiserver_url(),
        trust: CA.into(),
    });
    if let Some(o) = org {
        c = c.with_organization(o);
    }
    c.into()
}

/// Every secret of the local cluster.
pub fn configs() -> Vec<SecretConfig> {
    let apiserver_sans = [
        NODE_IP.to_string(),
        settings::KUBERNETES_SERVICE_IP.to_string(),
        "127.0.0.1".into(),
        "localhost".into(),
        "kubernetes".into(),
        "kubernetes.default".into(),
        "kubernetes.default.svc".into(),
        format!("kubernetes.default.svc.{}", settings::CLUSTER_DOMAIN),
    ];
    vec![
        CaConfig::new(CA, "local-cluster-ca").into(),
        CaConfig::new(ETCD_CA, "local-cluster-etcd-ca").into(),
        CaConfig::new(WEBHOOK_CA, "local-garden-webhook-ca").into(),
        CertificateConfig::new(APISERVER, CA, "kube-apiserver", Usage::Server).with_sans(apiserver_sans).into(),
        CertificateConfig::new(APISERVER_KUBELET_CLIENT, CA, "kube-apiserver-kubelet-client", Usage::Client)
            .with_organization("system:masters")
            .into(),
        CertificateConfig::new(ETCD_SERVER, ETCD_CA, "local-cluster-etcd", Usage::ServerAndClient)
            .with_sans(["127.0.0.1", "localhost"])
            .into(),
        CertificateConfig::new(APISERVER_ETCD_CLIENT, ETCD_CA, "kube-apiserver-etcd-client", Usage::Client).into(),
        client(ADMIN, "local-cluster-admin", Some("system:masters")),
        client(KUBELET, &format!("system:node:{NODE_NAME}"), Some("system:nodes")),
        CertificateConfig::new(KUBELET_SERVING, CA, format!("system:node:{NODE_NAME}"), Usage::Server)
            .with_organization("system:nodes")
            .with_sans([NODE_IP.to_string(), NODE_NAME.to_string()])
            .into(),
        CertificateConfig::new(REGISTRY, CA, "local-cluster-registry", Usage::Server)
            .with_sans([NODE_IP.to_string()])
            .into(),
        CertificateConfig::new(REGISTRY_WRITER, CA, "local-cluster-registry-writer", Usage::Server)
            .with_sans(["127.0.0.1"])
            .into(),
        client(KUBE_PROXY, "system:kube-proxy", None),
        client(KCM, "system:kube-controller-manager", None),
        client(SCHEDULER, "system:kube-scheduler", None),
        client(ADDONS, ADDONS_USER, None),
        ServiceAccountKeyConfig { name: SERVICE_ACCOUNT.into(), key: Default::default() }.into(),
    ]
}

/// The PKI's files on disk.
#[derive(Clone, Debug)]
pub struct Files {
    dir: PathBuf,
}

impl Files {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The path of `key` in secret `name` (e.g. `("ca", "ca.crt")`).
    pub fn path(&self, name: &str, key: &str) -> PathBuf {
        self.dir.join(name).join(key)
    }

    /// Plans against what is on disk and writes what changed. CAs and the service-account key
    /// are never replaced; certificates are re-issued when missing, changed or near expiry.
    pub fn ensure(&self) -> Result<Vec<String>> {
        let existing = self.load()?;
        let plan = pki::manager::plan(&configs(), &existing, SystemTime::now())?;
        let changed: Vec<String> = plan.changed().into_iter().map(str::to_string).collect();
        for secret in plan.secrets.iter() {
            if existing.get(&secret.name) != Some(secret) {
                self.write(secret)?;
            }
        }
        Ok(changed)
    }

    fn load(&self) -> Result<SecretSet> {
        let mut set = SecretSet::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Ok(set) };
        for entry in entries.flatten() {
            let dir = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta: Meta = match std::fs::read_to_string(dir.join(META)) {
                Ok(text) => serde_json::from_str(&text)
                    .map_err(|source| Error::Json { what: format!("reading {}", dir.join(META).display()), source })?,
                Err(_) => continue, // an interrupted write; the plan re-creates it
            };
            let mut secret = pki::Secret::new(&name, meta.type_);
            secret.labels = meta.labels;
            for key in meta.keys {
                let path = dir.join(&key);
                let value = std::fs::read_to_string(&path).map_err(Error::io("reading", &path))?;
                secret.data.insert(key, value);
            }
            set.insert(secret);
        }
        Ok(set)
    }

    fn write(&self, secret: &pki::Secret) -> Result<()> {
        let dir = self.dir.join(&secret.name);
        std::fs::create_dir_all(&dir).map_err(Error::io("creating", &dir))?;
        // The metadata goes last: a secret without it is treated as absent.
        let _ = std::fs::remove_file(dir.join(META));
        for (key, value) in &secret.data {
            write_private(&dir.join(key), value)?;
        }
        let meta = Meta {
            type_: secret.type_.clone(),
            labels: secret.labels.clone(),
            keys: secret.data.keys().cloned().collect(),
        };
        let text = serde_json::to_string_pretty(&meta)
            .map_err(|source| Error::Json { what: "encoding PKI metadata".into(), source })?;
        write_private(&dir.join(META), &text)
    }
}

const META: &str = "meta.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct Meta {
    #[serde(rename = "type")]
    type_: String,
    labels: std::collections::BTreeMap<String, String>,
    keys: Vec<String>,
}

/// Writes `text` to a temporary file created with mode 0600 (never readable by others, not even
/// briefly) and renames it into place.
pub fn write_secret(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io("creating", dir))?;
    }
    let tmp = path.with_extension("tmp");
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io("removing", &tmp)(e)),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(Error::io("creating", &tmp))?;
    file.write_all(text.as_bytes()).map_err(Error::io("writing", &tmp))?;
    file.sync_all().map_err(Error::io("syncing", &tmp))?;
    std::fs::rename(&tmp, path).map_err(Error::io("renaming into place", path))
}

/// Writes a file readable by its owner only (keys and kubeconfigs).
pub fn write_private(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(Error::io("writing", &tmp))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).map_err(Error::io("chmod", &tmp))?;
    std::fs::rename(&tmp, path).map_err(Error::io("renaming into place", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configs_are_valid_and_a_second_plan_keeps_everything() {
        let dir = std::env::temp_dir().join(format!("local-cluster-pki-{}", std::process::id()));
        let files = Files::new(&dir);
        let first = files.ensure().expect("first plan");
        assert!(first.contains(&CA.to_string()) && first.contains(&ADMIN.to_string()), "{first:?}");
        let ca_before = std::fs::read_to_string(files.path(CA, "ca.crt")).expect("ca written");
        let second = files.ensure().expect("second plan");
        assert!(second.is_empty(), "nothing changes on a second run: {second:?}");
        assert_eq!(std::fs::read_to_string(files.path(CA, "ca.crt")).expect("ca"), ca_before);
        let mode = std::fs::metadata(files.path(ADMIN, "tls.key")).expect("key").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
