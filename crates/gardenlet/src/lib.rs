//! gardenlet: one per seed. Registers the Seed in the garden and drives every shoot scheduled
//! to it through task graphs (flows): reconcile, delete, hibernate, migrate, restore.

pub mod bastion;
pub mod components;
pub mod config;
pub mod flow;
pub mod installation;
pub mod managedseed;
pub mod metrics;
pub mod seed;
pub mod shoot;
pub mod shootstate_sync;
