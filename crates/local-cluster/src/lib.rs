//! The local garden's cluster: a real single-node Kubernetes made of upstream binaries (etcd,
//! kube-apiserver, kube-controller-manager, kube-scheduler, containerd, kubelet, kube-proxy)
//! running as host processes, plus the project's own add-ons (cluster DNS, host-path storage).
//!
//! * [`up`] brings it up (idempotent; repairs what died) by following a table of components
//!   (spec, address, readiness probe) in one loop, [`down`] removes every trace; [`wait`] is
//!   its readiness wait;
//! * [`render`] and [`pki`] produce its configuration (command lines, and files serialized
//!   from typed structs: TOML for containerd, YAML for the kubelet and kube-proxy);
//!   [`settings`] and [`layout`] fix its addresses and paths; [`host`] knows what it changes on
//!   the host and puts it back; [`process`] starts, finds and stops its processes by PID;
//! * [`registry`] runs the image registry machines pull from (a read-only reader on the node
//!   address, a writer with a password on loopback), fills it through the node's containerd and
//!   checks it through its HTTPS API (hyper-util's client, trusting the cluster CA), and
//!   [`images`] imports the image archives into the node's containerd;
//! * [`addons`] runs DNS and storage; [`manifests`] are the objects `up` applies;
//! * [`dnsclient`] asks the cluster DNS a question (readiness, tests); [`error`] says what
//!   failed and, where a user can act, what to do.

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
pub use runtime::cli::report;
