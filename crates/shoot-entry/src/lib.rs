//! The seed's one entry point for every shoot (GEP-8): haproxy listens on one address, reads the
//! TLS server name (SNI) of each connection without terminating TLS, and forwards the bytes to
//! the kube-apiserver of the shoot that name belongs to: port 443 to the API server, port 8132 to
//! the tunnel server beside it (`docs/networking.md`). A name it has no route for is refused.
//!
//! gardenlet publishes each shoot's names and kube-apiserver address in one ConfigMap
//! ([`routes`]); `shoot-entry sync`, beside haproxy in the same Pod, keeps haproxy's map equal to
//! it through haproxy's Runtime API ([`haproxy`], [`sync`]), so adding a shoot reloads nothing
//! and cuts no open connection.

pub mod haproxy;
pub mod routes;
pub mod sync;
