//! API types of the system: the `core.gardener.cloud`, `seedmanagement.gardener.cloud`,
//! `operations.gardener.cloud`, `authentication.gardener.cloud`, `security.gardener.cloud` and
//! `extensions.gardener.cloud` groups as Rust types with generated CRDs, plus the constants and
//! pure helpers every component shares.
//!
//! This crate does no client I/O.

// kube's `printcolumn(name = .., type_ = ..)` attributes repeat keys, which clippy's
// `duplicated_attributes` lint mistakes for duplicates.
#![allow(clippy::duplicated_attributes)]

pub mod authentication;
pub mod common;
pub mod core;
pub mod crds;
pub mod extensions;
pub mod helpers;
pub mod opaque;
pub mod operations;
pub mod security;
pub mod seedmanagement;

pub use opaque::{AnyJson, Opaque};
