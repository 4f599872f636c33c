//! The public-key infrastructure of a shoot control plane: CAs, certificates, kubeconfigs,
//! service-account keys, opaque random values and bootstrap tokens.
//!
//! Everything here is pure: the crate turns declarative [`SecretConfig`]s plus the secrets
//! that already exist into the secrets that should exist ([`manager::plan`]); gardenlet reads
//! the existing Kubernetes Secrets, calls the crate and writes the result. No module talks to a
//! cluster.
//!
//! The flow, module by module:
//! * [`config`]: the declarative types and their validation;
//! * [`shoot_set`]: the configs for one shoot (CAs, etcd, front proxy, kubelet client,
//!   kube-apiserver serving certificate, service-account key, component kubeconfigs);
//! * [`manager`]: decides per secret whether to create, keep or re-issue it;
//! * [`rotation`]: the two phases of a CA rotation as functions over the secret set;
//! * [`shootstate`]: export to and import from the ShootState form, for control-plane migration;
//! * [`admin_kubeconfig`]: short-lived admin kubeconfigs for a requesting user;
//! * [`bootstrap`]: bootstrap tokens, their Secret, the CA pin and the `cluster-info` kubeconfig;
//! * [`kubeconfig`]: kubeconfig rendering;
//! * `keys`, `issue` and `inspect`: key generation, certificate issuance and reading existing
//!   certificates.
//!
//! Private keys never appear in `Debug` output or in errors.

pub mod admin_kubeconfig;
pub mod bootstrap;
pub mod config;
mod error;
mod inspect;
mod issue;
mod keys;
pub mod kubeconfig;
pub mod manager;
pub mod rotation;
mod secret;
pub mod shoot_set;
pub mod shootstate;

pub use config::{
    CaConfig, CertificateConfig, KeyAlgorithm, KubeconfigSpec, RandomConfig, SecretConfig, ServiceAccountKeyConfig,
    SshKeypairConfig, Usage,
};
pub use error::Error;
pub use manager::{Action, Plan};
pub use secret::{Secret, SecretSet, data_keys, labels, secret_types};
