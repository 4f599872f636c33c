//! The scheduler's configuration file (YAML or JSON): which strategy picks among the seeds that
//! fit, how far apart regions are, how unschedulable shoots are retried, and where the health
//! and metrics endpoints listen. Read once at startup and validated there, so that a mistake is
//! reported with the field it concerns instead of surfacing later as an odd decision.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// How the scheduler chooses among the seeds that pass every filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Strategy {
    /// Only seeds in the shoot's region.
    #[default]
    SameRegion,
    /// The seeds whose region is closest to the shoot's region.
    MinimalDistance,
}

/// Pacing of retries for shoots that cannot be scheduled yet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackoffConfig {
    /// Delay before the first retry.
    #[serde(default = "default_initial_seconds")]
    pub initial_seconds: f64,
    /// The delay doubles per attempt up to this.
    #[serde(default = "default_max_seconds")]
    pub max_seconds: f64,
    /// Each delay is scattered by up to this fraction (0.2: ±20 %), so that shoots refused
    /// together do not all retry in the same instant.
    #[serde(default = "default_jitter")]
    pub jitter: f64,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial_seconds: default_initial_seconds(),
            max_seconds: default_max_seconds(),
            jitter: default_jitter(),
        }
    }
}

impl BackoffConfig {
    /// The delay before retry number `attempt` (0-based), before jitter.
    pub fn base_delay(&self, attempt: u32) -> Duration {
        let factor = 2f64.powi(attempt.min(62) as i32);
        Duration::from_secs_f64((self.initial_seconds * factor).min(self.max_seconds))
    }

    /// The delay before retry number `attempt` with jitter applied; `unit` is a random number
    /// in `[0, 1)`. Never above `max_seconds`.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let base = self.base_delay(attempt).as_secs_f64();
        let scattered = base * (1.0 + self.jitter * (2.0 * unit - 1.0));
        Duration::from_secs_f64(scattered.clamp(0.0, self.max_seconds))
    }
}

fn default_initial_seconds() -> f64 {
    5.0
}
fn default_max_seconds() -> f64 {
    300.0
}
fn default_jitter() -> f64 {
    0.2
}
fn default_fallback_distance() -> u32 {
    1000
}
fn default_concurrent_syncs() -> u16 {
    5
}
fn default_reservation_timeout_seconds() -> f64 {
    120.0
}
fn default_bind_address() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 10251))
}

/// The configuration file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// `SameRegion` (default) or `MinimalDistance`.
    #[serde(default)]
    pub strategy: Strategy,
    /// Distances between regions for `MinimalDistance`: `regionDistances[a][b]` is the distance
    /// from region `a` to region `b`; a pair configured in one direction counts both ways.
    #[serde(default)]
    pub region_distances: BTreeMap<String, BTreeMap<String, u32>>,
    /// The distance assumed between two regions whose distance is not configured; the edit
    /// distance of their names is added, so that `eu-west-1` is closer to `eu-west-2` than to
    /// `us-east-1`. Keep it above every configured distance so that configured pairs win.
    #[serde(default = "default_fallback_distance")]
    pub fallback_region_distance: u32,
    /// Retry pacing for shoots that cannot be scheduled yet.
    #[serde(default)]
    pub backoff: BackoffConfig,
    /// How many shoots are handled at once. Decisions themselves are serialised; this bounds
    /// the API writes in flight.
    #[serde(default = "default_concurrent_syncs")]
    pub concurrent_syncs: u16,
    /// How long a placement this process wrote may stay unconfirmed by its watch before it stops
    /// counting against the seed's capacity.
    #[serde(default = "default_reservation_timeout_seconds")]
    pub reservation_timeout_seconds: f64,
    /// Address of the `/healthz`, `/readyz` and `/metrics` endpoints.
    #[serde(default = "default_bind_address")]
    pub bind_address: SocketAddr,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            strategy: Strategy::default(),
            region_distances: BTreeMap::new(),
            fallback_region_distance: default_fallback_distance(),
            backoff: BackoffConfig::default(),
            concurrent_syncs: default_concurrent_syncs(),
            reservation_timeout_seconds: default_reservation_timeout_seconds(),
            bind_address: default_bind_address(),
        }
    }
}

/// Why the configuration file cannot be used (the runtime's, naming the file and the field).
pub use runtime::config::{ConfigError, Invalid, ParseError};

fn invalid(field: impl Into<String>, message: impl Into<String>) -> Invalid {
    Invalid::new(field, message)
}

impl runtime::config::ConfigFile for Config {
    fn empty() -> Option<Self> {
        Some(Self::default())
    }

    fn check(&self) -> Result<(), Invalid> {
        self.validate()
    }
}

impl Config {
    /// Reads, parses and validates a configuration file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        runtime::config::load(path)
    }

    /// Parses (YAML or JSON) and validates a configuration. An empty document is the default.
    pub fn from_yaml(text: &str) -> Result<Self, ParseError> {
        runtime::config::parse(text)
    }

    /// Checks every field; the error names the first offending one.
    pub fn validate(&self) -> Result<(), Invalid> {
        let b = &self.backoff;
        if !(b.initial_seconds.is_finite() && b.initial_seconds > 0.0) {
            return Err(invalid(
                "backoff.initialSeconds",
                format!("must be a positive number, got {}", b.initial_seconds),
            ));
        }
        if !b.max_seconds.is_finite() || b.max_seconds < b.initial_seconds {
            return Err(invalid(
                "backoff.maxSeconds",
                format!("must be at least backoff.initialSeconds ({}), got {}", b.initial_seconds, b.max_seconds),
            ));
        }
        if !(0.0..1.0).contains(&b.jitter) {
            return Err(invalid("backoff.jitter", format!("must be in [0, 1), got {}", b.jitter)));
        }
        if self.concurrent_syncs == 0 {
            return Err(invalid("concurrentSyncs", "must be at least 1"));
        }
        if !(self.reservation_timeout_seconds.is_finite() && self.reservation_timeout_seconds > 0.0) {
            return Err(invalid(
                "reservationTimeoutSeconds",
                format!("must be a positive number, got {}", self.reservation_timeout_seconds),
            ));
        }
        for (from, targets) in &self.region_distances {
            if from.is_empty() {
                return Err(invalid("regionDistances", "region names must not be empty"));
            }
            for (to, distance) in targets {
                let field = format!("regionDistances.{from}.{to}");
                if to.is_empty() {
                    return Err(invalid(format!("regionDistances.{from}"), "region names must not be empty"));
                }
                if to == from {
                    return Err(invalid(field, "a region's distance to itself is always 0 and cannot be configured"));
                }
                if let Some(back) = self.region_distances.get(to).and_then(|m| m.get(from))
                    && back != distance
                {
                    return Err(invalid(
                        field,
                        format!(
                            "{distance} disagrees with regionDistances.{to}.{from} ({back}); distances are symmetric"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The configured distance between two regions, in either direction.
    pub fn configured_distance(&self, a: &str, b: &str) -> Option<u32> {
        self.region_distances
            .get(a)
            .and_then(|m| m.get(b))
            .or_else(|| self.region_distances.get(b).and_then(|m| m.get(a)))
            .copied()
    }

    /// How long an unconfirmed placement counts against a seed.
    pub fn reservation_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.reservation_timeout_seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_default() {
        let c = Config::from_yaml("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.strategy, Strategy::SameRegion);
    }

    #[test]
    fn full_file_parses() {
        let c = Config::from_yaml(
            r#"
strategy: MinimalDistance
regionDistances:
  eu-west-1:
    eu-central-1: 10
    us-east-1: 100
fallbackRegionDistance: 500
backoff:
  initialSeconds: 0.5
  maxSeconds: 60
  jitter: 0.1
concurrentSyncs: 3
reservationTimeoutSeconds: 30
bindAddress: 127.0.0.1:8080
"#,
        )
        .unwrap();
        assert_eq!(c.strategy, Strategy::MinimalDistance);
        assert_eq!(c.configured_distance("eu-central-1", "eu-west-1"), Some(10));
        assert_eq!(c.configured_distance("eu-west-1", "us-east-1"), Some(100));
        assert_eq!(c.configured_distance("us-east-1", "eu-central-1"), None);
        assert_eq!(c.fallback_region_distance, 500);
        assert_eq!(c.backoff.initial_seconds, 0.5);
        assert_eq!(c.concurrent_syncs, 3);
        assert_eq!(c.bind_address.port(), 8080);
    }

    #[test]
    fn json_is_accepted() {
        let c = Config::from_yaml(r#"{"strategy": "MinimalDistance", "regionDistances": {"a": {"b": 3}}}"#).unwrap();
        assert_eq!(c.configured_distance("b", "a"), Some(3));
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            ("strategy: Nearest", "strategy"),
            ("strateg: SameRegion", "strateg"),
            ("backoff: {initialSeconds: 0}", "backoff.initialSeconds"),
            ("backoff: {initialSeconds: 10, maxSeconds: 5}", "backoff.maxSeconds"),
            ("backoff: {jitter: 1.5}", "backoff.jitter"),
            ("concurrentSyncs: 0", "concurrentSyncs"),
            ("reservationTimeoutSeconds: -1", "reservationTimeoutSeconds"),
            ("regionDistances: {a: {a: 1}}", "regionDistances.a.a"),
            ("regionDistances: {a: {b: 1}, b: {a: 2}}", "regionDistances.a.b"),
            ("regionDistances: {a: {b: -1}}", "regionDistances"),
            ("bindAddress: nowhere", "bindAddress"),
        ];
        for (yaml, field) in cases {
            let err = Config::from_yaml(yaml).unwrap_err().to_string();
            assert!(err.contains(field), "{yaml:?}: error {err:?} does not name {field}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_jitter_stays_in_bounds() {
        let b = BackoffConfig { initial_seconds: 1.0, max_seconds: 10.0, jitter: 0.2 };
        let base: Vec<u64> = (0..6).map(|a| b.base_delay(a).as_secs()).collect();
        assert_eq!(base, vec![1, 2, 4, 8, 10, 10]);
        assert_eq!(b.base_delay(u32::MAX).as_secs(), 10);
        assert_eq!(b.delay(1, 0.0), Duration::from_secs_f64(1.6));
        assert_eq!(b.delay(1, 0.5), Duration::from_secs(2));
        assert!(b.delay(10, 0.999) <= Duration::from_secs(10));
    }
}
