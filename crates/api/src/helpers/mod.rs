//! Constants and pure helpers shared by every component.

pub mod cloudprofile_merge;
pub mod cloudprofile_ref;
pub mod conditions;
pub mod constants;
pub mod duration;
pub mod encryption;
pub mod extension_operation;
pub mod maintenance;
pub mod names;
pub mod quantity;
pub mod redact;
pub mod rotation;
pub mod seed_identity;
pub mod seed_labels;
pub mod shoot_operation;
pub mod versions;

pub use names::{TechnicalId, project_namespace};
