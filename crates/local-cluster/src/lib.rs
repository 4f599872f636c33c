//! The local garden's cluster: a real single-node Kubernetes made of upstream binaries (etcd,
//! kube-apiserver, kube-controller-manager, kube-scheduler, containerd, kubelet, kube-proxy)
//! running as host processes, plus the project's own add-ons (cluster DNS, host-path storage).
//!
//! * [`up`] brings it up (idempotent; repairs what died), [`down`] removes every trace;
//! * [`render`] and [`pki`] produce its configuration; [`host`] knows what it changes on the
//!   host and puts it back; [`process`] starts, finds and stops its processes by PID;
//! * [`registry`] runs the image registry machines pull from and fills it;
//! * [`addons`] runs DNS and storage; [`manifests`] are the objects `up` applies;
//! * [`dnsclient`] asks the cluster DNS a question (readiness, tests).

pub mod addons;
pub mod dnsclient;
pub mod down;
pub mod error;
pub mod host;
pub mod images;
pub mod layout;
pub mod manifests;
pub mod pki;
pub mod process;
pub mod registry;
pub mod render;
pub mod settings;
pub mod up;
pub mod wait;

pub use error::{Error, Result};
pub use layout::Layout;

/// An error and its causes, one per line, for people.
pub use extension_sdk::cli::report;
