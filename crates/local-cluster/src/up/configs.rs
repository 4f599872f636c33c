//! The configuration files `up` writes before anything starts: each rendered by
//! [`render`](crate::render) (or the registry's own module) and written only when its content
//! changed, kubeconfigs, the encryption configuration and the registry writer's credentials
//! with mode 0600.

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::pki::{self, Files};
use crate::render::encryption::{self, KEY_LEN, Key};
use crate::{process, registry, render};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Writes every configuration file and the components' kubeconfigs.
pub fn write_all(layout: &Layout, pki: &Files) -> Result<()> {
    let files: Vec<(PathBuf, String)> = vec![
        (layout.config_file("containerd.toml"), render::containerd_config(layout)?),
        (layout.containerd().join("certs.d").join("_default").join("hosts.toml"), render::registry_hosts()?),
        (layout.cni_conf().join("10-local-cluster.conflist"), render::cni_config(layout)),
        (layout.config_file("kubelet.yaml"), render::kubelet_config(layout, pki)?),
        (layout.config_file("kube-proxy.yaml"), render::kube_proxy_config(layout)?),
        (layout.resolv_conf(), render::resolv_conf()),
        (layout.config_file("registry.yaml"), registry_config(layout, pki, false)?),
        (layout.config_file("registry-writer.yaml"), registry_config(layout, pki, true)?),
        (layout.config_file(render::SEED_AUTHORIZER_KUBECONFIG), render::seed_authorizer_kubeconfig(pki)),
    ];
    for (path, text) in files {
        let changed = write_if_changed(&path, &text, false)?;
        // A running registry keeps the configuration it read at start (say, a writable one from
        // before the reader was read-only); it starts again, in the plan, with the new one.
        if changed
            && let Some(name) =
                ["registry", "registry-writer"].into_iter().find(|n| path == layout.config_file(&format!("{n}.yaml")))
        {
            process::stop(layout, name, std::time::Duration::from_secs(5));
        }
    }
    for (component, secret) in [
        ("kubelet", pki::KUBELET),
        ("kube-proxy", pki::KUBE_PROXY),
        (pki::KCM, pki::KCM),
        (pki::SCHEDULER, pki::SCHEDULER),
        ("addons", pki::ADDONS),
    ] {
        let path = pki.path(secret, "kubeconfig");
        let text = std::fs::read_to_string(&path).map_err(Error::io("reading", &path))?;
        write_if_changed(&layout.config_file(&format!("{component}.kubeconfig")), &text, true)?;
    }
    ensure_encryption_config(&layout.encryption_config())?;
    if registry::writer::Files::new(layout.registry_writer()).ensure()? {
        // A running writer keeps the entry it read at start; it starts again with the new one.
        process::stop(layout, "registry-writer", std::time::Duration::from_secs(5));
    }
    Ok(())
}

/// The reader's (node address, read-only) or the writer's (loopback, htpasswd) configuration.
fn registry_config(layout: &Layout, pki: &Files, writer: bool) -> Result<String> {
    use registry::config::{self, Serve};
    let (secret, address) =
        if writer { (pki::REGISTRY_WRITER, registry::writer::address()) } else { (pki::REGISTRY, registry::address()) };
    let (cert, key) = (pki.path(secret, "tls.crt"), pki.path(secret, "tls.key"));
    let storage = layout.registry();
    let serve = Serve { address: &address, storage: &storage, cert: &cert, key: &key };
    let htpasswd = registry::writer::Files::new(layout.registry_writer()).htpasswd();
    config::to_yaml(&if writer { config::writer(serve, &htpasswd) } else { config::reader(serve) })
}

/// What `up` does with the encryption configuration, decided from the file's text (if any).
#[derive(Debug, PartialEq)]
pub enum EncryptionPlan {
    /// No file yet: generate a key and write it.
    Create,
    /// Ours, possibly with keys added for a rotation: render again from its keys (keeps the
    /// list of resources current); unchanged text is not rewritten.
    Keep(Vec<Key>),
    /// Not a configuration `up` renders (other providers, edited by hand): left as it is.
    Foreign,
}

pub fn encryption_plan(existing: Option<&str>) -> EncryptionPlan {
    match existing {
        None => EncryptionPlan::Create,
        Some(text) => encryption::keys_of(text).map_or(EncryptionPlan::Foreign, EncryptionPlan::Keep),
    }
}

/// Writes kube-apiserver's encryption configuration with a new random key the first time, and
/// keeps its keys afterwards: objects encrypted with a key are unreadable without it. The file
/// has mode 0600; the key is never logged.
pub fn ensure_encryption_config(path: &Path) -> Result<()> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::Io { what: "reading", path: path.to_path_buf(), source: e }),
    };
    let text = match encryption_plan(existing.as_deref()) {
        EncryptionPlan::Create => {
            let unix_seconds = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
            let key = Key::new(encryption::key_name(unix_seconds), &random_key()?);
            tracing::info!(path = %path.display(), key = %key.name, "encryption key generated");
            Some(encryption::encryption_config(&[key])?)
        }
        EncryptionPlan::Keep(keys) => Some(encryption::encryption_config(&keys)?),
        EncryptionPlan::Foreign => {
            tracing::warn!(
                path = %path.display(),
                "not an encryption configuration local-cluster renders (secretbox keys, then identity); left unchanged"
            );
            None
        }
    };
    if let Some(text) = text
        && existing.as_deref() != Some(text.as_str())
    {
        pki::write_secret(path, &text)?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(Error::io("chmod", path))
}

fn random_key() -> Result<[u8; KEY_LEN]> {
    use ring::rand::SecureRandom;
    let mut key = [0u8; KEY_LEN];
    ring::rand::SystemRandom::new()
        .fill(&mut key)
        .map_err(|_| Error::Encryption("the system's random number generator failed".into()))?;
    Ok(key)
}

/// Whether the file was written (it did not hold `text`).
fn write_if_changed(path: &Path, text: &str, private: bool) -> Result<bool> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io("creating", dir))?;
    }
    if private {
        pki::write_private(path, text)?;
    } else {
        std::fs::write(path, text).map_err(Error::io("writing", path))?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_generated_once_with_mode_0600_and_kept_by_a_later_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config").join("encryption-config.yaml");
        ensure_encryption_config(&path).unwrap();
        let first = std::fs::read_to_string(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let keys = encryption::keys_of(&first).unwrap();
        assert_eq!(keys.len(), 1);
        assert!(keys[0].name.starts_with("key-") && keys[0].name.len() == "key-yyyymmdd".len());

        // A later `up` keeps the key (and repairs the mode).
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        ensure_encryption_config(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), first);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);

        // Another state directory gets another key.
        let other = dir.path().join("other.yaml");
        ensure_encryption_config(&other).unwrap();
        assert_ne!(encryption::keys_of(&std::fs::read_to_string(&other).unwrap()), Some(keys));
    }

    #[test]
    fn a_rotation_in_progress_keeps_both_keys_and_a_foreign_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("encryption-config.yaml");
        let rotated = [Key::new("key-20250101", &[2; KEY_LEN]), Key::new("key-20240101", &[1; KEY_LEN])];
        std::fs::write(&path, encryption::encryption_config(&rotated).unwrap()).unwrap();
        ensure_encryption_config(&path).unwrap();
        assert_eq!(encryption::keys_of(&std::fs::read_to_string(&path).unwrap()), Some(rotated.to_vec()));

        let foreign = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - kms: {name: x, endpoint: unix:///k.sock}\n  - identity: {}\n";
        std::fs::write(&path, foreign).unwrap();
        assert_eq!(encryption_plan(Some(foreign)), EncryptionPlan::Foreign);
        ensure_encryption_config(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), foreign);
        assert_eq!(encryption_plan(None), EncryptionPlan::Create);
    }
}
