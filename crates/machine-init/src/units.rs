//! Units on disk: where their files, drop-ins, enablement links and supervisor PIDs live, and
//! the order enabled units start in.

use crate::unit::{self, Service};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Where units, drop-ins and enablement links live, as on a systemd machine.
#[derive(Clone, Debug)]
pub struct Layout {
    pub unit_dir: PathBuf,
    pub state_dir: PathBuf,
}

impl Default for Layout {
    fn default() -> Self {
        Self { unit_dir: "/etc/systemd/system".into(), state_dir: "/run/machine-init".into() }
    }
}

/// Errors reading units.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error(transparent)]
    Unit(#[from] unit::UnitError),
}

pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

impl Layout {
    pub fn wants_dir(&self) -> PathBuf {
        self.unit_dir.join("multi-user.target.wants")
    }

    pub fn pid_file(&self, unit: &str) -> PathBuf {
        self.state_dir.join(format!("{unit}.pid"))
    }

    /// Reads a unit with its drop-ins (`<unit>.d/*.conf`, by name).
    pub fn load(&self, name: &str) -> Result<Service, Error> {
        let path = self.unit_dir.join(name);
        let main = std::fs::read_to_string(&path).map_err(io(format!("reading {}", path.display())))?;
        let dir = self.unit_dir.join(format!("{name}.d"));
        let mut drop_ins = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            paths.sort();
            for p in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "conf")) {
                drop_ins.push(std::fs::read_to_string(&p).map_err(io(format!("reading {}", p.display())))?);
            }
        }
        let refs: Vec<&str> = drop_ins.iter().map(String::as_str).collect();
        Ok(unit::parse(name, &main, &refs)?)
    }

    /// The enabled units (links in `multi-user.target.wants`), by name.
    pub fn enabled(&self) -> BTreeSet<String> {
        std::fs::read_dir(self.wants_dir())
            .map(|entries| entries.flatten().filter_map(|e| e.file_name().to_str().map(str::to_string)).collect())
            .unwrap_or_default()
    }

    pub fn enable(&self, name: &str) -> Result<(), Error> {
        let dir = self.wants_dir();
        std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
        let link = dir.join(name);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(self.unit_dir.join(name), &link)
                .map_err(io(format!("linking {}", link.display())))?;
        }
        Ok(())
    }

    pub fn disable(&self, name: &str) -> Result<(), Error> {
        match std::fs::remove_file(self.wants_dir().join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(format!("disabling {name}"))(e)),
            _ => Ok(()),
        }
    }

    /// The PID of a unit's running supervisor.
    pub fn running(&self, name: &str) -> Option<i32> {
        let pid: i32 = std::fs::read_to_string(self.pid_file(name)).ok()?.trim().parse().ok()?;
        alive(pid).then_some(pid)
    }

    /// Units whose supervisor runs.
    pub fn all_running(&self) -> BTreeMap<String, i32> {
        let Ok(entries) = std::fs::read_dir(&self.state_dir) else { return BTreeMap::new() };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".pid").map(str::to_string))
            .filter_map(|name| Some((name.clone(), self.running(&name)?)))
            .collect()
    }
}

/// Whether a process exists (and is not a zombie).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The order units start in: each after the units its `After=` names (among those given);
/// otherwise by name. Cycles are broken by name order.
pub fn start_order(units: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut done: Vec<String> = Vec::new();
    let mut left: BTreeSet<&String> = units.keys().collect();
    while !left.is_empty() {
        let ready: Vec<&String> =
            left.iter().copied().filter(|u| units[*u].iter().all(|a| !left.contains(a) || a == *u)).collect();
        let next = ready.first().copied().or_else(|| left.first().copied());
        if let Some(n) = next {
            left.remove(n);
            done.push(n.clone());
        }
    }
    done
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report
    use super::*;

    fn deps(list: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        list.iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect()
    }

    #[test]
    fn units_start_after_what_they_name() {
        let order = start_order(&deps(&[
            ("a-kubelet.service", &["containerd.service", "network.target"]),
            ("containerd.service", &[]),
            ("images.service", &["containerd.service"]),
            ("z.service", &[]),
        ]));
        assert_eq!(order, vec!["containerd.service", "a-kubelet.service", "images.service", "z.service"]);
    }

    #[test]
    fn a_cycle_still_starts_everything() {
        let order = start_order(&deps(&[("a", &["b"]), ("b", &["a"]), ("c", &["c"])]));
        assert_eq!(order.len(), 3);
        assert_eq!(order, vec!["c", "a", "b"], "c has no dependency; the a-b cycle goes by name");
    }

    #[test]
    fn enablement_and_loading_use_the_systemd_layout() {
        let dir = std::env::temp_dir().join(format!("machine-init-units-{}", std::process::id()));
        let layout = Layout { unit_dir: dir.join("units"), state_dir: dir.join("state") };
        std::fs::create_dir_all(layout.unit_dir.join("k.service.d")).unwrap();
        std::fs::write(layout.unit_dir.join("k.service"), "[Service]\nExecStart=/bin/k\n").unwrap();
        std::fs::write(layout.unit_dir.join("k.service.d/10-a.conf"), "[Service]\nEnvironment=X=1\n").unwrap();
        std::fs::write(layout.unit_dir.join("k.service.d/ignored.txt"), "[Service]\nEnvironment=X=2\n").unwrap();
        layout.enable("k.service").unwrap();
        layout.enable("k.service").unwrap();
        assert_eq!(layout.enabled(), BTreeSet::from(["k.service".to_string()]));
        let s = layout.load("k.service").unwrap();
        assert_eq!(s.environment.get("X").map(String::as_str), Some("1"));
        layout.disable("k.service").unwrap();
        layout.disable("k.service").unwrap();
        assert!(layout.enabled().is_empty());
        assert!(layout.running("k.service").is_none());
        std::fs::create_dir_all(&layout.state_dir).unwrap();
        std::fs::write(layout.pid_file("self.service"), std::process::id().to_string()).unwrap();
        assert_eq!(layout.all_running().get("self.service").copied(), Some(std::process::id() as i32));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
