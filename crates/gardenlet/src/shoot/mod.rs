//! The shoot controller: turns each Shoot scheduled to this seed into a control plane plus
//! extension objects, reports progress on the Shoot, and tears everything down again.

pub mod backup;
pub mod care;
pub mod checks;
pub mod client;
pub mod context;
pub mod controller;
pub mod decide;
pub mod delete;
pub mod docs;
pub mod etcd_snapshot;
pub mod extensions;
pub mod garden_ca;
pub mod garden_ssh;
pub mod health;
pub mod hibernate;
pub mod migrate;
pub mod reconcile;
pub mod references;
pub mod rotation;
pub mod secrets;
pub mod service_account_tokens;
pub mod status;
pub mod system;
pub mod tasks;
pub mod values;
