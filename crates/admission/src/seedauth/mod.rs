//! Gardener's SeedAuthorizer for this garden: the garden's kube-apiserver asks it, as its last
//! authorizer (`--authorization-mode=Node,RBAC,Webhook`), whether a gardenlet authenticated as
//! a seed identity (`gardener.cloud:system:seed:<seed>` in `gardener.cloud:system:seeds`,
//! [`api::helpers::seed_identity`]) may do what it asks. The answer is *allow* for what that
//! seed's gardenlet needs on objects related to the seed, otherwise *no opinion*.
//!
//! [`authorizer`] decides (pure), following the relations of [`relations`] through the
//! read-only [`graph::SeedGraph`]; [`sar`] speaks SubjectAccessReview. The server routes
//! `POST /webhooks/auth/seed` to it ([`crate::server::serve`]). The create side, where the
//! object does not exist yet, is SeedRestriction ([`crate::seedrestriction`]).

pub mod authorizer;
#[cfg(any(test, feature = "testing"))]
pub mod fixtures;
pub mod graph;
pub mod relations;
pub mod sar;
#[cfg(test)]
mod tests;

pub use authorizer::{Attributes, Decision, decide};
pub use graph::{EmptyGraph, SeedGraph, StaticGraph};

/// The path of the authorization webhook on the admission server.
pub const PATH: &str = "/webhooks/auth/seed";
