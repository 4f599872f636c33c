//! Continuous backups of a shoot's etcd and the restore from them (GEP-6's etcd-backup-restore,
//! for the backup providers that publish a directory):
//!
//! * [`snapshotter`]: the sidecar in the etcd pod, storing full snapshots on a schedule and delta
//!   snapshots of every revision in between into the shoot's backup entry, collecting garbage,
//!   and serving metrics and a readiness signal;
//! * [`defrag`]: etcd's scheduled defragmentation, in the sidecar and, for an etcd without
//!   backups, as the sidecar's only job;
//! * [`restore`]: the init container that rebuilds a missing data directory from them;
//! * [`join`]: the init step of a multi-member etcd's members: the first bootstraps, the others
//!   (and any member that lost its data) join the running cluster as learners and are promoted;
//! * [`chain`], [`names`], [`delta`], [`schedule`]: the decisions and formats, as pure functions;
//! * [`gateway`], [`members`], [`snapshot`], [`store`]: etcd's v3 API over its HTTP gateway (its
//!   cluster membership too), full snapshots, and the directory store.

pub mod chain;
pub mod defrag;
pub mod delta;
pub mod gateway;
pub mod join;
pub mod members;
pub mod metrics;
pub mod names;
pub mod restore;
pub mod schedule;
pub mod snapshot;
pub mod snapshotter;
pub mod store;
