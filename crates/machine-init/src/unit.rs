//! The part of a systemd unit file a machine needs to run a service: `[Service]`'s
//! `ExecStart=`, `Environment=`, `EnvironmentFile=`, `Type=`, `Restart=`, `RestartSec=`, and
//! `[Unit]`'s `After=`. Drop-ins are applied in order, as systemd applies them: list-valued
//! keys append, an empty `ExecStart=` clears the list. Pure functions only.

use std::collections::BTreeMap;
use std::time::Duration;

/// Why a unit cannot be run.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("{unit}: line {line}: {message}")]
    Syntax { unit: String, line: usize, message: String },
    #[error("{unit}: has no ExecStart=")]
    NoExecStart { unit: String },
}

/// How the service is run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    /// Runs until stopped (`Type=simple`, `exec`, `notify`).
    #[default]
    Simple,
    /// Runs its commands in order, once (`Type=oneshot`).
    Oneshot,
}

/// When a stopped process is started again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Restart {
    #[default]
    No,
    Always,
    OnFailure,
}

/// A command of `ExecStart=`; `ignore_failure` is the `-` prefix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Command {
    pub words: Vec<String>,
    pub ignore_failure: bool,
}

/// A service as the supervisor runs it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Service {
    pub exec_start: Vec<Command>,
    pub environment: BTreeMap<String, String>,
    /// `EnvironmentFile=` paths; `true` when the file may be missing (`-` prefix).
    pub environment_files: Vec<(String, bool)>,
    pub kind: Kind,
    pub restart: Restart,
    pub restart_sec: Duration,
    pub after: Vec<String>,
}

/// Parses a unit and its drop-ins (in the order given).
pub fn parse(unit: &str, main: &str, drop_ins: &[&str]) -> Result<Service, UnitError> {
    let mut service = Service { restart_sec: Duration::from_millis(100), ..Default::default() };
    for text in std::iter::once(main).chain(drop_ins.iter().copied()) {
        apply(unit, text, &mut service)?;
    }
    if service.exec_start.is_empty() {
        return Err(UnitError::NoExecStart { unit: unit.into() });
    }
    Ok(service)
}

/// Logical lines: comments dropped, backslash-newline continuations joined.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if current.is_none() && (line.is_empty() || line.starts_with('#') || line.starts_with(';')) {
            continue;
        }
        let (start, mut acc) = current.take().unwrap_or((i + 1, String::new()));
        if let Some(head) = line.strip_suffix('\\') {
            acc.push_str(head);
            acc.push(' ');
            current = Some((start, acc));
        } else {
            acc.push_str(line);
            out.push((start, acc));
        }
    }
    if let Some(rest) = current {
        out.push(rest);
    }
    out
}

fn apply(unit: &str, text: &str, s: &mut Service) -> Result<(), UnitError> {
    let mut section = String::new();
    for (line, content) in logical_lines(text) {
        let err = |message: String| UnitError::Syntax { unit: unit.into(), line, message };
        if let Some(name) = content.strip_prefix('[').and_then(|c| c.strip_suffix(']')) {
            section = name.to_string();
            continue;
        }
        let Some((key, value)) = content.split_once('=') else {
            return Err(err(format!("expected key=value, found {content:?}")));
        };
        let (key, value) = (key.trim(), value.trim());
        match (section.as_str(), key) {
            ("Unit", "After") => s.after.extend(value.split_whitespace().map(str::to_string)),
            ("Service", "ExecStart") if value.is_empty() => s.exec_start.clear(),
            ("Service", "ExecStart") => s.exec_start.push(command(value).map_err(err)?),
            ("Service", "Environment") => {
                for word in shlex::split(value).ok_or_else(|| err(format!("unbalanced quotes in {value:?}")))? {
                    let (k, v) = word.split_once('=').ok_or_else(|| err(format!("{word:?} is not NAME=value")))?;
                    s.environment.insert(k.to_string(), v.to_string());
                }
            }
            ("Service", "EnvironmentFile") => match value.strip_prefix('-') {
                Some(path) => s.environment_files.push((path.to_string(), true)),
                None => s.environment_files.push((value.to_string(), false)),
            },
            ("Service", "Type") => {
                s.kind = match value {
                    "oneshot" => Kind::Oneshot,
                    "simple" | "exec" | "notify" | "forking" | "" => Kind::Simple,
                    other => return Err(err(format!("unknown Type={other}"))),
                }
            }
            ("Service", "Restart") => {
                s.restart = match value {
                    "no" | "" => Restart::No,
                    "always" => Restart::Always,
                    "on-failure" | "on-abnormal" | "on-abort" => Restart::OnFailure,
                    other => return Err(err(format!("unknown Restart={other}"))),
                }
            }
            ("Service", "RestartSec") => s.restart_sec = seconds(value).map_err(err)?,
            _ => {} // everything else is systemd's business, not a machine's
        }
    }
    Ok(())
}

fn command(value: &str) -> Result<Command, String> {
    let mut rest = value;
    let mut ignore_failure = false;
    while let Some(c) = rest.chars().next().filter(|c| matches!(c, '-' | '+' | '!' | '@' | ':')) {
        ignore_failure |= c == '-';
        rest = &rest[1..];
    }
    let words = shlex::split(rest).ok_or_else(|| format!("unbalanced quotes in {value:?}"))?;
    if words.is_empty() {
        return Err("ExecStart= names no program".into());
    }
    Ok(Command { words, ignore_failure })
}

fn seconds(value: &str) -> Result<Duration, String> {
    let (number, scale) = match value {
        v if v.ends_with("ms") => (&v[..v.len() - 2], 0.001),
        v if v.ends_with("min") => (&v[..v.len() - 3], 60.0),
        v if v.ends_with('s') => (&v[..v.len() - 1], 1.0),
        v => (v, 1.0),
    };
    let n: f64 = number.trim().parse().map_err(|_| format!("RestartSec={value} is not a duration"))?;
    if !(n.is_finite() && n >= 0.0) {
        return Err(format!("RestartSec={value} is not a duration"));
    }
    Ok(Duration::from_secs_f64(n * scale))
}

/// Reads `NAME=value` lines of an environment file (comments and blank lines skipped, values
/// unquoted as systemd does).
pub fn environment_file(text: &str) -> BTreeMap<String, String> {
    logical_lines(text)
        .into_iter()
        .filter_map(|(_, l)| {
            let (k, v) = l.split_once('=')?;
            let v = shlex::split(v.trim()).map(|w| w.join(" ")).unwrap_or_else(|| v.trim().to_string());
            Some((k.trim().to_string(), v))
        })
        .collect()
}

/// Expands variables in a command as systemd does: a word that is exactly `$NAME` becomes the
/// value's whitespace-separated words (none when unset or empty); `${NAME}` inside a word is
/// replaced by the value as it is.
pub fn expand(words: &[String], env: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for word in words {
        if let Some(name) = word.strip_prefix('$').filter(|n| is_name(n)) {
            out.extend(env.get(name).into_iter().flat_map(|v| v.split_whitespace()).map(str::to_string));
            continue;
        }
        let mut result = String::new();
        let mut rest = word.as_str();
        while let Some(start) = rest.find("${") {
            result.push_str(&rest[..start]);
            match rest[start + 2..].find('}') {
                Some(end) => {
                    let name = &rest[start + 2..start + 2 + end];
                    result.push_str(env.get(name).map(String::as_str).unwrap_or_default());
                    rest = &rest[start + 3 + end..];
                }
                None => {
                    result.push_str(&rest[start..]);
                    rest = "";
                }
            }
        }
        result.push_str(rest);
        out.push(result);
    }
    out
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests;
