//! The shoot controller: turns each Shoot scheduled to this seed into a control plane plus
//! extension objects, reports progress on the Shoot, and tears everything down again.
//!
//! Grouped by concern, lower groups never importing higher ones:
//!
//! | module | what it holds |
//! |---|---|
//! | [`caches`] | watch-fed caches of the garden objects operations read and of this seed's Shoots |
//! | [`status`] | the whole status document of a Shoot (lastOperation, conditions, credentials, addresses) and its single writer |
//! | [`operation`] | what one operation works with: context, values, references, clients, the apply/wait helpers |
//! | [`backup`] | where etcd backups live, the final snapshot of a migration |
//! | [`credentials`] | the shoot's secrets, their rotation, what is published about them in the garden |
//! | [`objects`] | builders of the extension objects and of the objects applied to the shoot's own API |
//! | [`health`] | the health checks and the care controller that refreshes the conditions |
//! | [`flows`] | the task graphs: reconcile (by area), hibernate, migrate, delete; their generated docs |
//! | [`operate`] | one operation from start to end: prepare, run its flow, record the outcome |
//! | [`controller`] | watches Shoots, decides what each needs and dispatches to [`operate`] |

pub mod backup;
pub mod caches;
pub mod controller;
pub mod credentials;
pub mod flows;
pub mod health;
pub mod objects;
pub mod operate;
pub mod operation;
pub mod status;
