//! Admission for the garden: what users `kubectl apply` is defaulted and validated before it is
//! stored. The rules are pure functions of the object, the previous object, the requester and
//! the related objects passed in as values ([`shoot`], [`seed`], [`project`], [`cloudprofile`],
//! [`namespacedcloudprofile`], [`bastion`], [`managedseed`], [`managedseedset`], [`secretbinding`],
//! [`credentialsbinding`], [`workloadidentity`], [`exposureclass`], [`internalsecret`],
//! [`adminkubeconfigrequest`], for Shoots and Seeds [`extensions`], and for Pods the Pod Security
//! Standards [`podsecurity`]); every refusal is a list
//! of field errors ([`field`]). [`review`] decodes AdmissionReviews, looks the related objects up
//! ([`review::lookup`], a Shoot's profile reference by [`review::profiles`]) and applies the
//! rules; the webhook server ([`server`]) serves it over HTTPS with watch-fed caches behind the
//! lookup. [`common`], [`identity`] and [`conversion`] hold what several rules share.
//!
//! With the `testing` feature (tests and benchmarks only), `fixtures` has valid example objects
//! and `fuzz` the input generators and property of the fuzz test and benchmark.

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
pub mod extensions;
pub mod internalsecret;
pub mod managedseed;
pub mod managedseedset;
pub mod namespacedcloudprofile;
pub mod podsecurity;
pub mod project;
pub mod quota;
pub mod review;
pub mod secretbinding;
pub mod seed;
pub mod seedauth;
pub mod seedrestriction;
pub mod server;
pub mod workloadidentity;
