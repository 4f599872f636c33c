//! The extension contract as a framework, both sides of it.
//!
//! * **Controller side**, for extension authors: implement an [`Actuator`] for one extension
//!   kind (reconcile, delete, force-delete, migrate, restore) and hand it to an
//!   [`ExtensionController`]. The controller owns everything that is not provider logic: type
//!   and class filtering, when to act, which operation, the operation annotation protocol, the
//!   finalizer, status, backoff, timeouts, events, metrics and tracing. A [`Runner`] adds the
//!   process around it: `/healthz`, `/readyz`, `/metrics`, leader election, a heartbeat Lease
//!   and graceful shutdown. [`health`] computes health conditions periodically.
//! * **Deployer side**, for gardenlet: [`Deployer`] creates extension objects, requests
//!   operations and waits for them by the contract's readiness rules.
//! * **Conformance**: with the `testing` feature, [`testing`] runs an actuator through the whole
//!   lifecycle against a real kube-apiserver and checks the contract.
//!
//! The crate re-exports [`api`], [`kube`], [`k8s_openapi`] and [`runtime`] (with its `cli`,
//! `metrics` and `runner` modules under their old paths) so that an extension needs only this
//! dependency.

pub use api;
pub use k8s_openapi;
pub use kube;

pub use runtime;

pub mod actuator;
pub mod cluster;
pub mod controller;
pub mod deployer;
pub mod health;
pub mod kinds;
#[cfg(feature = "testing")]
pub mod testing;

pub use actuator::{Actuator, ActuatorError, Outcome, codes_from_message};
pub use cluster::ClusterContext;
pub use controller::{ControllerConfig, ExtensionController, Mode};
pub use deployer::{DeployError, Deployer};
pub use kinds::{ExtensionResource, OscOutput};
pub use runtime::{LeaderElectionConfig, Metrics, Runner, RunnerConfig, RunnerError};
pub use runtime::{cli, metrics, runner};
