//! The task graphs of shoot operations: reconcile (split by area), hibernate, migrate,
//! delete and force-delete, and the Markdown generated from them (`docs/gardenlet-flows.md`).

pub mod delete;
pub mod docs;
pub mod force_delete;
pub mod hibernate;
pub mod migrate;
pub mod reconcile;
