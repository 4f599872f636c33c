//! Pure builders for the objects of a shoot's control plane in its seed namespace. Each takes
//! plain values and returns fully specified objects for server-side apply; nothing here talks
//! to a cluster.

pub mod availability;
pub mod cluster_dns;
pub mod common;
pub mod etcd;
pub mod etcd_backup;
pub mod etcd_backup_settings;
pub mod konnectivity;
pub mod kube_apiserver;
pub mod kube_controller_manager;
pub mod kube_proxy;
pub mod kube_scheduler;
pub mod security;

pub use common::{ApiServerSettings, ControlPlaneValues, Images};

#[cfg(test)]
mod tests;
