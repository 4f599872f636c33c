//! Makes the locally built images (OCI archives from `hack/images.sh`) available to the node:
//! each archive is imported into containerd's `k8s.io` namespace under its real name, once per
//! content (a marker next to containerd's state records what was imported).

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::process::run;
use std::path::Path;

/// Imports every archive in `dir` whose content was not imported yet; returns the names imported.
pub fn import_all(layout: &Layout, dir: &Path) -> Result<Vec<String>> {
    let markers = layout.containerd().join("imported");
    std::fs::create_dir_all(&markers).map_err(Error::io("creating", &markers))?;
    let entries = std::fs::read_dir(dir).map_err(Error::io("reading the image cache (run `make images`)", dir))?;
    let sock = layout.containerd_socket().display().to_string();
    let mut imported = Vec::new();
    let mut archives: Vec<_> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "tar")).collect();
    archives.sort();
    for archive in archives {
        let inputs = std::fs::read_to_string(archive.with_extension("tar.inputs")).unwrap_or_default();
        let Some(file) = archive.file_name().map(|f| f.to_string_lossy().into_owned()) else { continue };
        let marker = markers.join(&file);
        if !inputs.is_empty() && std::fs::read_to_string(&marker).ok().as_deref() == Some(inputs.as_str()) {
            continue;
        }
        let path = archive.display().to_string();
        run("ctr", &["--address", &sock, "--namespace", "k8s.io", "images", "import", &path])?;
        std::fs::write(&marker, &inputs).map_err(Error::io("writing", &marker))?;
        imported.push(file);
    }
    Ok(imported)
}
