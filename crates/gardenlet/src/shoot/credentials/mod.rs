//! The shoot's credentials: its control-plane secrets (planned by `pki`, persisted to the
//! ShootState before they reach the seed), their rotation, the token Secrets of a
//! service-account key rotation inside the shoot, and what is published about them in the
//! shoot's project namespace (CA bundle, client CA, SSH key pairs).

pub mod garden_ca;
pub mod garden_ssh;
pub mod rotation;
pub mod secrets;
pub mod service_account_tokens;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use secrets::SecretsError;

/// Where a shoot's credentials are published in the garden ([`garden_ca`], [`garden_ssh`]): the
/// shoot's project namespace, objects named after the shoot and owned by it.
pub struct Project<'a> {
    pub garden: &'a kube::Client,
    pub namespace: &'a str,
    pub shoot: &'a str,
    pub owner: Option<OwnerReference>,
}

impl std::fmt::Debug for Project<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Project")
            .field("namespace", &self.namespace)
            .field("shoot", &self.shoot)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl Project<'_> {
    /// The error of a failed request, `what` it was.
    pub fn err(&self, what: String) -> impl FnOnce(kube::Error) -> SecretsError + '_ {
        move |source| SecretsError::Kube { what, shoot: format!("{}/{}", self.namespace, self.shoot), source }
    }
}
