//! Admission for the garden: what users `kubectl apply` is defaulted and validated before it is
//! stored. The rules are pure functions of the object, the previous object, the requester and
//! the related objects passed in as values ([`shoot`], [`seed`], [`project`], [`cloudprofile`],
//! [`namespacedcloudprofile`], [`bastion`], [`managedseed`], [`managedseedset`], [`secretbinding`],
//! [`credentialsbinding`], [`workloadidentity`], [`exposureclass`], [`internalsecret`],
//! [`adminkubeconfigrequest`]); every refusal is a list of field errors
//! ([`field`]). The webhook server ([`server`]) decodes AdmissionReviews, looks the related
//! objects up in watch-fed caches and applies the rules.

pub mod common;
pub mod conversion;
pub mod field;
#[cfg(any(test, feature = "testing"))]
pub mod fixtures;
#[cfg(any(test, feature = "testing"))]
pub mod fuzz;
pub mod identity;
pub mod shoot;

pub use field::{ErrorList, FieldError, Path};
pub use identity::{Identities, UserInfo};
pub mod adminkubeconfigrequest;
pub mod bastion;
pub mod cloudprofile;
pub mod credentialsbinding;
pub mod exposureclass;
pub mod internalsecret;
pub mod managedseed;
pub mod managedseedset;
pub mod namespacedcloudprofile;
pub mod project;
pub mod quota;
pub mod review;
pub mod secretbinding;
pub mod seed;
pub mod server;
pub mod workloadidentity;
