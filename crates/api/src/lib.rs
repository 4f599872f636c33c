//! API types of the system: the `core.gardener.cloud`, `seedmanagement.gardener.cloud`,
//! `operations.gardener.cloud`, `authentication.gardener.cloud`, `security.gardener.cloud` and
//! `extensions.gardener.cloud` groups as Rust types with generated CRDs, plus the constants and
//! pure helpers every component shares.
//!
//! This crate does no client I/O.
//!
//! Like the reference API's `omitempty`, an absent optional field is not written: every struct
//! with `Option` fields carries `#[serde_with::skip_serializing_none]` (above its `derive`), which
//! gives each of them `skip_serializing_if = "Option::is_none"`; a missing `Option` field reads as
//! `None` without `#[serde(default)]`. Empty lists and maps are skipped field by field
//! (`skip_serializing_if = "Vec::is_empty"`, `"BTreeMap::is_empty"`).

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
