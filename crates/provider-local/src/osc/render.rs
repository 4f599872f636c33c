//! The pure renderer: an OperatingSystemConfig spec (plus the contents of the Secrets it
//! references) becomes a bash provisioning script. Files are written by path order, units by
//! name order, so the same input (in any list order) gives byte-identical output.
//!
//! * File content is carried base64-encoded and decoded on the machine (`base64 -d`), except
//!   with `transmitUnencoded`, where it is written verbatim from a here-document of exactly its
//!   length (`head -c`). Inline data is plain or `b64`/`base64`; secret data is taken as is.
//! * Permissions default to 0644. Units go to `/etc/systemd/system/<name>`, drop-ins to
//!   `<name>.d/`. After `systemctl daemon-reload` each unit is enabled (unless `enable: false`)
//!   and gets its `command`. A unit with `filePaths` is restarted when the checksum of its
//!   content and those files differs from the one the machine recorded last time.

use crate::common::sha256_hex;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use extension_sdk::api::extensions::operatingsystemconfig::{File, OperatingSystemConfigSpec, Unit, UnitCommand};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Where the machine records unit checksums between runs.
pub const CHECKSUM_DIR: &str = "/var/lib/provider-local/osc-checksums";
const SYSTEMD_DIR: &str = "/etc/systemd/system";

/// Secret contents referenced by files: `(secret name, data key)` → bytes.
pub type SecretData = BTreeMap<(String, String), Vec<u8>>;

/// Why a spec cannot be rendered. `field` is the path in the spec.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum RenderError {
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{field}: Secret {secret} has no key {key} (or does not exist)")]
    MissingSecret { field: String, secret: String, key: String },
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> RenderError {
    RenderError::Invalid { field: field.into(), message: message.into() }
}

/// Single-quotes a string for bash.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The bytes a file gets, decoded from the spec.
pub fn file_content(file: &File, field: &str, secrets: &SecretData) -> Result<Vec<u8>, RenderError> {
    match (&file.content.inline, &file.content.secret_ref) {
        (Some(inline), None) => match inline.encoding.as_str() {
            "" | "plain" => Ok(inline.data.clone().into_bytes()),
            "b64" | "base64" => STANDARD
                .decode(inline.data.trim())
                .map_err(|e| invalid(format!("{field}.content.inline.data"), format!("invalid base64: {e}"))),
            other => Err(invalid(format!("{field}.content.inline.encoding"), format!("unknown encoding {other:?}"))),
        },
        (None, Some(r)) => {
            secrets.get(&(r.name.clone(), r.data_key.clone())).cloned().ok_or_else(|| RenderError::MissingSecret {
                field: format!("{field}.content.secretRef"),
                secret: r.name.clone(),
                key: r.data_key.clone(),
            })
        }
        _ => Err(invalid(format!("{field}.content"), "exactly one of inline and secretRef is required")),
    }
}

fn check_path(path: &str, field: &str) -> Result<(), RenderError> {
    if !path.starts_with('/') || path.contains('\0') || path.split('/').any(|s| s == "..") {
        return Err(invalid(field, format!("{path:?} is not a clean absolute path")));
    }
    Ok(())
}

fn check_unit_name(name: &str, field: &str) -> Result<(), RenderError> {
    if name.is_empty() || name.contains(['/', '\0', '\n']) || name.starts_with('.') {
        return Err(invalid(field, format!("{name:?} is not a unit file name")));
    }
    Ok(())
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Writes `content` to `path` with `mode`.
fn write_file(out: &mut String, path: &str, content: &[u8], mode: i32, unencoded: bool) -> Result<(), String> {
    let _ = writeln!(out, "mkdir -p {}", quote(parent(path)));
    if unencoded {
        let text = std::str::from_utf8(content).map_err(|e| format!("content is not UTF-8 text: {e}"))?;
        let mut delimiter = "PROVIDER_LOCAL_EOF".to_string();
        while text.lines().any(|l| l == delimiter) {
            delimiter.push('_');
        }
        let _ = writeln!(out, "head -c {} > {} <<'{delimiter}'", content.len(), quote(path));
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "{delimiter}");
    } else {
        let encoded = STANDARD.encode(content);
        let _ = writeln!(out, "base64 -d > {} <<'PROVIDER_LOCAL_EOF'", quote(path));
        for chunk in encoded.as_bytes().chunks(76) {
            out.push_str(&String::from_utf8_lossy(chunk));
            out.push('\n');
        }
        out.push_str("PROVIDER_LOCAL_EOF\n");
    }
    let _ = writeln!(out, "chmod {mode:04o} {}", quote(path));
    Ok(())
}

/// The rendered configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    pub script: Vec<u8>,
    /// Names of the spec's units, sorted.
    pub units: Vec<String>,
}

/// Renders the provisioning script for the OperatingSystemConfig `namespace/name`.
pub fn render(
    namespace: &str,
    name: &str,
    spec: &OperatingSystemConfigSpec,
    secrets: &SecretData,
) -> Result<Rendered, RenderError> {
    let mut files: BTreeMap<&str, (usize, &File)> = BTreeMap::new();
    for (i, f) in spec.files.iter().enumerate() {
        let field = format!("spec.files[{i}]");
        check_path(&f.path, &format!("{field}.path"))?;
        if files.insert(&f.path, (i, f)).is_some() {
            return Err(invalid(format!("{field}.path"), format!("{} appears twice", f.path)));
        }
    }
    let mut units: BTreeMap<&str, (usize, &Unit)> = BTreeMap::new();
    for (i, u) in spec.units.iter().enumerate() {
        check_unit_name(&u.name, &format!("spec.units[{i}].name"))?;
        if units.insert(&u.name, (i, u)).is_some() {
            return Err(invalid(format!("spec.units[{i}].name"), format!("{} appears twice", u.name)));
        }
    }

    let mut out = String::new();
    out.push_str("#!/bin/bash\n");
    let _ = writeln!(out, "# Rendered by provider-local from OperatingSystemConfig {namespace}/{name}; do not edit.");
    out.push_str("set -euo pipefail\n");

    let mut contents: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
    for (path, (i, f)) in &files {
        let field = format!("spec.files[{i}]");
        let content = file_content(f, &field, secrets)?;
        let mode = f.permissions.unwrap_or(0o644);
        if !(0..=0o7777).contains(&mode) {
            return Err(invalid(format!("{field}.permissions"), format!("{mode} is not a file mode")));
        }
        let _ = writeln!(out, "\n# file {path}");
        write_file(&mut out, path, &content, mode, f.content.transmit_unencoded == Some(true))
            .map_err(|m| invalid(format!("{field}.content"), m))?;
        contents.insert(path, content);
    }

    for (name, (i, u)) in &units {
        let field = format!("spec.units[{i}]");
        let path = format!("{SYSTEMD_DIR}/{name}");
        if let Some(content) = &u.content {
            let _ = writeln!(out, "\n# unit {name}");
            write_file(&mut out, &path, content.as_bytes(), 0o644, false).map_err(|m| invalid(&field, m))?;
        }
        let mut drop_ins: Vec<_> = u.drop_ins.iter().enumerate().collect();
        drop_ins.sort_by(|a, b| a.1.name.cmp(&b.1.name));
        for (j, d) in drop_ins {
            check_unit_name(&d.name, &format!("{field}.dropIns[{j}].name"))?;
            let _ = writeln!(out, "\n# drop-in {name}.d/{}", d.name);
            write_file(&mut out, &format!("{path}.d/{}", d.name), d.content.as_bytes(), 0o644, false)
                .map_err(|m| invalid(format!("{field}.dropIns[{j}]"), m))?;
        }
    }

    out.push_str("\nsystemctl daemon-reload\n");
    for (name, (i, u)) in &units {
        let q = quote(name);
        if u.enable != Some(false) && u.content.is_some() {
            let _ = writeln!(out, "systemctl enable {q}");
        }
        if !u.file_paths.is_empty() {
            let checksum = unit_checksum(u, &contents, &format!("spec.units[{i}]"))?;
            let record = quote(&format!("{CHECKSUM_DIR}/{name}"));
            let _ = writeln!(out, "mkdir -p {}", quote(CHECKSUM_DIR));
            let _ = writeln!(
                out,
                "if [ \"$(cat {record} 2>/dev/null || true)\" != '{checksum}' ]; then systemctl restart {q}; echo '{checksum}' > {record}; fi"
            );
        }
        match u.command {
            Some(UnitCommand::Start) => {
                let _ = writeln!(out, "systemctl start {q}");
            }
            Some(UnitCommand::Restart) => {
                let _ = writeln!(out, "systemctl restart {q}");
            }
            Some(UnitCommand::Stop) => {
                let _ = writeln!(out, "systemctl stop {q}");
            }
            None => {}
        }
    }
    Ok(Rendered { script: out.into_bytes(), units: units.keys().map(|k| k.to_string()).collect() })
}

/// Checksum over a unit's content, drop-ins and the files it names in `filePaths`.
fn unit_checksum(u: &Unit, contents: &BTreeMap<&str, Vec<u8>>, field: &str) -> Result<String, RenderError> {
    let mut data = Vec::new();
    data.extend_from_slice(u.content.as_deref().unwrap_or_default().as_bytes());
    let mut drop_ins: Vec<_> = u.drop_ins.iter().map(|d| (&d.name, &d.content)).collect();
    drop_ins.sort();
    for (n, c) in drop_ins {
        data.extend_from_slice(n.as_bytes());
        data.extend_from_slice(c.as_bytes());
    }
    let paths: BTreeSet<&String> = u.file_paths.iter().collect();
    for p in paths {
        let c = contents
            .get(p.as_str())
            .ok_or_else(|| invalid(format!("{field}.filePaths"), format!("{p} is not one of spec.files")))?;
        data.extend_from_slice(p.as_bytes());
        data.extend_from_slice(&(c.len() as u64).to_be_bytes());
        data.extend_from_slice(c);
    }
    Ok(sha256_hex(&data))
}
