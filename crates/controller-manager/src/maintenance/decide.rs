//! Whether a shoot's maintenance is due, and what it changes. Pure.
//!
//! Maintenance runs once per maintenance time window (`spec.maintenance.timeWindow`,
//! `begin`/`end` as `HHMMSS+ZZZZ`, possibly across midnight), or at once when the shoot is
//! annotated `gardener.cloud/operation: maintain`. It changes the Kubernetes version:
//! * an expired version (its `expirationDate` in the CloudProfile passed) is forced to the latest
//!   unexpired patch of its minor, else of the next offered minor (the versioning policy), whether
//!   or not auto-update is on;
//! * with `autoUpdate.kubernetesVersion`, the latest supported (not preview, not expired) patch
//!   of the same minor, when newer.
//!
//! And each worker pool's machine image version:
//! * an expired one is forced to the latest unexpired, non-preview version of the same image;
//! * with `autoUpdate.machineImageVersion`, the latest unexpired, non-preview version, when
//!   newer (machine images have no minor-version policy: any newer version qualifies).
//!
//! A version the CloudProfile does not offer (a custom image) is left alone.

use api::core::cloudprofile::{ExpirableVersion, VersionClassification};
use api::core::shoot::settings::MaintenanceTimeWindow;
use api::helpers::versions::{self, VersionState};
use k8s_openapi::jiff::Timestamp;
use std::time::Duration;

const DAY: i64 = 86_400;

/// A maintenance time window as seconds of the UTC day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    begin: i64,
    end: i64,
}

/// A shoot whose maintenance cannot be worked out; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct Problem {
    pub field: &'static str,
    pub problem: String,
}

fn seconds_of_day(value: &str, field: &'static str) -> Result<i64, Problem> {
    api::helpers::maintenance::utc_seconds_of_day(value).ok_or_else(|| Problem {
        field,
        problem: format!("{value:?} is not a time of day HHMMSS+ZZZZ (for example 220000+0100)"),
    })
}

impl Window {
    pub fn parse(window: &MaintenanceTimeWindow) -> Result<Self, Problem> {
        let begin = seconds_of_day(&window.begin, "spec.maintenance.timeWindow.begin")?;
        let end = seconds_of_day(&window.end, "spec.maintenance.timeWindow.end")?;
        Ok(Self { begin, end })
    }

    fn length(&self) -> i64 {
        match (self.end - self.begin).rem_euclid(DAY) {
            0 => DAY,
            l => l,
        }
    }

    /// Seconds since the window's begin, when `now` is inside it.
    fn elapsed(&self, now: Timestamp) -> Option<i64> {
        let since = (now.as_second().rem_euclid(DAY) - self.begin).rem_euclid(DAY);
        (since < self.length()).then_some(since)
    }

    /// Time until the window next begins.
    fn until_next(&self, now: Timestamp) -> Duration {
        let wait = (self.begin - now.as_second().rem_euclid(DAY)).rem_euclid(DAY);
        Duration::from_secs(if wait == 0 { DAY } else { wait }.unsigned_abs())
    }
}

/// A worker pool's machine image and the versions the CloudProfile offers of it.
#[derive(Debug, Clone)]
pub struct PoolImage<'a> {
    /// Index of the pool in `spec.provider.workers`.
    pub index: usize,
    pub pool: &'a str,
    pub image: &'a str,
    pub version: &'a str,
    pub offered: Vec<&'a ExpirableVersion>,
}

/// A machine image update of pool `index`, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUpdate {
    pub index: usize,
    pub to: String,
    pub why: String,
}

#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub version: &'a str,
    pub offered: &'a [ExpirableVersion],
    pub auto_update: bool,
    pub pools: Vec<PoolImage<'a>>,
    pub auto_update_images: bool,
    pub window: Option<Window>,
    pub maintain_requested: bool,
    pub last_triggered: Option<Timestamp>,
    pub now: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Maintenance runs now.
    pub run: bool,
    /// The new Kubernetes version, and why.
    pub update: Option<(String, String)>,
    /// New machine image versions of worker pools.
    pub images: Vec<ImageUpdate>,
    pub requeue_after: Option<Duration>,
}

/// The Kubernetes version maintenance moves to, and why; `None` when it stays.
pub fn kubernetes_target(
    offered: &[ExpirableVersion],
    current: &str,
    auto_update: bool,
    now: Timestamp,
) -> Result<Option<(String, String)>, Problem> {
    let field = "spec.kubernetes.version";
    let problem = |e: versions::VersionError| Problem { field, problem: e.to_string() };
    if versions::classify(offered, current, now).map_err(problem)? == VersionState::Expired {
        // Never forced onto a preview version.
        let qualifying: Vec<ExpirableVersion> =
            offered.iter().filter(|v| v.classification != Some(VersionClassification::Preview)).cloned().collect();
        let target = versions::forced_update_target(&qualifying, current, now).map_err(problem)?;
        return Ok(target.map(|to| {
            let why = format!("Kubernetes version {current} expired: forced update to {to}");
            (to, why)
        }));
    }
    if !auto_update {
        return Ok(None);
    }
    let parse = |v: &str| semver::Version::parse(v.trim_start_matches('v')).ok();
    let Some(cur) = parse(current) else { return Ok(None) };
    let best = offered
        .iter()
        .filter(|v| v.classification != Some(VersionClassification::Preview))
        .filter(|v| v.expiration_date.as_ref().is_none_or(|d| d.0 > now))
        .filter_map(|v| parse(&v.version).map(|p| (p, v)))
        .filter(|(p, _)| p.major == cur.major && p.minor == cur.minor && *p > cur)
        .max_by(|a, b| a.0.cmp(&b.0));
    Ok(best.map(|(_, v)| {
        (v.version.clone(), format!("Kubernetes patch version auto-updated from {current} to {}", v.version))
    }))
}

/// The machine image version pool `p` moves to, and why; `None` when it stays.
pub fn machine_image_target(p: &PoolImage<'_>, auto_update: bool, now: Timestamp) -> Option<ImageUpdate> {
    let parse = |v: &str| semver::Version::parse(v.trim_start_matches('v')).ok();
    let current = p.offered.iter().find(|v| v.version == p.version)?;
    let cur = parse(p.version)?;
    let expired = current.expiration_date.as_ref().is_some_and(|d| d.0 <= now);
    if !expired && !auto_update {
        return None;
    }
    let best = p
        .offered
        .iter()
        .filter(|v| v.classification != Some(VersionClassification::Preview))
        .filter(|v| v.expiration_date.as_ref().is_none_or(|d| d.0 > now))
        .filter_map(|v| parse(&v.version).map(|parsed| (parsed, *v)))
        .filter(|(parsed, _)| expired || *parsed > cur)
        .max_by(|a, b| a.0.cmp(&b.0))?;
    let to = best.1.version.clone();
    let why = if expired {
        format!("machine image {} {} of worker pool {} expired: forced update to {to}", p.image, p.version, p.pool)
    } else {
        format!("machine image {} of worker pool {} auto-updated from {} to {to}", p.image, p.pool, p.version)
    };
    Some(ImageUpdate { index: p.index, to, why })
}

pub fn decide(f: &Facts<'_>) -> Result<Decision, Problem> {
    let requeue_after = f.window.map(|w| w.until_next(f.now));
    let in_window_first_time = f.window.and_then(|w| w.elapsed(f.now)).is_some_and(|elapsed| {
        // Once per window: a trigger since this window began counts.
        let begun = f.now.as_second() - elapsed;
        f.last_triggered.is_none_or(|t| t.as_second() < begun)
    });
    if !(f.maintain_requested || in_window_first_time) {
        return Ok(Decision { run: false, update: None, images: vec![], requeue_after });
    }
    let update = kubernetes_target(f.offered, f.version, f.auto_update, f.now)?;
    let images = f.pools.iter().filter_map(|p| machine_image_target(p, f.auto_update_images, f.now)).collect();
    Ok(Decision { run: true, update, images, requeue_after })
}

#[cfg(test)]
mod tests;
