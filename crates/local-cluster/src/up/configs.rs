//! The configuration files `up` writes before anything starts: each rendered by
//! [`render`](crate::render) (or the registry's own module) and written only when its content
//! changed, kubeconfigs with mode 0600.

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::pki::{self, Files};
use crate::{registry, render};
use std::path::{Path, PathBuf};

/// Writes every configuration file and the components' kubeconfigs.
pub fn write_all(layout: &Layout, pki: &Files) -> Result<()> {
    let files: Vec<(PathBuf, String)> = vec![
        (layout.config_file("containerd.toml"), render::containerd_config(layout)?),
        (layout.containerd().join("certs.d").join("_default").join("hosts.toml"), render::registry_hosts()?),
        (layout.cni_conf().join("10-local-cluster.conflist"), render::cni_config(layout)),
        (layout.config_file("kubelet.yaml"), render::kubelet_config(layout, pki)?),
        (layout.config_file("kube-proxy.yaml"), render::kube_proxy_config(layout)?),
        (layout.resolv_conf(), render::resolv_conf()),
        (
            layout.config_file("registry.yaml"),
            registry::config(
                &layout.registry(),
                &pki.path(pki::REGISTRY, "tls.crt"),
                &pki.path(pki::REGISTRY, "tls.key"),
            )?,
        ),
    ];
    for (path, text) in files {
        write_if_changed(&path, &text, false)?;
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
    Ok(())
}

fn write_if_changed(path: &Path, text: &str, private: bool) -> Result<()> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io("creating", dir))?;
    }
    if private {
        pki::write_private(path, text)
    } else {
        std::fs::write(path, text).map_err(Error::io("writing", path))
    }
}
