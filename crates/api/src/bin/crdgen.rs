//! Writes one YAML file per CRD into `crds/` (or the directory given as the first argument),
//! and removes stale files there.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../crds"));
    std::fs::create_dir_all(&dir)?;
    let crds = api::crds::all();
    let wanted: Vec<String> = crds.iter().map(api::crds::file_name).collect();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if name.ends_with(".yaml") && !wanted.contains(&name) {
            std::fs::remove_file(&path)?;
            println!("removed {}", path.display());
        }
    }
    for crd in &crds {
        let path = dir.join(api::crds::file_name(crd));
        std::fs::write(&path, api::crds::render(crd)?)?;
    }
    println!("wrote {} CRDs to {}", crds.len(), dir.display());
    Ok(())
}
