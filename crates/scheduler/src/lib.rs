//! gardener-scheduler: places every new shoot on the best seed, and explains every refusal.
//!
//! * [`mod@decide`]: the pure decision — filters, strategies, tie-breaks and the refusal text.
//! * [`controller`]: watches Shoots, Seeds and CloudProfiles, writes `spec.seedName` or the
//!   refusal, emits Events, retries with backoff, and never overbooks a seed.
//! * [`config`], [`metrics`], [`http`]: the configuration file, the process's metrics and its
//!   `/healthz`, `/readyz` and `/metrics` endpoints.

pub mod app;
pub mod config;
pub mod controller;
pub mod decide;
pub mod metrics;
pub mod readiness;

pub use config::{Config, Strategy};
pub use decide::{Refusal, SeedName, ShootCounter, decide};
