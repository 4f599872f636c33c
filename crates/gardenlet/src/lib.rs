//! gardenlet: one per seed. Registers the Seed in the garden and drives every shoot scheduled
//! to it through task graphs (flows): reconcile, delete, hibernate, migrate, restore.
//!
//! | module | what it is for |
//! |---|---|
//! | [`config`] | the configuration file |
//! | [`bootstrap`] | the garden identity by CSR: a seed client certificate, kept in a Secret and renewed |
//! | [`seed`] | the seed controller: the Seed's registration, status and heartbeat |
//! | [`shoot`] | the shoot controller and everything an operation on a shoot needs (see its map) |
//! | [`flow`] | the flow engine: a directed acyclic graph of named tasks |
//! | [`components`] | pure builders of a shoot's control-plane objects in its seed namespace |
//! | [`shootstate_sync`] | copies extension objects' state into the ShootState, for migration |
//! | [`installation`] | the ControllerInstallation controller: extension controllers in the seed |
//! | [`managedseed`] | the ManagedSeed controller: a shoot registered as a seed of its own |
//! | [`bastion`] | the Bastion controller: SSH access to a shoot's nodes |
//! | [`metrics`] | gardenlet's metrics |

pub mod backupentry;
pub mod bastion;
pub mod bootstrap;
pub mod components;
pub mod config;
pub mod flow;
pub mod installation;
pub mod managedseed;
pub mod metrics;
pub mod seed;
pub mod shoot;
pub mod shootstate_sync;
