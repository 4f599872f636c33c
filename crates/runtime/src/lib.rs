//! What every binary of the project runs on, apart from what it does: admission, the
//! scheduler, the controller-manager, gardenlet, local-cluster and the extensions share it.
//!
//! * [`cli`]: the flags every binary has (`--kubeconfig`, `--metrics-bind-address`,
//!   `--log-level`, `--log-format`), logging set up from them, the client, and errors printed
//!   for people with a non-zero exit code.
//! * [`runner`]: the process around controllers: `/healthz`, `/readyz`, `/metrics`
//!   ([`runner::http`]), leader election ([`runner::leader`]), the heartbeat Lease
//!   ([`runner::heartbeat`]) and graceful shutdown. Anything implementing
//!   [`runner::Controller`] runs while the instance leads.
//! * [`events`]: one Warning event per reconcile failure, with the error chain, redacted.
//! * [`backoff`]: per-object retry pacing.
//! * [`config`]: configuration files read, parsed and validated once, errors naming the file
//!   and the field.
//! * [`cache`]: when a controller's watch cache has synced, for `/readyz`.
//! * [`metrics`]: reconcile metrics in a registry owned by the process.
//! * [`wiring`]: one way to wire a kube-runtime controller: the kinds it needs served, its
//!   caches and watches under named readiness flags, the run, and `/readyz` once all synced.
//!
//! It sits below `extension-sdk` (the extension contract), which re-exports it.

pub mod backoff;
pub mod cache;
pub mod cli;
pub mod config;
pub mod events;
pub mod metrics;
pub mod runner;
pub mod wiring;

pub use metrics::Metrics;
pub use runner::{Controller, LeaderElectionConfig, Runner, RunnerConfig, RunnerError};
